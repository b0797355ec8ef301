package remotewrite

import (
	"bytes"
	"context"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	promchunkenc "github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/strata-db/strata/internal/head"
	"github.com/strata-db/strata/internal/storage/storagetest"
	"github.com/strata-db/strata/internal/vfs/faultfs"
)

func newTestHead(t testing.TB) *head.Head {
	t.Helper()
	return newTestHeadLimited(t, 0)
}

// newTestHeadLimited returns a head in a temporary directory that creates
// at most maxSeries series (0: no limit).
func newTestHeadLimited(t testing.TB, maxSeries int) *head.Head {
	t.Helper()
	opts := head.DefaultOptions()
	opts.WALDir = t.TempDir()
	opts.Stripes = 16
	opts.MaxSeries = maxSeries
	h, err := head.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func ts(lbls []string, samples ...prompb.Sample) prompb.TimeSeries {
	var ls []prompb.Label
	for i := 0; i < len(lbls); i += 2 {
		ls = append(ls, prompb.Label{Name: lbls[i], Value: lbls[i+1]})
	}
	return prompb.TimeSeries{Labels: ls, Samples: samples}
}

func encode(t *testing.T, req *prompb.WriteRequest) []byte {
	t.Helper()
	pb, err := req.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return snappy.Encode(nil, pb)
}

func post(h http.Handler, body []byte, header map[string]string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/api/v1/write", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/x-protobuf")
	r.Header.Set("Content-Encoding", "snappy")
	r.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	for k, v := range header {
		if v == "" {
			r.Header.Del(k)
		} else {
			r.Header.Set(k, v)
		}
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// stored returns the number of samples, floats and histograms, of each
// series in the head.
func stored(t *testing.T, h *head.Head) map[string]int {
	t.Helper()
	q, _ := h.Querier(math.MinInt64, math.MaxInt64)
	ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
	out := map[string]int{}
	for ss.Next() {
		it := ss.At().Iterator(nil)
		for it.Next() != promchunkenc.ValNone {
			out[ss.At().Labels().String()]++
		}
	}
	return out
}

func TestWriteNotReadyIsRetryable(t *testing.T) {
	body := encode(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{ts([]string{"__name__", "m"}, prompb.Sample{Timestamp: 1, Value: 1})}})
	w := post(NewHandler(storagetest.NotReady{}, DefaultOptions()), body, nil)
	if w.Code != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503; body %q", w.Code, w.Body.String())
	}
}

// TestEmptyLabelValuesDropped checks that a label with an empty value is
// the same series as one without the label.
func TestEmptyLabelValuesDropped(t *testing.T) {
	hd := newTestHead(t)
	body := encode(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
		ts([]string{"__name__", "m", "a", ""}, prompb.Sample{Timestamp: 1, Value: 1}),
		ts([]string{"__name__", "m"}, prompb.Sample{Timestamp: 2, Value: 2}),
	}})
	if w := post(NewHandler(hd, DefaultOptions()), body, nil); w.Code != http.StatusNoContent {
		t.Fatalf("status %d: %s", w.Code, w.Body.String())
	}
	if got := stored(t, hd); len(got) != 1 || got[`{__name__="m"}`] != 2 {
		t.Fatalf("stored %v", got)
	}
}

// TestUnsortedLabels checks that labels sent out of order make the same
// series as sorted ones.
func TestUnsortedLabels(t *testing.T) {
	hd := newTestHead(t)
	body := encode(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
		ts([]string{"job", "j", "__name__", "m"}, prompb.Sample{Timestamp: 1, Value: 1}),
		ts([]string{"__name__", "m", "job", "j"}, prompb.Sample{Timestamp: 2, Value: 2}),
	}})
	if w := post(NewHandler(hd, DefaultOptions()), body, nil); w.Code != http.StatusNoContent {
		t.Fatalf("status %d: %s", w.Code, w.Body.String())
	}
	if got := stored(t, hd); got[`{__name__="m", job="j"}`] != 2 {
		t.Fatalf("stored %v", got)
	}
}

// TestDiskFull checks that a write the WAL cannot take gets a retryable
// 500, stores nothing, and that writes succeed again once space returns,
// with exactly the acknowledged samples surviving a restart.
func TestDiskFull(t *testing.T) {
	dir := t.TempDir()
	faults := faultfs.New(nil)
	opts := head.DefaultOptions()
	opts.WALDir = dir
	opts.Stripes = 16
	opts.WAL.FS = faults
	opts.CheckpointOnClose = false
	hd, err := head.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	h := NewHandler(hd, DefaultOptions())
	req := func(ts int64) []byte {
		return encode(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
			{Labels: []prompb.Label{{Name: "__name__", Value: "m"}}, Samples: []prompb.Sample{{Timestamp: ts, Value: 1}}},
			{Labels: []prompb.Label{{Name: "__name__", Value: "new_during_outage"}}, Samples: []prompb.Sample{{Timestamp: ts, Value: 1}}},
		}})
	}
	if w := post(h, req(1), nil); w.Code != http.StatusNoContent {
		t.Fatalf("status %d: %s", w.Code, w.Body.String())
	}

	faults.FailWritesPartially(syscall.ENOSPC)
	for _, ts := range []int64{2, 3} {
		w := post(h, req(ts), nil)
		if w.Code != http.StatusInternalServerError || !strings.Contains(w.Body.String(), "no space left") {
			t.Fatalf("disk full: status %d, body %q; want 500 naming the cause", w.Code, w.Body.String())
		}
	}
	if got := stored(t, hd); got[`{__name__="m"}`] != 1 || len(got) != 2 {
		t.Fatalf("samples of failed writes are visible: %v", got)
	}

	faults.Heal()
	if w := post(h, req(4), nil); w.Code != http.StatusNoContent {
		t.Fatalf("after space returned: status %d: %s", w.Code, w.Body.String())
	}
	want := map[string]int{`{__name__="m"}`: 2, `{__name__="new_during_outage"}`: 2}
	if got := stored(t, hd); !maps.Equal(got, want) {
		t.Fatalf("stored %v, want %v", got, want)
	}
	if err := hd.Close(); err != nil {
		t.Fatal(err)
	}
	opts.WAL.FS = nil
	hd2, err := head.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer hd2.Close()
	if got := stored(t, hd2); !maps.Equal(got, want) {
		t.Fatalf("after restart stored %v, want %v", got, want)
	}
}

// TestRateLimit checks that requests over the ingestion rate limit get 429
// with Retry-After, and that nothing of them is stored.
func TestRateLimit(t *testing.T) {
	hd := newTestHead(t)
	opts := DefaultOptions()
	opts.Limits.MaxSamplesPerSecond = 3
	h := NewHandler(hd, opts)
	req := func(ts int64) []byte {
		return encode(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
			{Labels: []prompb.Label{{Name: "__name__", Value: "m"}}, Samples: []prompb.Sample{{Timestamp: ts, Value: 1}, {Timestamp: ts + 1, Value: 1}}},
		}})
	}
	if w := post(h, req(10), nil); w.Code != http.StatusNoContent {
		t.Fatalf("first request: %d %s", w.Code, w.Body.String())
	}
	w := post(h, req(20), nil)
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), "max-samples-per-second") {
		t.Fatalf("second request: %d %q %s; want 429 with Retry-After naming the limit", w.Code, w.Header().Get("Retry-After"), w.Body.String())
	}
	if got := stored(t, hd)[`{__name__="m"}`]; got != 2 {
		t.Fatalf("%d samples stored, want the first request's 2", got)
	}
}
