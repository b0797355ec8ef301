package chunkenc

import (
	"bytes"
	"math"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
)

// appendResultCases are a chunk's histograms and one more, with what
// appending that one must return.
func appendResultCases() []struct {
	name  string
	chunk []*histogram.Histogram
	next  *histogram.Histogram
	want  AppendResult
} {
	base := func() *histogram.Histogram {
		return hist(4, 10, buckets{-2: 1, 0: 3, 1: 5}, buckets{0: 2, 3: 1})
	}
	gauge := func(h *histogram.Histogram) *histogram.Histogram { return withHint(h, histogram.GaugeType) }
	custom := func(bounds []float64, pos buckets) *histogram.Histogram { return customHist(bounds, 1, pos) }
	mod := func(f func(h *histogram.Histogram)) *histogram.Histogram {
		h := base()
		f(h)
		return h
	}
	type tc = struct {
		name  string
		chunk []*histogram.Histogram
		next  *histogram.Histogram
		want  AppendResult
	}
	one := []*histogram.Histogram{base()}
	return []tc{
		{"same", one, base(), Appended},
		{"all grow", one, hist(5, 11, buckets{-2: 2, 0: 4, 1: 6}, buckets{0: 3, 3: 2}), Appended},
		{"new buckets both sides", one, hist(4, 11, buckets{-9: 1, -2: 1, 0: 3, 1: 5, 9: 1}, buckets{-1: 1, 0: 2, 3: 1}), Appended},
		{"sum decreases", one, mod(func(h *histogram.Histogram) { h.Sum = -1 }), Appended},
		{"count decreases", one, mod(func(h *histogram.Histogram) { h.Count-- }), CounterResetDetected},
		{"zero count decreases", one, mod(func(h *histogram.Histogram) { h.ZeroCount-- }), CounterResetDetected},
		{"positive bucket decreases", one, hist(4, 10, buckets{-2: 1, 0: 2, 1: 6}, buckets{0: 2, 3: 1}), CounterResetDetected},
		{"negative bucket decreases", one, hist(5, 10, buckets{-2: 1, 0: 3, 1: 5}, buckets{0: 1, 3: 2}), CounterResetDetected},
		{"bucket vanishes", one, hist(4, 10, buckets{0: 4, 1: 5}, buckets{0: 2, 3: 1}), CounterResetDetected},
		{"negative bucket vanishes", one, hist(4, 10, buckets{-2: 1, 0: 3, 1: 5}, buckets{0: 3}), CounterResetDetected},
		{"empty after non-empty", one, &histogram.Histogram{Schema: 3, ZeroThreshold: 0.001}, CounterResetDetected},
		{"zero bucket vanishes", []*histogram.Histogram{hist(4, 10, buckets{-2: 0, 0: 3}, nil)}, hist(4, 10, buckets{0: 3}, nil), Appended},
		{"hint counter reset", one, withHint(base(), histogram.CounterReset), CounterResetDetected},
		{"hint not counter reset", one, withHint(base(), histogram.NotCounterReset), Appended},
		{"decrease despite hint", one, withHint(mod(func(h *histogram.Histogram) { h.Count-- }), histogram.NotCounterReset), CounterResetDetected},
		{"reset against last real, not stale", []*histogram.Histogram{base(), staleHist()}, mod(func(h *histogram.Histogram) { h.ZeroCount-- }), CounterResetDetected},
		{"no reset after stale", []*histogram.Histogram{base(), staleHist()}, base(), Appended},
		{"schema", one, mod(func(h *histogram.Histogram) { h.Schema = 2 }), NeedNewChunk},
		{"schema before reset", one, mod(func(h *histogram.Histogram) { h.Schema, h.Count = 2, 0 }), NeedNewChunk},
		{"zero threshold", one, mod(func(h *histogram.Histogram) { h.ZeroThreshold = 0.002 }), NeedNewChunk},
		{"zero threshold sign", one, mod(func(h *histogram.Histogram) { h.ZeroThreshold = math.Copysign(0, -1) }), NeedNewChunk},
		{"gauge into counters", one, gauge(base()), NeedNewChunk},
		{"counter into gauges", []*histogram.Histogram{gauge(base())}, base(), NeedNewChunk},
		{"gauge decreases", []*histogram.Histogram{gauge(base())}, gauge(hist(0, -5, buckets{7: 1}, nil)), Appended},
		{"gauge hint counter reset", []*histogram.Histogram{gauge(base())}, withHint(base(), histogram.CounterReset), NeedNewChunk},
		{"stale into counters", one, staleHist(), Appended},
		{"stale into gauges", []*histogram.Histogram{gauge(base())}, staleHist(), Appended},
		{"stale with other schema", []*histogram.Histogram{custom(testBounds, buckets{0: 1})}, staleHist(), Appended},
		{"after stale markers only", []*histogram.Histogram{staleHist(), staleHist()}, gauge(custom(testBounds, buckets{0: 1})), Appended},
		{"custom same bounds", []*histogram.Histogram{custom(testBounds, buckets{0: 1})}, custom(slices.Clone(testBounds), buckets{0: 1, 2: 1}), Appended},
		{"custom other bounds", []*histogram.Histogram{custom(testBounds, buckets{0: 1})}, custom(testBounds[1:], buckets{0: 1}), NeedNewChunk},
		{"custom bound bits", []*histogram.Histogram{custom([]float64{0, 1}, buckets{0: 1})}, custom([]float64{math.Copysign(0, -1), 1}, buckets{0: 1}), NeedNewChunk},
		{"custom to exponential", []*histogram.Histogram{custom(testBounds, buckets{0: 1})}, base(), NeedNewChunk},
		{"exponential to custom", one, custom(testBounds, buckets{0: 1}), NeedNewChunk},
		{"custom bucket decreases", []*histogram.Histogram{custom(testBounds, buckets{0: 2})}, custom(testBounds, buckets{0: 1}), CounterResetDetected},
		{"custom ignores zero count", []*histogram.Histogram{custom(testBounds, buckets{0: 2})}, mod2(custom(testBounds, buckets{0: 2})), Appended},
	}
}

