package run

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/prompb"

	"github.com/strata-db/strata/internal/bench/client"
	"github.com/strata-db/strata/internal/bench/report"
	"github.com/strata-db/strata/internal/bench/workload"
)

// orderCheckingReceiver is a remote-write 1.0 receiver that rejects, as
// real servers do, a sample not newer than the last one of its series.
type orderCheckingReceiver struct {
	mu      sync.Mutex
	last    map[string]int64
	samples int64
}

func (o *orderCheckingReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	raw, err := snappy.Decode(nil, body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req prompb.WriteRequest
	if err := req.Unmarshal(raw); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, ts := range req.Timeseries {
		var key strings.Builder
		for _, l := range ts.Labels {
			key.WriteString(l.Name + "=" + l.Value + ",")
		}
		for _, s := range ts.Samples {
			if prev, ok := o.last[key.String()]; ok && s.Timestamp <= prev {
				http.Error(w, fmt.Sprintf("out of order sample for %s: %d after %d", key.String(), s.Timestamp, prev), http.StatusBadRequest)
				return
			}
			o.last[key.String()] = s.Timestamp
			o.samples++
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

func fakeServer(t *testing.T, h http.Handler) *server {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return &server{name: "fake", writeURL: ts.URL, queryBase: ts.URL, http: client.NewHTTPClient(conns)}
}

// TestSendInOrder sends pre-encoded phases and an on-demand load with
// many senders and churn through the real send path, to a receiver that
// rejects any out-of-order sample.
func TestSendInOrder(t *testing.T) {
	o := workload.DefaultOptions()
	o.Series = 600
	o.SeriesPerRequest = 50
	o.Senders = 5
	o.Churn, o.ChurnEvery = 0.2, 3
	sched, err := workload.NewSchedule(o)
	if err != nil {
		t.Fatal(err)
	}
	recv := &orderCheckingReceiver{last: map[string]int64{}}
	srv := fakeServer(t, recv)
	w := newWriter(t, srv.writeURL, workload.V1, srv.http)
	lim := newLimiter(o.Senders, sched)

	in := &Ingest{sched: sched, quota: []int64{-1, -1, -1, -1, -1}}
	var total tally
	for r0 := int64(0); r0 < 9; r0 += 3 {
		pools, _, err := encodePool(context.Background(), sched, workload.V1, in.spans(r0, r0+3))
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := send(context.Background(), srv, w, newPoolSource(pools), lim, o.Senders, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		total.merge(&got)
	}
	if total.failed() != 0 {
		t.Fatalf("errors: %v", total.errorSummary())
	}
	if want := int64(9 * o.Series); total.samplesSent != want || total.samplesAccepted != want || recv.samples != want {
		t.Fatalf("sent %d, accepted %d, received %d; want %d", total.samplesSent, total.samplesAccepted, recv.samples, want)
	}

	// An on-demand load of a second data set, on a fresh receiver.
	recv2 := &orderCheckingReceiver{last: map[string]int64{}}
	srv2 := fakeServer(t, recv2)
	o.Churn = 0
	sched2, _ := workload.NewSchedule(o)
	got, _, err := send(context.Background(), srv2, newWriter(t, srv2.writeURL, workload.V1, srv2.http),
		newEncodeSource(sched2, workload.V1, 4), newLimiter(o.Senders, sched2), o.Senders, time.Time{})
	if err != nil || got.failed() != 0 || got.samplesAccepted != int64(4*o.Series) {
		t.Fatalf("load: %v, %v, accepted %d", err, got.errorSummary(), got.samplesAccepted)
	}
}

func TestSendCountsErrors(t *testing.T) {
	srv := fakeServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "unsupported", http.StatusUnsupportedMediaType)
	}))
	o := workload.DefaultOptions()
	o.Series, o.SeriesPerRequest, o.Senders = 100, 10, 2
	sched, _ := workload.NewSchedule(o)
	got, _, err := send(context.Background(), srv, newWriter(t, srv.writeURL, workload.V2, srv.http),
		newEncodeSource(sched, workload.V2, 1), newLimiter(2, sched), 2, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if got.errors["HTTP 415"] != 10 || got.samplesAccepted != 0 || len(got.latencies) != 10 {
		t.Fatalf("tally %+v", got)
	}
	if s := got.errorSummary(); len(s) != 1 || !strings.Contains(s[0], "unsupported") {
		t.Fatalf("summary %q", s)
	}
}

func TestEncodePoolMatchesEncoder(t *testing.T) {
	o := workload.DefaultOptions()
	o.Series, o.SeriesPerRequest, o.Senders = 300, 40, 3
	sched, _ := workload.NewSchedule(o)
	spans := []span{{0, 7}, {3, 9}, {5, 5}}
	pools, n, err := encodePool(context.Background(), sched, workload.V2, spans)
	if err != nil {
		t.Fatal(err)
	}
	enc := workload.NewEncoder(sched, workload.V2)
	var total int64
	for c, s := range spans {
		if int64(len(pools[c])) != s.to-s.from {
			t.Fatalf("sender %d: %d requests, want %d", c, len(pools[c]), s.to-s.from)
		}
		for q := s.from; q < s.to; q++ {
			want, info, _ := enc.Append(nil, c, q)
			got := pools[c][q-s.from]
			if !bytes.Equal(got.body, want) || got.round != info.Round || got.samples != info.Samples {
				t.Fatalf("sender %d request %d differs from the encoder's", c, q)
			}
			total += int64(len(want))
		}
	}
	if n != total {
		t.Fatalf("pool bytes %d, want %d", n, total)
	}
}

func TestLimiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := workload.DefaultOptions()
		o.Series, o.Senders = 10, 2
		sched, _ := workload.NewSchedule(o)
		l := newLimiter(2, sched)
		l.maxAhead = 2
		ctx := context.Background()
		if err := l.wait(ctx, 0, 0); err != nil {
			t.Fatal(err)
		}
		released := make(chan struct{})
		go func() {
			l.wait(ctx, 1, 3) // three rounds ahead of sender 0: must wait
			close(released)
		}()
		synctest.Wait()
		select {
		case <-released:
			t.Fatal("a sender 3 rounds ahead was not held back")
		default:
		}
		l.wait(ctx, 0, 1) // now only 2 ahead
		synctest.Wait()
		select {
		case <-released:
		default:
			t.Fatal("sender not released once within reach")
		}

		// An idle sender holds nobody back, and a cancelled context
		// releases a waiter.
		l.idle(0)
		if err := l.wait(ctx, 1, 100); err != nil {
			t.Fatal(err)
		}
		l.wait(ctx, 0, 0)
		cctx, cancel := context.WithCancel(ctx)
		errc := make(chan error)
		go func() { errc <- l.wait(cctx, 1, 200) }()
		synctest.Wait()
		stop := context.AfterFunc(cctx, l.wake)
		defer stop()
		cancel()
		if err := <-errc; err == nil {
			t.Fatal("wait returned nil after cancel")
		}
	})
}

