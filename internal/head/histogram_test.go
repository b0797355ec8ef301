package head

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql"
	promstorage "github.com/prometheus/prometheus/storage"
	promchunkenc "github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/strata-db/strata/internal/storage"
)

// anySample is a sample of any kind as read back: a float, or a histogram
// in its float form, with the kind it was stored as.
type anySample struct {
	t  int64
	vt promchunkenc.ValueType
	v  float64
	fh *histogram.FloatHistogram
}

func (s anySample) String() string {
	if s.fh != nil {
		return fmt.Sprintf("%d:%v:%s", s.t, s.vt, s.fh)
	}
	return fmt.Sprintf("%d:%v:%g", s.t, s.vt, s.v)
}

// readAny returns every sample of every series matching ms, keyed by labels.
func readAny(t *testing.T, q promstorage.Queryable, ms ...*labels.Matcher) map[string][]anySample {
	t.Helper()
	qr, err := q.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	defer qr.Close()
	out := map[string][]anySample{}
	ss := qr.Select(context.Background(), true, nil, ms...)
	var it promchunkenc.Iterator
	for ss.Next() {
		it = ss.At().Iterator(it)
		var got []anySample
		for vt := it.Next(); vt != promchunkenc.ValNone; vt = it.Next() {
			s := anySample{t: it.AtT(), vt: vt}
			switch vt {
			case promchunkenc.ValFloat:
				_, s.v = it.At()
			case promchunkenc.ValHistogram:
				_, h := it.AtHistogram(nil)
				_, fh := it.AtFloatHistogram(nil)
				if !h.ToFloat(nil).Equals(fh) {
					t.Fatalf("AtHistogram %s and AtFloatHistogram %s differ", h, fh)
				}
				s.fh = fh
			case promchunkenc.ValFloatHistogram:
				_, s.fh = it.AtFloatHistogram(nil)
			}
			got = append(got, s)
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		out[ss.At().Labels().String()] = got
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// sameSamples compares samples, histograms regardless of empty buckets
// and of counter reset hints (which say how they were stored).
func sameSamples(a, b []anySample) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.t != y.t || x.vt != y.vt || math.Float64bits(x.v) != math.Float64bits(y.v) || (x.fh == nil) != (y.fh == nil) {
			return false
		}
		if x.fh != nil {
			fx, fy := x.fh.Copy().Compact(0), y.fh.Copy().Compact(0)
			fx.CounterResetHint, fy.CounterResetHint = 0, 0
			if !fx.Equals(fy) {
				return false
			}
		}
	}
	return true
}

func assertSameAny(t *testing.T, got, want map[string][]anySample) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d series, want %d", len(got), len(want))
	}
	for k, w := range want {
		if !sameSamples(got[k], w) {
			t.Fatalf("series %s:\ngot  %v\nwant %v", k, got[k], w)
		}
	}
}

// testHistogram returns the i-th histogram of a growing counter: more
// buckets appear as i grows, and counts only go up.
func testHistogram(i int) *histogram.Histogram {
	h := &histogram.Histogram{
		Schema:        1,
		ZeroThreshold: 1e-128,
		ZeroCount:     uint64(i),
		Sum:           float64(i) * 1.5,
		PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}},
		// Deltas: bucket 0 holds i+1, bucket 1 holds 2i+1.
		PositiveBuckets: []int64{int64(i + 1), int64(i)},
		NegativeSpans:   []histogram.Span{{Offset: 1, Length: 1}},
		NegativeBuckets: []int64{int64(i)},
	}
	if i >= 50 {
		// A bucket further out appears.
		h.PositiveSpans = append(h.PositiveSpans, histogram.Span{Offset: 3, Length: 1})
		h.PositiveBuckets = append(h.PositiveBuckets, int64(i-50+1)-int64(2*i+1))
	}
	var count uint64 = h.ZeroCount
	for _, d := range []int64{int64(i + 1), int64(2*i + 1), int64(i)} {
		count += uint64(d)
	}
	if i >= 50 {
		count += uint64(i - 50 + 1)
	}
	h.Count = count
	return h
}

