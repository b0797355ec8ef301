package chunkenc

import (
	"bytes"
	"maps"
	"math"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
)

// every15s returns samples of hs at 15s intervals from a fixed start.
func every15s(hs ...*histogram.Histogram) []hsample {
	out := make([]hsample, len(hs))
	for i, h := range hs {
		out[i] = hsample{1700000000000 + int64(i)*15000, h}
	}
	return out
}

var testBounds = []float64{0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10}

// histogramRoundTripCases are chunks of histograms that each fit in one
// chunk.
func histogramRoundTripCases() map[string][]hsample {
	nanObservations := hist(1, math.NaN(), buckets{1: 2}, nil)
	nanObservations.Count = 10 // seven NaN observations are in no bucket

	// Spans as clients may send them: an empty span, adjacent spans, and
	// explicit buckets of count 0.
	odd := &histogram.Histogram{
		Schema: 3, ZeroThreshold: 0.001, Count: 9, Sum: 4,
		PositiveSpans:   []histogram.Span{{Offset: -2, Length: 2}, {Offset: 3, Length: 0}, {Offset: 0, Length: 1}, {Offset: 0, Length: 2}},
		PositiveBuckets: []int64{1, -1, 3, 0, 2}, // 1 0 3 3 5... absolute
		NegativeSpans:   []histogram.Span{{Offset: 0, Length: 0}},
	}
	odd.Count = 1 + 0 + 3 + 3 + 5
	oddNext := odd.Copy()
	oddNext.PositiveBuckets = []int64{2, -1, 3, 0, 2}
	oddNext.Count++

	extremes := hist(math.MaxUint64/2, math.Inf(1), buckets{-1 << 30: math.MaxInt64 / 4, 1<<30 - 1: math.MaxInt64 / 4}, buckets{0: 1})
	extremes2 := hist(math.MaxUint64-1, math.Inf(-1), buckets{-1 << 30: math.MaxInt64 / 2, 1<<30 - 1: math.MaxInt64/4 + 1}, buckets{0: math.MaxInt64})
	extremes2.Count = math.MaxUint64

	cases := map[string][]hsample{
		"one histogram":   every15s(hist(3, 12.5, buckets{0: 1, 1: 2, 5: 7}, nil)),
		"empty histogram": every15s(&histogram.Histogram{}, &histogram.Histogram{}, &histogram.Histogram{Sum: 1}),
		"zero bucket only": every15s(
			hist(0, 0, nil, nil), hist(5, 0, nil, nil), hist(5, 0, nil, nil), hist(1e6, 0, nil, nil),
		),
		"negative buckets": every15s(
			hist(0, -3, nil, buckets{1: 1, 2: 2}),
			hist(0, -7, buckets{0: 1}, buckets{1: 2, 2: 5}),
			hist(2, -9, buckets{0: 1}, buckets{-4: 1, 1: 3, 2: 5, 9: 1}),
		),
		"layout grows": every15s(
			hist(0, 1, buckets{3: 1, 4: 1}, nil),
			hist(0, 2, buckets{3: 1, 4: 2, 5: 1}, nil),                        // after the end
			hist(0, 3, buckets{-7: 1, 3: 1, 4: 2, 5: 1}, nil),                 // before the start
			hist(0, 4, buckets{-7: 1, 0: 4, 3: 1, 4: 3, 5: 1}, buckets{2: 1}), // in a gap; first negative
			hist(1, 5, buckets{-7: 2, 0: 4, 1: 1, 3: 1, 4: 3, 5: 1, 6: 0}, buckets{1: 1, 2: 1}),
			hist(1, 6, buckets{-7: 2, 0: 4, 1: 1, 3: 1, 4: 3, 5: 1, 6: 0}, buckets{1: 1, 2: 1}),
		),
		"buckets vanish while zero": every15s(
			hist(0, 1, buckets{1: 0, 2: 3, 3: 0}, buckets{1: 0}),
			hist(0, 2, buckets{2: 4}, nil),
			hist(0, 3, buckets{1: 0, 2: 5, 4: 1}, nil),
		),
		"custom buckets": every15s(
			customHist(testBounds, 0.1, buckets{0: 1, 3: 2}),
			customHist(testBounds, 0.3, buckets{0: 1, 3: 4}),
			customHist(slices.Clone(testBounds), 1.3, buckets{0: 2, 1: 1, 3: 4, 8: 1}), // same bounds, another slice; new buckets
			customHist(testBounds, 1.8, buckets{0: 2, 1: 1, 3: 4, 8: 1}),
		),
		"custom buckets no bounds": every15s(
			customHist(nil, 1, buckets{0: 1}), customHist(nil, 2, buckets{0: 2}),
		),
		"stale marker": every15s(
			hist(1, 1, buckets{1: 1}, nil), staleHist(), hist(1, 2, buckets{1: 2}, nil), staleHist(), staleHist(),
		),
		"stale first": every15s(
			staleHist(), staleHist(), withHint(hist(1, 1, buckets{1: 1}, nil), histogram.CounterReset), hist(1, 2, buckets{1: 2}, nil),
		),
		"stale only":   every15s(staleHist(), staleHist()),
		"custom stale": every15s(customHist(testBounds, 0.1, buckets{0: 1}), staleHist(), customHist(testBounds, 0.2, buckets{0: 2})),
		"gauge": every15s(
			withHint(hist(5, 3, buckets{1: 3, 2: 7}, buckets{0: 1}), histogram.GaugeType),
			withHint(hist(1, -3, buckets{1: 1}, nil), histogram.GaugeType),
			staleHist(),
			withHint(hist(9, 8, buckets{0: 4, 1: 0, 2: 9}, buckets{0: 3}), histogram.GaugeType),
			withHint(hist(0, 0, nil, nil), histogram.GaugeType),
		),
		"hint counter reset":     every15s(withHint(hist(0, 1, buckets{0: 1}, nil), histogram.CounterReset), hist(0, 2, buckets{0: 2}, nil)),
		"hint not counter reset": every15s(withHint(hist(0, 1, buckets{0: 1}, nil), histogram.NotCounterReset), hist(0, 2, buckets{0: 2}, nil)),
		"hint unknown value":     every15s(withHint(hist(0, 1, buckets{0: 1}, nil), 17), hist(0, 2, buckets{0: 2}, nil)),
		"nan observations":       every15s(hist(1, 2, buckets{1: 2}, nil), nanObservations, nanObservations),
		"odd spans":              every15s(odd, oddNext, oddNext.Copy().Compact(0), oddNext),
		"extreme values":         every15s(extremes, extremes2, extremes2),
		"special sums": every15s(
			hist(0, math.NaN(), nil, nil), hist(0, math.Float64frombits(0x7ff8000000000001), nil, nil),
			hist(0, math.Inf(-1), nil, nil), hist(0, math.Copysign(0, -1), nil, nil), hist(0, math.MaxFloat64, nil, nil),
		),
		"realistic":      realisticHistograms(120, 20, 1),
		"realistic busy": realisticHistograms(120, 1000, 2),
	}

	// Every timestamp bucket, and deltas that wrap around int64.
	var times []hsample
	t, d := int64(1700000000000), int64(15000)
	for i, dod := range []int64{0, 1, -1, 63, -64, 64, -65, 8191, -8192, 8192, -8193, 524287, -524288, 524288, -524289, 1 << 40, -(1 << 40), 0} {
		d += dod
		t += d
		times = append(times, hsample{t, hist(0, float64(i), buckets{0: int64(i)}, nil)})
	}
	cases["irregular intervals"] = times
	var edges []hsample
	for i, ts := range []int64{math.MinInt64, -1, 0, math.MaxInt64 - 1, math.MaxInt64} {
		edges = append(edges, hsample{ts, hist(0, 0, buckets{0: int64(i)}, nil)})
	}
	cases["timestamp edges"] = edges
	return cases
}