// mod2 gives a custom-buckets histogram a zero count and threshold, which
// its schema does not use: they are neither stored nor compared.
func mod2(h *histogram.Histogram) *histogram.Histogram {
	h.ZeroCount, h.ZeroThreshold = 0, 0
	return h
}

func TestHistogramAppendResult(t *testing.T) {
	for _, tc := range appendResultCases() {
		t.Run(tc.name, func(t *testing.T) {
			var samples []hsample
			for i, h := range tc.chunk {
				samples = append(samples, hsample{int64(i) * 1000, h})
			}
			c, err := encodeHistograms(samples)
			if err != nil {
				t.Fatal(err)
			}
			before := bytes.Clone(c.Bytes())
			ts := int64(len(samples)) * 1000
			if got := c.Append(ts, tc.next); got != tc.want {
				t.Fatalf("Append = %v, want %v", got, tc.want)
			}
			if tc.want != Appended {
				if !bytes.Equal(c.Bytes(), before) {
					t.Fatal("Append changed the chunk")
				}
				// The chunk still appends what it did.
				if r := c.Append(ts, tc.chunk[len(tc.chunk)-1]); r != Appended {
					t.Fatalf("after %v, appending the last histogram again = %v", tc.want, r)
				}
				return
			}
			got, err := decodeHistograms(&HistogramIterator{}, c.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			if d := diffHistogramSamples(got, append(samples, hsample{ts, tc.next})); d != "" {
				t.Fatal(d)
			}
		})
	}
}

// TestFloatHistogramAppendResult runs the same cases through the float
// chunk.
func TestFloatHistogramAppendResult(t *testing.T) {
	for _, tc := range appendResultCases() {
		t.Run(tc.name, func(t *testing.T) {
			var samples []fhsample
			for i, h := range tc.chunk {
				samples = append(samples, fhsample{int64(i) * 1000, h.ToFloat(nil)})
			}
			c, err := encodeFloatHistograms(samples)
			if err != nil {
				t.Fatal(err)
			}
			before := bytes.Clone(c.Bytes())
			ts := int64(len(samples)) * 1000
			next := tc.next.ToFloat(nil)
			if got := c.Append(ts, next); got != tc.want {
				t.Fatalf("Append = %v, want %v", got, tc.want)
			}
			if tc.want != Appended {
				if !bytes.Equal(c.Bytes(), before) {
					t.Fatal("Append changed the chunk")
				}
				return
			}
			got, err := decodeFloatHistograms(&FloatHistogramIterator{}, c.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			if d := diffFloatHistogramSamples(got, append(samples, fhsample{ts, next})); d != "" {
				t.Fatal(d)
			}
		})
	}
}

// TestFloatHistogramNaNNotReset checks that NaN counts, which compare
// lower than nothing, never signal a reset.
func TestFloatHistogramNaNNotReset(t *testing.T) {
	fh := func(v float64) *histogram.FloatHistogram {
		return &histogram.FloatHistogram{Count: v, ZeroCount: v, Sum: 1, PositiveSpans: []histogram.Span{{Offset: 0, Length: 1}}, PositiveBuckets: []float64{v}}
	}
	c := NewFloatHistogramChunk()
	// 1 after NaN is no decrease: NaN < 1 and 1 < NaN are both false.
	for i, v := range []float64{5, math.NaN(), 1, math.NaN(), math.Inf(1)} {
		if r := c.Append(int64(i), fh(v)); r != Appended {
			t.Fatalf("append %d (%g) = %v, want Appended", i, v, r)
		}
	}
	if r := c.Append(9, fh(3)); r != CounterResetDetected {
		t.Fatalf("3 after +Inf = %v, want CounterResetDetected", r)
	}
}

// TestHistogramFullChunk fills a chunk to math.MaxUint16 samples: then
// every append, a stale marker's included, needs a new chunk, and the
// chunk round-trips.
func TestHistogramFullChunk(t *testing.T) {
	c, fc := NewHistogramChunk(), NewFloatHistogramChunk()
	h := hist(0, 0, buckets{0: 0}, nil)
	fh := h.ToFloat(nil)
	for i := range math.MaxUint16 {
		h.PositiveBuckets[0] = int64(i)
		h.Count = uint64(i)
		fh.PositiveBuckets[0], fh.Count = float64(i), float64(i)
		if c.Append(int64(i), h) != Appended || fc.Append(int64(i), fh) != Appended {
			t.Fatalf("append %d failed", i)
		}
	}
	for _, next := range []*histogram.Histogram{h, staleHist(), withHint(h, histogram.GaugeType)} {
		if r := c.Append(math.MaxUint16, next); r != NeedNewChunk {
			t.Fatalf("append to a full chunk = %v, want NeedNewChunk", r)
		}
		if r := fc.Append(math.MaxUint16, next.ToFloat(nil)); r != NeedNewChunk {
			t.Fatalf("append to a full float chunk = %v, want NeedNewChunk", r)
		}
	}
	// A reset is reported as such even when the chunk is full.
	if r := c.Append(math.MaxUint16, hist(0, 0, nil, nil)); r != CounterResetDetected {
		t.Fatalf("reset into a full chunk = %v, want CounterResetDetected", r)
	}
	it := NewHistogramIterator(c.Bytes())
	n := 0
	for it.Next() {
		if got := it.AtHistogram(nil).Count; got != uint64(n) {
			t.Fatalf("histogram %d has count %d", n, got)
		}
		n++
	}
	if it.Err() != nil || n != math.MaxUint16 {
		t.Fatalf("decoded %d histograms, err %v", n, it.Err())
	}
}

// TestHistogramAppendInvalidPanics checks that histograms whose spans do
// not describe their buckets are refused loudly rather than stored wrong.
func TestHistogramAppendInvalidPanics(t *testing.T) {
	valid := func() *histogram.Histogram { return hist(0, 1, buckets{0: 1, 1: 2}, buckets{0: 1}) }
	for name, h := range map[string]*histogram.Histogram{
		"too few buckets":  {Schema: 3, ZeroThreshold: 0.001, PositiveSpans: []histogram.Span{{Offset: 0, Length: 3}}, PositiveBuckets: []int64{1, 1}},
		"too many buckets": {Schema: 3, ZeroThreshold: 0.001, PositiveSpans: []histogram.Span{{Offset: 0, Length: 1}}, PositiveBuckets: []int64{1, 1}},
		"negative gap":     {Schema: 3, ZeroThreshold: 0.001, PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}, {Offset: -2, Length: 1}}, PositiveBuckets: []int64{1, 1, 1}},
		"negative side":    {Schema: 3, ZeroThreshold: 0.001, NegativeSpans: []histogram.Span{{Offset: 0, Length: 2}}, NegativeBuckets: []int64{1}},
	} {
		for _, first := range []bool{true, false} {
			c := NewHistogramChunk()
			if !first {
				c.Append(0, valid())
			}
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("%s (first %v): Append did not panic", name, first)
					}
				}()
				c.Append(1, h)
			}()
			fc := NewFloatHistogramChunk()
			if !first {
				fc.Append(0, valid().ToFloat(nil))
			}
			fh := &histogram.FloatHistogram{Schema: 3, ZeroThreshold: 0.001, PositiveSpans: h.PositiveSpans, NegativeSpans: h.NegativeSpans}
			for _, b := range h.PositiveBuckets {
				fh.PositiveBuckets = append(fh.PositiveBuckets, float64(b))
			}
			for _, b := range h.NegativeBuckets {
				fh.NegativeBuckets = append(fh.NegativeBuckets, float64(b))
			}
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("%s (first %v): float Append did not panic", name, first)
					}
				}()
				fc.Append(1, fh)
			}()
		}
	}
}

// TestHistogramAppendKeepsInput checks that Append neither modifies nor
// keeps the histogram it is given.
func TestHistogramAppendKeepsInput(t *testing.T) {
	h := hist(1, 2, buckets{0: 1, 5: 2}, buckets{1: 3})
	h.PositiveSpans = append(h.PositiveSpans, histogram.Span{Offset: 2, Length: 0}) // canonicalized in the chunk, not in h
	want := h.Copy()
	c := NewHistogramChunk()
	c.Append(1, h)
	c.Append(2, hist(1, 2, buckets{0: 1, 3: 0, 5: 2}, buckets{1: 3}))
	if !h.Equals(want) || len(h.PositiveSpans) != len(want.PositiveSpans) {
		t.Fatalf("Append changed its input: %v, want %v", h, want)
	}
	h.PositiveBuckets[0] = 100
	h.PositiveSpans[0].Offset = -5
	got, err := decodeHistograms(&HistogramIterator{}, c.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if d := diffHistogram(got[0].h, want, false); d != "" {
		t.Fatalf("chunk changed with its input: %s", d)
	}
}