// fakeWorkload records the order of its runs.
type fakeWorkload struct{ order []string }

func (f *fakeWorkload) Name() string                        { return "fake" }
func (f *fakeWorkload) Params() []report.Param              { return nil }
func (f *fakeWorkload) Chart() report.Chart                 { return report.Chart{} }
func (f *fakeWorkload) Prepare(context.Context, *Env) error { return nil }
func (f *fakeWorkload) Run(_ context.Context, _ *Env, t Target) (report.Figures, []string, error) {
	f.order = append(f.order, t.Name)
	var figs report.Figures
	figs.Add("x", "x", "s", report.Lower, float64(len(f.order)))
	notes := []string{"ran"}
	if len(f.order) == 1 {
		notes = append(notes, "first")
	}
	return figs, notes, nil
}

func TestCompareInterleaves(t *testing.T) {
	f := &fakeWorkload{}
	res, err := Compare(context.Background(), DefaultEnv(t.TempDir()), f, []Target{{Name: "a", Command: "a"}, {Name: "b", Command: "b"}}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.order, ","); got != "a,b,a,b,a,b" {
		t.Fatalf("order %s", got)
	}
	// a ran 1st, 3rd and 5th: median 3; b 2nd, 4th, 6th: median 4.
	for i, want := range []float64{3, 4} {
		fig, _ := res.Runs[i].Figures.Get("x")
		if fig.Value != want || len(res.Runs[i].Rounds) != 3 {
			t.Fatalf("run %d: %+v", i, res.Runs[i])
		}
	}
	if got := strings.Join(res.Runs[0].Notes, "; "); got != "ran; round 1: first" {
		t.Fatalf("notes %q", got)
	}
}

func TestLoadOptions(t *testing.T) {
	o := LoadOptions{Workload: workload.DefaultOptions(), Protocol: workload.V1, SamplesPerSeries: 25}
	o.Workload.Series = 10
	o.Workload.SamplesPerSeries = 10
	if o.rounds() != 3 || o.perSeries() != 30 || o.samples() != 300 {
		t.Fatalf("rounds %d per series %d samples %d", o.rounds(), o.perSeries(), o.samples())
	}
	end := time.UnixMilli(1_800_000_000_000)
	sched, err := o.schedule(end)
	if err != nil {
		t.Fatal(err)
	}
	l := &loaded{sched: sched, opts: o}
	if l.end() > end.UnixMilli() || l.end() <= end.UnixMilli()-o.Workload.Interval || l.end()-l.start() != 29*o.Workload.Interval {
		t.Fatalf("data from %d to %d, end %d", l.start(), l.end(), end.UnixMilli())
	}
}

func newWriter(t *testing.T, url string, p workload.Protocol, hc *http.Client) *client.Writer {
	t.Helper()
	w, err := client.NewWriter(url, p, hc)
	if err != nil {
		t.Fatal(err)
	}
	return w
}