func TestHistogramRoundTrip(t *testing.T) {
	it := &HistogramIterator{}
	cases := histogramRoundTripCases()
	for _, name := range slices.Sorted(maps.Keys(cases)) {
		want := cases[name]
		t.Run(name, func(t *testing.T) {
			c, err := encodeHistograms(want)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.NumSamples(); got != len(want) {
				t.Fatalf("NumSamples() = %d, want %d", got, len(want))
			}
			got, err := decodeHistograms(it, c.Bytes())
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if d := diffHistogramSamples(got, want); d != "" {
				t.Fatal(d)
			}
			if it.Next() || it.Err() != nil {
				t.Fatalf("Next after end = true or Err = %v", it.Err())
			}
		})
	}
}

// TestHistogramAsFloatRoundTrip checks AtFloatHistogram of the integer
// iterator and the float chunk with the same histograms.
func TestHistogramAsFloatRoundTrip(t *testing.T) {
	it := &HistogramIterator{}
	fit := &FloatHistogramIterator{}
	cases := histogramRoundTripCases()
	for _, name := range slices.Sorted(maps.Keys(cases)) {
		want := toFloatSamples(cases[name])
		t.Run(name, func(t *testing.T) {
			c, err := encodeHistograms(cases[name])
			if err != nil {
				t.Fatal(err)
			}
			it.Reset(c.Bytes())
			var got []fhsample
			for it.Next() {
				got = append(got, fhsample{it.AtT(), it.AtFloatHistogram(nil)})
			}
			if it.Err() != nil {
				t.Fatal(it.Err())
			}
			if d := diffFloatHistogramSamples(got, want); d != "" {
				t.Fatalf("AtFloatHistogram: %s", d)
			}

			fc, err := encodeFloatHistograms(want)
			if err != nil {
				t.Fatal(err)
			}
			got, err = decodeFloatHistograms(fit, fc.Bytes())
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if d := diffFloatHistogramSamples(got, want); d != "" {
				t.Fatalf("float chunk: %s", d)
			}
		})
	}
}

