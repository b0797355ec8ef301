package otlp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/strata-db/strata/internal/ingest"
	"github.com/strata-db/strata/internal/storage"
)

// sumPoint is a delta of a sum: its stream (an attribute), its interval
// in seconds after t0, and its value (an integer unless f is set).
type sumPoint struct {
	stream     string
	start, end int
	v          int64
	f          float64
	stale      bool
}

// sumRequest is a request of delta sum points, in that order, of metric
// "jobs" in one resource, with the attributes of each stream written in
// the order given by reversed.
func sumRequest(reversed bool, pts ...sumPoint) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "worker")
	sum := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty().SetEmptySum()
	rm.ScopeMetrics().At(0).Metrics().At(0).SetName("jobs")
	sum.SetIsMonotonic(true)
	sum.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	for _, sp := range pts {
		p := sum.DataPoints().AppendEmpty()
		p.SetStartTimestamp(pcommon.NewTimestampFromTime(t0.Add(time.Duration(sp.start) * time.Second)))
		p.SetTimestamp(pcommon.NewTimestampFromTime(t0.Add(time.Duration(sp.end) * time.Second)))
		switch {
		case sp.f != 0:
			p.SetDoubleValue(sp.f)
		default:
			p.SetIntValue(sp.v)
		}
		if sp.stale {
			p.SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
		}
		if reversed {
			p.Attributes().PutStr("queue", "q")
			p.Attributes().PutStr("stream", sp.stream)
		} else {
			p.Attributes().PutStr("stream", sp.stream)
			p.Attributes().PutStr("queue", "q")
		}
	}
	return md
}

// TestDeltaSumsMatchReference sends delta sums of every case the
// conversion to cumulative meets, on the fast path and on the reference
// alone: both store and answer the same.
func TestDeltaSumsMatchReference(t *testing.T) {
	requests := [][]sumPoint{
		{{"a", 0, 10, 2, 0, false}, {"b", 0, 10, 1, 0, false}},
		{{"a", 10, 20, 3, 0, false}, {"a", 20, 30, 4, 0, false}}, // two of a stream
		{{"a", 10, 20, 3, 0, false}},                             // a duplicate: dropped
		{{"a", 25, 28, 1, 0, false}},                             // older than the newest: dropped
		{{"b", -5, 20, 1, 0, false}},                             // starts before its stream: dropped
		{{"b", 10, 20, 0, 0.5, false}},                           // a float: replaces the integer
		{{"b", 20, 30, 0, 1.25, false}},
		{{"a", 30, 40, 0, 0, true}}, // no recorded value: a stale marker
		{{"a", 40, 50, 5, 0, false}, {"c", 40, 50, 7, 0, false}},
		{{"c", 50, 60, 1, 0, false}},
	}
	for _, maxStreams := range []int{0, 2} {
		t.Run(fmt.Sprint("max-streams=", maxStreams), func(t *testing.T) {
			opts := DefaultOptions()
			opts.DeltaMaxStreams = maxStreams
			p := newPaths(t, opts)
			for i, r := range requests {
				// Every other request writes the attributes in the other
				// order: the same streams.
				p.send(t, encodeProto(t, sumRequest(i%2 == 1, r...)))
			}
			// A request the fast path hands to the reference (an
			// exemplar) after adding its deltas: they are added once.
			md := sumRequest(false, sumPoint{"a", 50, 60, 10, 0, false}, sumPoint{"b", 30, 60, 10, 0, false})
			g := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().AppendEmpty()
			g.SetName("level")
			gp := g.SetEmptyGauge().DataPoints().AppendEmpty()
			gp.SetTimestamp(pcommon.NewTimestampFromTime(t0.Add(time.Minute)))
			gp.Exemplars().AppendEmpty().SetDoubleValue(1)
			p.send(t, encodeProto(t, md))
			p.send(t, encodeProto(t, sumRequest(false, sumPoint{"a", 60, 70, 1, 0, false})))
			held := 0
			for i := range p.fast.cache.streams.shards {
				for _, s := range p.fast.cache.streams.shards[i].m {
					if s.sum.Load() != nil {
						held++
					}
				}
			}
			if held == 0 {
				t.Error("no delta stream on the fast path")
			}
		})
	}
}

