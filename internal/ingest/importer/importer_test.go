package importer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"

	"github.com/strata-db/strata/internal/ingest"
	"github.com/strata-db/strata/internal/storage"
)

// memStore keeps what is committed, as lines, and refuses samples older
// than a series' newest, as the head does.
type memStore struct {
	mu     sync.Mutex
	lines  []string
	newest map[string]int64
}

func (s *memStore) Appender(context.Context) storage.Appender { return &memApp{s: s} }

func (s *memStore) sorted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.lines)
	slices.Sort(out)
	return out
}

type memApp struct {
	s       *memStore
	pending []string
	newest  map[string]int64
}

func (a *memApp) Append(_ storage.SeriesRef, lset labels.Labels, smp storage.Sample) (storage.SeriesRef, error) {
	a.s.mu.Lock()
	defer a.s.mu.Unlock()
	if a.newest == nil {
		a.newest = map[string]int64{}
	}
	k := lset.String()
	last, ok := a.newest[k]
	if !ok {
		last, ok = a.s.newest[k]
	}
	if ok && smp.T <= last {
		return 0, storage.ErrOutOfOrderSample
	}
	a.newest[k] = smp.T
	v := fmt.Sprint(smp.V)
	if value.IsStaleNaN(smp.V) {
		v = "stale"
	}
	a.pending = append(a.pending, fmt.Sprintf("%s %d %s", k, smp.T, v))
	return 1, nil
}

func (a *memApp) AppendExemplar(ref storage.SeriesRef, _ labels.Labels, _ exemplar.Exemplar) (storage.SeriesRef, error) {
	return ref, nil
}
func (a *memApp) SetMetadata(string, storage.Metadata) error { return nil }
func (a *memApp) Commit() error {
	a.s.mu.Lock()
	defer a.s.mu.Unlock()
	if a.s.newest == nil {
		a.s.newest = map[string]int64{}
	}
	for k, t := range a.newest {
		a.s.newest[k] = t
	}
	a.s.lines = append(a.s.lines, a.pending...)
	a.pending, a.newest = nil, nil
	return nil
}
func (a *memApp) Rollback() error { a.pending, a.newest = nil, nil; return nil }