// floatHistogramRoundTripCases are float histograms that integer ones
// cannot be.
func floatHistogramRoundTripCases() map[string][]fhsample {
	fh := func(zc, count, sum float64, pos ...float64) *histogram.FloatHistogram {
		h := &histogram.FloatHistogram{Schema: 0, ZeroThreshold: 1e-9, ZeroCount: zc, Count: count, Sum: sum, PositiveBuckets: pos}
		if len(pos) > 0 {
			h.PositiveSpans = []histogram.Span{{Offset: -1, Length: uint32(len(pos))}}
		}
		return h
	}
	gauge := func(h *histogram.FloatHistogram) *histogram.FloatHistogram {
		h.CounterResetHint = histogram.GaugeType
		return h
	}
	nan := math.NaN()
	inf := math.Inf(1)
	return map[string][]fhsample{
		"fractions": {
			{1000, fh(0.5, 3.75, 1.25, 1.5, 1.75)},
			{2000, fh(0.5, 4.1, 1.3, 1.6, 1.9999999)},
			{3000, fh(0.6, 4.3000000000000001, 1.5, 1.7, 2)},
		},
		"count not the sum of buckets": {{1000, fh(0, 0.1+0.2, 0, 0.1, 0.2)}, {2000, fh(0, 0.3, 0, 0.1, 0.2)}},
		"special values": {
			{1, gauge(fh(nan, nan, nan, nan, inf))},
			{2, gauge(fh(inf, inf, -inf, math.Copysign(0, -1), math.SmallestNonzeroFloat64))},
			{3, gauge(fh(math.Float64frombits(0x7ff8000000000001), math.MaxFloat64, 0, math.MaxFloat64, -1))},
			{4, gauge(fh(0, 0, 0, 0, 0))},
		},
		"rates": rateHistograms(120, 20, 3),
		"layout grows": {
			{1000, fh(0, 1, 1, 1)},
			{2000, &histogram.FloatHistogram{Schema: 0, ZeroThreshold: 1e-9, Count: 3.5, Sum: 2, PositiveSpans: []histogram.Span{{Offset: -3, Length: 1}, {Offset: 1, Length: 1}}, PositiveBuckets: []float64{2.5, 1}}},
			{3000, &histogram.FloatHistogram{Schema: 0, ZeroThreshold: 1e-9, Count: 4.5, Sum: 3, PositiveSpans: []histogram.Span{{Offset: -3, Length: 3}}, PositiveBuckets: []float64{2.5, 0.5, 1.5}}},
		},
		"custom": {
			{1000, &histogram.FloatHistogram{Schema: histogram.CustomBucketsSchema, Count: 2.5, Sum: 1, CustomValues: testBounds, PositiveSpans: []histogram.Span{{Offset: 1, Length: 2}}, PositiveBuckets: []float64{2, 0.5}}},
			{2000, &histogram.FloatHistogram{Schema: histogram.CustomBucketsSchema, Count: 3.5, Sum: 2, CustomValues: testBounds, PositiveSpans: []histogram.Span{{Offset: 0, Length: 3}, {Offset: 2, Length: 1}}, PositiveBuckets: []float64{1, 2, 0.5, 0.5}}},
		},
		"stale": {{1000, staleFloatHist()}, {2000, fh(0, 1, 1, 1)}, {3000, staleFloatHist()}, {4000, fh(0, 2, 1, 2)}},
	}
}