// TestDeltaSumsStored reads back what deltas become: cumulative values
// from the first delta's start, duplicates and older points dropped and
// said so.
func TestDeltaSumsStored(t *testing.T) {
	rec := &recorder{}
	h := newHandler(t, rec, DefaultOptions())
	for _, r := range [][]sumPoint{
		{{"a", 0, 10, 2, 0, false}},
		{{"a", 10, 20, 3, 0, false}},
		{{"a", 10, 20, 3, 0, false}},
		{{"a", 20, 30, 4, 0, false}},
	} {
		post(h, "/v1/metrics", contentProtobuf, "", encodeProto(t, sumRequest(false, r...)))
	}
	var got []string
	for _, l := range rec.sorted() {
		if strings.HasPrefix(l, `{__name__="jobs_total"`) {
			got = append(got, l[strings.Index(l, "} ")+2:])
		}
	}
	ms := func(s int) int64 { return t0.Add(time.Duration(s) * time.Second).UnixMilli() }
	want := []string{
		fmt.Sprintf("t=%d st=%d v=%x", ms(10), ms(0), uint64(0x4000000000000000)), // 2
		fmt.Sprintf("t=%d st=%d v=%x", ms(20), ms(0), uint64(0x4014000000000000)), // 5
		fmt.Sprintf("t=%d st=%d v=%x", ms(30), ms(0), uint64(0x4022000000000000)), // 9
	}
	if !slices.Equal(got, want) {
		t.Errorf("stored\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// failing is a store whose commits fail while fail is set.
type failing struct {
	recorder
	mu   sync.Mutex
	fail bool
}

func (f *failing) Appender(ctx context.Context) storage.Appender {
	return &failingApp{Appender: f.recorder.Appender(ctx), f: f}
}

type failingApp struct {
	storage.Appender
	f *failing
}

func (a *failingApp) Commit() error {
	a.f.mu.Lock()
	defer a.f.mu.Unlock()
	if a.f.fail {
		_ = a.Appender.Rollback()
		return errors.New("disk full")
	}
	return a.Appender.Commit()
}

// TestDeltaRetried refuses requests of deltas (a failed commit, the rate
// limit), on both paths, and sends them again: the retries are added,
// not dropped as duplicates of what was never stored.
func TestDeltaRetried(t *testing.T) {
	for _, reference := range []bool{false, true} {
		t.Run(fmt.Sprint("reference=", reference), func(t *testing.T) {
			st := &failing{}
			opts := DefaultOptions()
			opts.referenceOnly = reference
			h := newHandler(t, st, opts)
			send := func(r ...sumPoint) int {
				return post(h, "/v1/metrics", contentProtobuf, "", encodeProto(t, sumRequest(false, r...))).Code
			}
			if code := send(sumPoint{"a", 0, 10, 2, 0, false}); code != http.StatusOK {
				t.Fatalf("first request: status %d", code)
			}
			st.mu.Lock()
			st.fail = true
			st.mu.Unlock()
			if code := send(sumPoint{"a", 10, 20, 3, 0, false}); code != http.StatusServiceUnavailable {
				t.Fatalf("with the store failing: status %d, want 503", code)
			}
			st.mu.Lock()
			st.fail = false
			st.mu.Unlock()
			// A limit whose budget is spent: no request passes.
			h.opts.RateLimiter = ingest.NewRateLimiter(0.001)
			h.opts.RateLimiter.Allow(1)
			two := []sumPoint{{"a", 10, 20, 3, 0, false}, {"b", 0, 20, 1, 0, false}}
			if code := send(two...); code != http.StatusTooManyRequests {
				t.Fatalf("over the rate limit: status %d, want 429", code)
			}
			h.opts.RateLimiter = nil
			if code := send(two...); code != http.StatusOK {
				t.Fatalf("retry: status %d", code)
			}
			var last string
			for _, l := range st.sorted() {
				if strings.HasPrefix(l, `{__name__="jobs_total", job="worker", queue="q", stream="a"}`) {
					last = l
				}
			}
			if want := fmt.Sprintf("v=%x", uint64(0x4014000000000000)); !strings.HasSuffix(last, want) { // 5
				t.Errorf("stream a ends at %q, want 5", last)
			}
		})
	}
}

// TestDeltaSumsForgotten forgets a stream not seen for max-stale: its
// next delta starts it again, under its own start time, also through the
// fast path's stream that still holds the forgotten state.
func TestDeltaSumsForgotten(t *testing.T) {
	d := newDeltaSums(300, 0, 0)
	var undo []sumUndo
	s, err := d.stream(sumID{1})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.add(s, sumDelta{start: 1, time: 10, i: 4, kind: pmetric.NumberDataPointValueTypeInt}, 100, &undo); err != nil {
		t.Fatal(err)
	}
	d.sweep(300) // too soon after the last sweep: nothing happens
	if _, ok := d.streams.get(sumID{1}); !ok {
		t.Fatal("stream forgotten before max-stale")
	}
	d.sweep(401)
	if _, ok := d.streams.get(sumID{1}); ok || d.n.Load() != 0 {
		t.Fatalf("stream not forgotten after max-stale (%d streams)", d.n.Load())
	}
	acc, now, err := d.add(s, sumDelta{start: 20, time: 30, i: 5, kind: pmetric.NumberDataPointValueTypeInt}, 500, &undo)
	switch {
	case err != nil:
		t.Fatal(err)
	case now == s:
		t.Error("the forgotten state was used")
	case acc != (sumAcc{start: 20, time: 30, i: 5, isInt: true}):
		t.Errorf("after forgetting: %+v, want the delta alone from its start", acc)
	case d.n.Load() != 1:
		t.Errorf("%d streams, want 1", d.n.Load())
	}
}

// TestDeltaSumsConcurrent sends deltas of the same streams from several
// senders at once (under -race in CI), on the fast path: every delta is
// added once.
func TestDeltaSumsConcurrent(t *testing.T) {
	rec := &recorder{}
	h := newHandler(t, rec, DefaultOptions())
	const senders, requests = 4, 50
	var wg sync.WaitGroup
	for c := range senders {
		wg.Go(func() {
			for i := range requests {
				// Sender c owns the intervals i*senders+c: all of them
				// make a sequence of the streams.
				n := i*senders + c
				w := post(h, "/v1/metrics", contentProtobuf, "", encodeProto(t, sumRequest(c%2 == 0,
					sumPoint{"x", n, n + 1, 1, 0, false}, sumPoint{fmt.Sprint("own-", c), n, n + 1, 1, 0, false})))
				if w.Code != http.StatusOK {
					t.Errorf("sender %d request %d: status %d", c, i, w.Code)
					return
				}
			}
		})
	}
	wg.Wait()
	// Deltas of x arrive out of order between senders and some are
	// dropped; those stored add up to the newest value, each once.
	x, own := 0, 0
	for _, l := range rec.sorted() {
		switch {
		case strings.Contains(l, `stream="x"`):
			x++
		case strings.Contains(l, `stream="own-`):
			own++
		}
	}
	if own != senders*requests {
		t.Errorf("%d points of the senders' own streams stored, want %d", own, senders*requests)
	}
	var newest float64
	for _, l := range rec.sorted() {
		if strings.Contains(l, `stream="x"`) {
			var ts, st int64
			var bits uint64
			if _, err := fmt.Sscanf(l[strings.Index(l, "} ")+2:], "t=%d st=%d v=%x", &ts, &st, &bits); err != nil {
				t.Fatal(err)
			}
			newest = max(newest, math.Float64frombits(bits))
		}
	}
	if int(newest) != x {
		t.Errorf("stream x: %d points stored, newest value %g: every stored delta must be added once", x, newest)
	}
}

// TestDeltaHistogramsMatchReference sends histograms of delta
// temporality, with gauges and sums around them, on the fast path and on
// the reference alone: both store and answer the same, duplicates
// dropped once, also when a request goes to the reference part way.
func TestDeltaHistogramsMatchReference(t *testing.T) {
	p := newPaths(t, DefaultOptions())
	with := func(n int, d pmetric.Metrics) pmetric.Metrics {
		md := numberRequest(n)
		d.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().MoveAndAppendTo(md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics())
		return md
	}
	for i, r := range []struct{ start, end, inc int }{{0, 10, 2}, {10, 20, 3}, {10, 20, 3}, {20, 30, 4}, {15, 25, 1}, {30, 40, 1}} {
		p.send(t, encodeProto(t, with(i, deltaRequest(r.start, r.end, uint64(r.inc)))))
	}
	// The delta histograms alone, far from the other points: target_info
	// spans what the conversion keeps.
	alone := func(start, end int) pmetric.Metrics {
		md := deltaRequest(start, end, 1)
		md.ResourceMetrics().At(0).Resource().Attributes().PutStr("service.name", "worker")
		md.ResourceMetrics().At(0).Resource().Attributes().PutStr("host.name", "h")
		md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().RemoveIf(func(m pmetric.Metric) bool { return m.Type() == pmetric.MetricTypeSum })
		return md
	}
	p.send(t, encodeProto(t, alone(30, 40)))
	p.send(t, encodeProto(t, alone(3600, 3700)))
	p.send(t, encodeProto(t, alone(3600, 3700)))
	// Exemplars: the reference's whole, and added once.
	md := with(7, deltaRequest(3700, 3800, 2))
	md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Gauge().DataPoints().At(0).Exemplars().AppendEmpty().SetDoubleValue(1)
	p.send(t, encodeProto(t, md))
	p.send(t, encodeProto(t, with(8, deltaRequest(3800, 3900, 2))))
}

// TestDeltaUndoNaN takes back a point of a stream whose value is NaN:
// the retry is added, not dropped as a duplicate.
func TestDeltaUndoNaN(t *testing.T) {
	d := newDeltaSums(300, 0, 0)
	s, err := d.stream(sumID{2})
	if err != nil {
		t.Fatal(err)
	}
	var undo []sumUndo
	double := pmetric.NumberDataPointValueTypeDouble
	if _, _, err := d.add(s, sumDelta{start: 1, time: 5, f: math.NaN(), kind: double}, 1, &undo); err != nil {
		t.Fatal(err)
	}
	undo = undo[:0]
	if _, _, err := d.add(s, sumDelta{start: 1, time: 10, f: 1, kind: double}, 1, &undo); err != nil {
		t.Fatal(err)
	}
	d.undo(undo)
	if _, _, err := d.add(s, sumDelta{start: 1, time: 10, f: 1, kind: double}, 1, &undo); err != nil {
		t.Errorf("the retry of a point taken back: %v", err)
	}
}