// writeHistograms appends 300 samples each to a series of integer
// histograms, one of float histograms (with a counter reset at 200) and
// one that changes from floats to histograms and back, and returns what
// it wrote as read back.
func writeHistograms(t *testing.T, h *Head) map[string][]anySample {
	t.Helper()
	hl := labels.FromStrings("__name__", "h")
	fl := labels.FromStrings("__name__", "fh")
	ml := labels.FromStrings("__name__", "mixed")
	want := map[string][]anySample{}
	for batch := range 10 {
		app := h.Appender(context.Background())
		for k := range 30 {
			i := batch*30 + k
			ts := int64(i) * 15000
			hi := testHistogram(i)
			if _, err := app.Append(0, hl, storage.Sample{T: ts, H: hi}); err != nil {
				t.Fatal(err)
			}
			want[hl.String()] = append(want[hl.String()], anySample{t: ts, vt: promchunkenc.ValHistogram, fh: hi.ToFloat(nil)})

			fh := testHistogram(i % 200).ToFloat(nil)
			fh.Sum += 0.25
			if _, err := app.Append(0, fl, storage.Sample{T: ts, FH: fh}); err != nil {
				t.Fatal(err)
			}
			want[fl.String()] = append(want[fl.String()], anySample{t: ts, vt: promchunkenc.ValFloatHistogram, fh: fh.Copy()})

			var s storage.Sample
			var as anySample
			if i/100 == 1 {
				s = storage.Sample{T: ts, H: testHistogram(i)}
				as = anySample{t: ts, vt: promchunkenc.ValHistogram, fh: s.H.ToFloat(nil)}
			} else {
				s = storage.Sample{T: ts, V: float64(i)}
				as = anySample{t: ts, vt: promchunkenc.ValFloat, v: float64(i)}
			}
			if _, err := app.Append(0, ml, s); err != nil {
				t.Fatal(err)
			}
			want[ml.String()] = append(want[ml.String()], as)
		}
		if err := app.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	return want
}

func TestHistogramAppendQueryReplay(t *testing.T) {
	for _, checkpoint := range []bool{false, true} {
		t.Run(fmt.Sprintf("checkpoint=%v", checkpoint), func(t *testing.T) {
			dir := t.TempDir()
			opts := DefaultOptions()
			opts.WALDir = dir
			opts.CheckpointOnClose = checkpoint
			h, err := Open(opts)
			if err != nil {
				t.Fatal(err)
			}
			want := writeHistograms(t, h)
			assertSameAny(t, readAny(t, h, all), want)
			if err := h.Close(); err != nil {
				t.Fatal(err)
			}
			for _, workers := range []int{1, 3} {
				opts.ReplayWorkers = workers
				h, err := Open(opts)
				if err != nil {
					t.Fatal(err)
				}
				assertSameAny(t, readAny(t, h, all), want)
				if got := h.Stats().ReplayedSamples; !checkpoint && got != 900 {
					t.Fatalf("replayed %d samples, want 900", got)
				}
				// The newest histogram, restored from a checkpoint into a
				// closed chunk or replayed into the open one, is still
				// recognised when repeated.
				app := h.Appender(context.Background())
				last := int64(299) * 15000
				if _, err := app.Append(0, labels.FromStrings("__name__", "h"), storage.Sample{T: last, H: testHistogram(299)}); err != nil {
					t.Fatalf("repeat of the newest histogram: %v", err)
				}
				if _, err := app.Append(0, labels.FromStrings("__name__", "fh"), storage.Sample{T: last, FH: testHistogram(1).ToFloat(nil)}); !errors.Is(err, storage.ErrDuplicateSampleForTimestamp) {
					t.Fatalf("other float histogram at the newest time: got %v", err)
				}
				app.Rollback()
				opts.CheckpointOnClose = false
				if err := h.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestHistogramAppendRejects(t *testing.T) {
	h := openTestHead(t, t.TempDir())
	defer h.Close()
	lset := labels.FromStrings("__name__", "h")
	app := h.Appender(context.Background())
	if _, err := app.Append(0, lset, storage.Sample{T: 10, H: testHistogram(3)}); err != nil {
		t.Fatal(err)
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	bad := testHistogram(3)
	bad.Count = 1 // less than its buckets hold
	for _, tc := range []struct {
		name string
		s    storage.Sample
		want error // nil: accepted (as a duplicate)
	}{
		{"same histogram again", storage.Sample{T: 10, H: testHistogram(3)}, nil},
		{"same histogram with an empty bucket more", storage.Sample{T: 10, H: func() *histogram.Histogram {
			x := testHistogram(3)
			x.PositiveSpans = []histogram.Span{{Offset: 0, Length: 3}}
			x.PositiveBuckets = append(x.PositiveBuckets, -int64(2*3+1))
			return x
		}()}, nil},
		{"other histogram, same time", storage.Sample{T: 10, H: testHistogram(4)}, storage.ErrDuplicateSampleForTimestamp},
		{"float, same time", storage.Sample{T: 10, V: 1}, storage.ErrDuplicateSampleForTimestamp},
		{"float histogram, same time", storage.Sample{T: 10, FH: testHistogram(3).ToFloat(nil)}, storage.ErrDuplicateSampleForTimestamp},
		{"older", storage.Sample{T: 9, H: testHistogram(3)}, storage.ErrOutOfOrderSample},
		{"invalid", storage.Sample{T: 11, H: bad}, storage.ErrInvalidHistogram},
		{"both kinds", storage.Sample{T: 11, H: testHistogram(3), FH: testHistogram(3).ToFloat(nil)}, storage.ErrInvalidHistogram},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := h.Appender(context.Background())
			defer app.Rollback()
			_, err := app.Append(0, lset, tc.s)
			if !errors.Is(err, tc.want) || (err == nil) != (tc.want == nil) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	// Within one batch, a histogram is checked against the batch's
	// previous sample of the series.
	app = h.Appender(context.Background())
	defer app.Rollback()
	if _, err := app.Append(0, lset, storage.Sample{T: 20, H: testHistogram(5)}); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Append(0, lset, storage.Sample{T: 20, H: testHistogram(5)}); err != nil {
		t.Fatalf("repeat in batch: %v", err)
	}
	if _, err := app.Append(0, lset, storage.Sample{T: 20, V: 5}); !errors.Is(err, storage.ErrDuplicateSampleForTimestamp) {
		t.Fatalf("float at the batch's histogram's time: got %v", err)
	}
	if _, err := app.Append(0, lset, storage.Sample{T: 19, H: testHistogram(5)}); !errors.Is(err, storage.ErrOutOfOrderSample) {
		t.Fatalf("older than the batch's histogram: got %v", err)
	}
}

// TestHistogramPromQL runs PromQL's histogram functions over the head,
// across a counter reset, which the chunks must mark for rate to see it.
func TestHistogramPromQL(t *testing.T) {
	h := openTestHead(t, t.TempDir())
	defer h.Close()
	lset := labels.FromStrings("__name__", "req")
	app := h.Appender(context.Background())
	// A counter histogram gaining one observation in bucket 0 per 15 s,
	// reset to empty at 300 s; a stale marker at the end.
	for i := 0; i <= 40; i++ {
		n := uint64(i)
		if i >= 20 {
			n = uint64(i - 20)
		}
		x := &histogram.Histogram{Schema: 0, Count: n, Sum: float64(n), ZeroThreshold: 1e-128,
			PositiveSpans: []histogram.Span{{Offset: 0, Length: 1}}, PositiveBuckets: []int64{int64(n)}}
		if _, err := app.Append(0, lset, storage.Sample{T: int64(i) * 15000, H: x}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := app.Append(0, lset, storage.Sample{T: 41 * 15000, H: &histogram.Histogram{Sum: math.Float64frombits(value.StaleNaN)}}); err != nil {
		t.Fatal(err)
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}

	engine := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e6, Timeout: time.Minute, EnableAtModifier: true})
	for _, tc := range []struct {
		query string
		at    int64 // seconds
		want  float64
	}{
		{"histogram_count(req)", 150, 10},
		{"histogram_sum(req)", 600, 20},
		// 4 observations in the minute before 150 s, extrapolated: 1/15 per second.
		{"histogram_count(rate(req[1m]))", 150, 1.0 / 15},
		// Across the reset at 300 s: 17 -> 19, reset, 0 -> 2 is an
		// increase of 4 over the 75 s between the first and last sample,
		// extrapolated to the 90 s window. Without the reset it would be
		// a drop, which rate refuses.
		{"histogram_count(increase(req[90s]))", 330, 4.8},
		{"histogram_fraction(0, 1, req)", 150, 1},
	} {
		q, err := engine.NewInstantQuery(context.Background(), h, nil, tc.query, time.Unix(tc.at, 0))
		if err != nil {
			t.Fatal(err)
		}
		res := q.Exec(context.Background())
		if res.Err != nil {
			t.Fatalf("%s: %v", tc.query, res.Err)
		}
		v, err := res.Vector()
		if err != nil || len(v) != 1 {
			t.Fatalf("%s: got %v (%v)", tc.query, res.Value, err)
		}
		if got := v[0].F; math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s at %ds = %g, want %g", tc.query, tc.at, got, tc.want)
		}
		q.Close()
	}
	// After the stale marker, the series is gone.
	q, err := engine.NewInstantQuery(context.Background(), h, nil, "req", time.Unix(41*15+1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if res := q.Exec(context.Background()); !strings.Contains(res.String(), "") || res.Err != nil {
		t.Fatal(res.Err)
	} else if v, _ := res.Vector(); len(v) != 0 {
		t.Fatalf("stale series still returned: %v", v)
	}
	q.Close()
}