func TestFloatHistogramRoundTrip(t *testing.T) {
	it := &FloatHistogramIterator{}
	cases := floatHistogramRoundTripCases()
	for _, name := range slices.Sorted(maps.Keys(cases)) {
		want := cases[name]
		t.Run(name, func(t *testing.T) {
			c, err := encodeFloatHistograms(want)
			if err != nil {
				t.Fatal(err)
			}
			got, err := decodeFloatHistograms(it, c.Bytes())
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if d := diffFloatHistogramSamples(got, want); d != "" {
				t.Fatal(d)
			}
		})
	}
}

func TestHistogramEmptyChunk(t *testing.T) {
	for _, b := range [][]byte{NewHistogramChunk().Bytes(), NewFloatHistogramChunk().Bytes()} {
		if !bytes.Equal(b, []byte{0, 0}) {
			t.Fatalf("Bytes() = %x, want 0000", b)
		}
	}
	it := NewHistogramIterator([]byte{0, 0})
	if it.Next() || it.Err() != nil || it.Header() != UnknownCounterReset {
		t.Fatalf("empty chunk: Next, Err, Header = true or %v, %v", it.Err(), it.Header())
	}
	fit := NewFloatHistogramIterator([]byte{0, 0})
	if fit.Next() || fit.Err() != nil {
		t.Fatalf("empty float chunk: Next = true or Err = %v", fit.Err())
	}
}

// TestHistogramHeader checks the header every first hint gives, and that a
// stale marker's gives way to the first real histogram's.
func TestHistogramHeader(t *testing.T) {
	for _, tc := range []struct {
		hints []histogram.CounterResetHint // of the appended histograms
		stale int                          // how many stale markers come first
		want  CounterResetHeader
	}{
		{[]histogram.CounterResetHint{histogram.UnknownCounterReset}, 0, UnknownCounterReset},
		{[]histogram.CounterResetHint{histogram.CounterReset, histogram.NotCounterReset}, 0, CounterReset},
		{[]histogram.CounterResetHint{histogram.NotCounterReset, histogram.UnknownCounterReset}, 0, NotCounterReset},
		{[]histogram.CounterResetHint{histogram.GaugeType, histogram.GaugeType}, 0, GaugeType},
		{[]histogram.CounterResetHint{histogram.GaugeType}, 2, GaugeType},
		{[]histogram.CounterResetHint{histogram.CounterReset}, 1, CounterReset},
		{nil, 1, UnknownCounterReset},
	} {
		c, fc := NewHistogramChunk(), NewFloatHistogramChunk()
		var ts int64
		for range tc.stale {
			ts++
			c.Append(ts, staleHist())
			fc.Append(ts, staleFloatHist())
		}
		for i, hint := range tc.hints {
			ts++
			h := withHint(hist(0, float64(i), buckets{0: int64(i)}, nil), hint)
			if r := c.Append(ts, h); r != Appended {
				t.Fatalf("%+v: Append %d = %v", tc, i, r)
			}
			if r := fc.Append(ts, h.ToFloat(nil)); r != Appended {
				t.Fatalf("%+v: float Append %d = %v", tc, i, r)
			}
		}
		if got := NewHistogramIterator(c.Bytes()).Header(); got != tc.want {
			t.Errorf("%+v: Header() = %v, want %v", tc, got, tc.want)
		}
		if got := NewFloatHistogramIterator(fc.Bytes()).Header(); got != tc.want {
			t.Errorf("%+v: float Header() = %v, want %v", tc, got, tc.want)
		}
	}
}