func send(h http.Handler, path, body, encoding string) *httptest.ResponseRecorder {
	b := []byte(body)
	if encoding == "gzip" {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(b)
		zw.Close()
		b = buf.Bytes()
	}
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(b))
	if encoding != "" {
		req.Header.Set("Content-Encoding", encoding)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestJSONLines(t *testing.T) {
	for _, c := range []struct {
		name     string
		body     string
		encoding string
		status   int
		stored   []string
		msg      []string // in the answer
	}{
		{
			name: "good",
			body: `{"metric":{"__name__":"up","job":"a"},"values":[1,0,null,"NaN","Infinity","-Infinity"],"timestamps":[1000,2000,3000,4000,5000,6000]}
{"metric":{"__name__":"temp","empty":""},"values":[21.5],"timestamps":[1000]}

`,
			status: 204,
			stored: []string{`{__name__="temp"} 1000 21.5`, `{__name__="up", job="a"} 1000 1`, `{__name__="up", job="a"} 2000 0`, `{__name__="up", job="a"} 3000 stale`,
				`{__name__="up", job="a"} 4000 NaN`, `{__name__="up", job="a"} 5000 +Inf`, `{__name__="up", job="a"} 6000 -Inf`},
		},
		{name: "gzip", body: `{"metric":{"__name__":"up"},"values":[1],"timestamps":[1000]}`, encoding: "gzip", status: 204, stored: []string{`{__name__="up"} 1000 1`}},
		{
			name: "bad lines kept out, the rest stored",
			body: `{"metric":{"__name__":"up"},"values":[1],"timestamps":[1000]}
{"metric":{"__name__":"up"},"values":[1,2],"timestamps":[1000]}
not json
{"metric":{},"values":[1],"timestamps":[1000]}
{"metric":{"job":"x"},"values":[1],"timestamps":[1000]}
{"metric":{"__name__":"up"},"values":["wat"],"timestamps":[2000]}
{"metric":{"__name__":"up"},"values":[5],"timestamps":[500]}
{"metric":{"__name__":"up"},"values":[3],"timestamps":[3000]}`,
			status: 400,
			stored: []string{`{__name__="up"} 1000 1`, `{__name__="up"} 3000 3`},
			msg:    []string{"line 2: `timestamps` array size", "line 3: cannot parse JSON", "line 4: missing `metric`", "line 5: invalid labels: no metric name", `line 6: cannot parse JSON line: unsupported value "wat"`, "line 7: series {__name__=\"up\"}: 1 of 1 samples refused: out of order"},
		},
		{name: "too long", body: `{"metric":{"__name__":"up"},"values":[1],"timestamps":[1000]}` + "\n" + strings.Repeat("x", 200), status: 400, stored: []string{`{__name__="up"} 1000 1`}, msg: []string{"line 2 is longer than the limit of 100 bytes"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := &memStore{}
			opts := DefaultOptions()
			opts.MaxLineBytes = 100
			if c.name == "good" {
				opts.MaxLineBytes = 1000
			}
			rec := send(New(st, opts).JSONLines(), "/api/v1/import", c.body, c.encoding)
			if rec.Code != c.status {
				t.Errorf("status %d, want %d: %s", rec.Code, c.status, rec.Body)
			}
			want := slices.Clone(c.stored)
			slices.Sort(want)
			if got := st.sorted(); !slices.Equal(got, want) {
				t.Errorf("stored\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			for _, m := range c.msg {
				if !strings.Contains(rec.Body.String(), m) {
					t.Errorf("answer %q does not say %q", rec.Body, m)
				}
			}
		})
	}
}

func TestText(t *testing.T) {
	st := &memStore{}
	h := New(st, DefaultOptions()).Text()
	body := `# HELP http_requests_total Requests.
# TYPE http_requests_total counter
http_requests_total{code="200"} 1027 1395066363000
http_requests_total{code="400"} 3
bad line {
up 1 1395066363000
`
	rec := send(h, "/api/v1/import/prometheus?timestamp=1395066364000", body, "")
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "line 5:") {
		t.Errorf("status %d %q, want a 400 naming line 5", rec.Code, rec.Body)
	}
	want := []string{`{__name__="up"} 1395066363000 1`, `{__name__="http_requests_total", code="200"} 1395066363000 1027`, `{__name__="http_requests_total", code="400"} 1395066364000 3`}
	slices.Sort(want)
	if got := st.sorted(); !slices.Equal(got, want) {
		t.Errorf("stored\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if rec := send(h, "/api/v1/import/prometheus?timestamp=soon", "up 1\n", ""); rec.Code != http.StatusBadRequest {
		t.Errorf("bad timestamp parameter: status %d", rec.Code)
	}
}

// FuzzImport sends arbitrary bodies to both import formats: an answer of
// 204 or 400, never a panic, and only finite timestamps stored.
//
//	go test ./internal/ingest/importer -run NONE -fuzz FuzzImport -fuzztime 1m
func FuzzImport(f *testing.F) {
	f.Add([]byte(`{"metric":{"__name__":"up","job":"a"},"values":[1,null,"NaN"],"timestamps":[1000,2000,3000]}`))
	f.Add([]byte("# TYPE x counter\nx{a=\"b\"} 1 1000\nx 2\n"))
	f.Add([]byte(`{"metric":{"__name__":"up"},"values":[1e400],"timestamps":[1]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		h := New(&memStore{}, DefaultOptions())
		for _, hh := range []http.Handler{h.JSONLines(), h.Text()} {
			rec := send(hh, "/api/v1/import", string(body), "")
			if rec.Code != http.StatusNoContent && rec.Code != http.StatusBadRequest {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
		}
	})
}

// compacting refuses the first sample at t with ErrCompacting, as the
// store does while that range is written to a block.
type compacting struct {
	memStore
	t       int64
	refused bool
}

func (c *compacting) Appender(ctx context.Context) storage.Appender {
	return &compactingApp{Appender: c.memStore.Appender(ctx), c: c}
}

type compactingApp struct {
	storage.Appender
	c *compacting
}

func (a *compactingApp) Append(ref storage.SeriesRef, lset labels.Labels, s storage.Sample) (storage.SeriesRef, error) {
	if s.T == a.c.t && !a.c.refused {
		a.c.refused = true
		return 0, storage.ErrCompacting
	}
	return a.Appender.Append(ref, lset, s)
}

// TestImportWaitsForCompaction retries a sample whose range is being
// written to a block, rather than fail the import.
func TestImportWaitsForCompaction(t *testing.T) {
	st := &compacting{t: 2000}
	rec := send(New(st, DefaultOptions()).JSONLines(), "/api/v1/import", `{"metric":{"__name__":"up"},"values":[1,2,3],"timestamps":[1000,2000,3000]}`, "")
	if rec.Code != http.StatusNoContent || !st.refused {
		t.Fatalf("status %d (%s), refused once: %v", rec.Code, rec.Body, st.refused)
	}
	if got := st.sorted(); len(got) != 3 {
		t.Errorf("stored %v, want 3 samples", got)
	}
}

// TestImportRateLimit stops at the line over the rate limit with a 429,
// keeping the lines before it.
func TestImportRateLimit(t *testing.T) {
	st := &memStore{}
	opts := DefaultOptions()
	opts.RateLimiter = ingest.NewRateLimiter(0.001) // a burst of one sample
	body := `{"metric":{"__name__":"a"},"values":[1],"timestamps":[1000]}
{"metric":{"__name__":"b"},"values":[1],"timestamps":[1000]}`
	rec := send(New(st, opts).JSONLines(), "/api/v1/import", body, "")
	if rec.Code != http.StatusTooManyRequests || !strings.Contains(rec.Body.String(), "line 2:") {
		t.Errorf("status %d %q, want a 429 at line 2", rec.Code, rec.Body)
	}
	if got := st.sorted(); !slices.Equal(got, []string{`{__name__="a"} 1000 1`}) {
		t.Errorf("stored %v, want line 1's sample", got)
	}
}

// failingCommits is a store whose commits fail; it counts what its
// appenders are told.
type failingCommits struct {
	mu                 sync.Mutex
	commits, rollbacks int
	afterCommit        int // Rollbacks of an appender already committed
}

func (f *failingCommits) Appender(context.Context) storage.Appender { return &failingApp{f: f} }

type failingApp struct {
	f    *failingCommits
	done bool
}

func (a *failingApp) Append(storage.SeriesRef, labels.Labels, storage.Sample) (storage.SeriesRef, error) {
	return 1, nil
}
func (a *failingApp) AppendExemplar(ref storage.SeriesRef, _ labels.Labels, _ exemplar.Exemplar) (storage.SeriesRef, error) {
	return ref, nil
}
func (a *failingApp) SetMetadata(string, storage.Metadata) error { return nil }
func (a *failingApp) Commit() error {
	a.f.mu.Lock()
	defer a.f.mu.Unlock()
	a.f.commits++
	a.done = true
	return errors.New("disk full")
}
func (a *failingApp) Rollback() error {
	a.f.mu.Lock()
	defer a.f.mu.Unlock()
	a.f.rollbacks++
	if a.done {
		a.f.afterCommit++
	}
	return nil
}

// TestImportCommitFails answers a failed commit with a 503 saying from
// which line nothing was stored, and never rolls back an appender it
// committed.
func TestImportCommitFails(t *testing.T) {
	st := &failingCommits{}
	rec := send(New(st, DefaultOptions()).JSONLines(), "/api/v1/import", `{"metric":{"__name__":"a"},"values":[1],"timestamps":[1000]}`, "")
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "from 1 on") {
		t.Errorf("status %d %q, want a 503 from line 1", rec.Code, rec.Body)
	}
	if st.commits != 1 || st.afterCommit != 0 {
		t.Errorf("%d commits, %d rollbacks after a commit", st.commits, st.afterCommit)
	}
}

// FuzzReaders feeds the readers of backfill input anything: an error or
// samples, never a panic, and as many timestamps as values.
func FuzzReaders(f *testing.F) {
	f.Add([]byte(`{"metric":{"__name__":"up","job":"a"},"values":[1,null,"NaN"],"timestamps":[1000,2000,3000]}`))
	f.Add([]byte("# TYPE x gauge\nx{a=\"b\"} 1 1000.5\n# EOF\n"))
	f.Add([]byte("# TYPE x counter\nx_total 1 1\nx_created 1 1\n# EOF\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		check := func(lset labels.Labels, ts []int64, vs []float64) error {
			if len(ts) != len(vs) {
				t.Fatalf("%s: %d timestamps, %d values", lset, len(ts), len(vs))
			}
			return nil
		}
		_ = ReadOpenMetrics(body, check)
		_ = ReadJSONLines(bytes.NewReader(body), 1<<20, check)
	})
}
