package chunkenc

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/prometheus/prometheus/model/histogram"
)

// hsample is a test sample of an integer histogram chunk.
type hsample struct {
	t int64
	h *histogram.Histogram
}

// fhsample is a test sample of a float histogram chunk.
type fhsample struct {
	t int64
	h *histogram.FloatHistogram
}

// buckets maps bucket indices to absolute counts, for building test
// histograms.
type buckets map[int32]int64

// hist returns an exponential histogram of schema 3 with the given zero
// count and buckets, its count their total and its sum sum. Its spans are
// minimal (see spansOf).
func hist(zeroCount uint64, sum float64, pos, neg buckets) *histogram.Histogram {
	h := &histogram.Histogram{Schema: 3, ZeroThreshold: 0.001, ZeroCount: zeroCount, Sum: sum}
	h.PositiveSpans, h.PositiveBuckets = spansOf(pos)
	h.NegativeSpans, h.NegativeBuckets = spansOf(neg)
	h.Count = zeroCount
	for _, v := range pos {
		h.Count += uint64(v)
	}
	for _, v := range neg {
		h.Count += uint64(v)
	}
	return h
}

// customHist returns a histogram with custom bounds and the given buckets.
func customHist(bounds []float64, sum float64, pos buckets) *histogram.Histogram {
	h := hist(0, sum, pos, nil)
	h.Schema = histogram.CustomBucketsSchema
	h.ZeroThreshold = 0
	h.CustomValues = bounds
	return h
}

// spansOf returns canonical spans and delta-encoded buckets for b; buckets
// present with count 0 stay in.
func spansOf(b buckets) ([]histogram.Span, []int64) {
	var sb spanBuilder
	var deltas []int64
	var prev int64
	for _, idx := range slices.Sorted(maps.Keys(b)) {
		sb.add(int64(idx))
		deltas = append(deltas, b[idx]-prev)
		prev = b[idx]
	}
	return sb.spans, deltas
}

// withHint returns h with its hint set.
func withHint(h *histogram.Histogram, hint histogram.CounterResetHint) *histogram.Histogram {
	h.CounterResetHint = hint
	return h
}

// staleHist is a stale marker as Prometheus writes it.
func staleHist() *histogram.Histogram {
	return &histogram.Histogram{Sum: math.Float64frombits(staleMarkerBits)}
}

func staleFloatHist() *histogram.FloatHistogram {
	return &histogram.FloatHistogram{Sum: math.Float64frombits(staleMarkerBits)}
}

// bucketCounts returns the non-zero buckets of spans and counts (deltas
// if the counts are delta-encoded) as index -> bits of the count, float
// counts as their bits and integer ones as themselves; a count of +0 is
// left out, so that histograms that differ only in buckets of count 0
// compare equal.
func bucketCounts[T int64 | float64](spans []histogram.Span, counts []T, deltas bool) map[int64]uint64 {
	out := map[int64]uint64{}
	c := spanCursor{spans: spans}
	var acc T
	for _, v := range counts {
		idx, ok := c.advance()
		if !ok {
			out[math.MinInt64] = 1 // more counts than spans: never equal to a valid histogram
			break
		}
		if deltas {
			acc += v
		} else {
			acc = v
		}
		bits := any(acc)
		var u uint64
		switch x := bits.(type) {
		case int64:
			u = uint64(x)
		case float64:
			u = math.Float64bits(x)
		}
		if u != 0 {
			out[idx] = u
		}
	}
	return out
}

// diffHistogram describes how got differs from want, or returns "": the
// scalar fields must match bit for bit, the buckets up to ones of count 0.
// Fields a schema does not use are ignored (ZeroThreshold, ZeroCount and
// the negative buckets for custom buckets, CustomValues for exponential
// ones), as they are not stored. Hints are compared only if checkHint.
func diffHistogram(got, want *histogram.Histogram, checkHint bool) string {
	var d []string
	if got.Schema != want.Schema {
		d = append(d, fmt.Sprintf("schema %d, want %d", got.Schema, want.Schema))
	}
	if got.Count != want.Count {
		d = append(d, fmt.Sprintf("count %d, want %d", got.Count, want.Count))
	}
	if math.Float64bits(got.Sum) != math.Float64bits(want.Sum) {
		d = append(d, fmt.Sprintf("sum %#x, want %#x", math.Float64bits(got.Sum), math.Float64bits(want.Sum)))
	}
	if checkHint && got.CounterResetHint != want.CounterResetHint {
		d = append(d, fmt.Sprintf("hint %d, want %d", got.CounterResetHint, want.CounterResetHint))
	}
	if histogram.IsCustomBucketsSchema(want.Schema) {
		if !sameFloats(got.CustomValues, want.CustomValues) {
			d = append(d, fmt.Sprintf("custom values %v, want %v", got.CustomValues, want.CustomValues))
		}
	} else {
		if math.Float64bits(got.ZeroThreshold) != math.Float64bits(want.ZeroThreshold) {
			d = append(d, fmt.Sprintf("zero threshold %g, want %g", got.ZeroThreshold, want.ZeroThreshold))
		}
		if got.ZeroCount != want.ZeroCount {
			d = append(d, fmt.Sprintf("zero count %d, want %d", got.ZeroCount, want.ZeroCount))
		}
		if g, w := bucketCounts(got.NegativeSpans, got.NegativeBuckets, true), bucketCounts(want.NegativeSpans, want.NegativeBuckets, true); !maps.Equal(g, w) {
			d = append(d, fmt.Sprintf("negative buckets %v, want %v", g, w))
		}
	}
	if g, w := bucketCounts(got.PositiveSpans, got.PositiveBuckets, true), bucketCounts(want.PositiveSpans, want.PositiveBuckets, true); !maps.Equal(g, w) {
		d = append(d, fmt.Sprintf("positive buckets %v, want %v", g, w))
	}
	return strings.Join(d, "; ")
}

// diffFloatHistogram is diffHistogram for float histograms; counts are
// compared bit for bit.
func diffFloatHistogram(got, want *histogram.FloatHistogram, checkHint bool) string {
	var d []string
	if got.Schema != want.Schema {
		d = append(d, fmt.Sprintf("schema %d, want %d", got.Schema, want.Schema))
	}
	if math.Float64bits(got.Count) != math.Float64bits(want.Count) {
		d = append(d, fmt.Sprintf("count %g, want %g", got.Count, want.Count))
	}
	if math.Float64bits(got.Sum) != math.Float64bits(want.Sum) {
		d = append(d, fmt.Sprintf("sum %#x, want %#x", math.Float64bits(got.Sum), math.Float64bits(want.Sum)))
	}
	if checkHint && got.CounterResetHint != want.CounterResetHint {
		d = append(d, fmt.Sprintf("hint %d, want %d", got.CounterResetHint, want.CounterResetHint))
	}
	if histogram.IsCustomBucketsSchema(want.Schema) {
		if !sameFloats(got.CustomValues, want.CustomValues) {
			d = append(d, fmt.Sprintf("custom values %v, want %v", got.CustomValues, want.CustomValues))
		}
	} else {
		if math.Float64bits(got.ZeroThreshold) != math.Float64bits(want.ZeroThreshold) {
			d = append(d, fmt.Sprintf("zero threshold %g, want %g", got.ZeroThreshold, want.ZeroThreshold))
		}
		if math.Float64bits(got.ZeroCount) != math.Float64bits(want.ZeroCount) {
			d = append(d, fmt.Sprintf("zero count %g, want %g", got.ZeroCount, want.ZeroCount))
		}
		if g, w := bucketCounts(got.NegativeSpans, got.NegativeBuckets, false), bucketCounts(want.NegativeSpans, want.NegativeBuckets, false); !maps.Equal(g, w) {
			d = append(d, fmt.Sprintf("negative buckets %v, want %v", g, w))
		}
	}
	if g, w := bucketCounts(got.PositiveSpans, got.PositiveBuckets, false), bucketCounts(want.PositiveSpans, want.PositiveBuckets, false); !maps.Equal(g, w) {
		d = append(d, fmt.Sprintf("positive buckets %v, want %v", g, w))
	}
	return strings.Join(d, "; ")
}

// expectedHints returns the hints the iterator gives samples appended to
// one chunk, as Prometheus' storage gives them: GaugeType throughout a
// gauge chunk; in a chunk of counters, UnknownCounterReset to its first
// sample and NotCounterReset to the others; stale markers have none.
func expectedHints(hints []histogram.CounterResetHint, stale []bool) []histogram.CounterResetHint {
	out := make([]histogram.CounterResetHint, len(hints))
	// The header is the first real histogram's: a gauge chunk's samples
	// are all gauges.
	gauge := false
	for i, h := range hints {
		if !stale[i] {
			gauge = h == histogram.GaugeType
			break
		}
	}
	for i := range hints {
		switch {
		case stale[i]:
			out[i] = histogram.UnknownCounterReset
		case gauge:
			out[i] = histogram.GaugeType
		case i == 0:
			// Whatever the header says, as Prometheus' storage.
			out[i] = histogram.UnknownCounterReset
		default:
			out[i] = histogram.NotCounterReset
		}
	}
	return out
}

// encodeHistograms appends samples to a new chunk; every append must
// succeed.
func encodeHistograms(samples []hsample) (*HistogramChunk, error) {
	c := NewHistogramChunk()
	for i, s := range samples {
		if r := c.Append(s.t, s.h); r != Appended {
			return c, fmt.Errorf("append %d: %v", i, r)
		}
	}
	return c, nil
}

func encodeFloatHistograms(samples []fhsample) (*FloatHistogramChunk, error) {
	c := NewFloatHistogramChunk()
	for i, s := range samples {
		if r := c.Append(s.t, s.h); r != Appended {
			return c, fmt.Errorf("append %d: %v", i, r)
		}
	}
	return c, nil
}

// decodeHistograms iterates b to its end.
func decodeHistograms(it *HistogramIterator, b []byte) ([]hsample, error) {
	it.Reset(b)
	var out []hsample
	for it.Next() {
		out = append(out, hsample{it.AtT(), it.AtHistogram(nil)})
	}
	return out, it.Err()
}

func decodeFloatHistograms(it *FloatHistogramIterator, b []byte) ([]fhsample, error) {
	it.Reset(b)
	var out []fhsample
	for it.Next() {
		out = append(out, fhsample{it.AtT(), it.AtFloatHistogram(nil)})
	}
	return out, it.Err()
}

// diffHistogramSamples compares decoded samples with appended ones,
// hints as the iterator gives them.
func diffHistogramSamples(got, want []hsample) string {
	if len(got) != len(want) {
		return fmt.Sprintf("decoded %d samples, want %d", len(got), len(want))
	}
	hints := make([]histogram.CounterResetHint, len(want))
	stale := make([]bool, len(want))
	for i, s := range want {
		hints[i], stale[i] = s.h.CounterResetHint, math.Float64bits(s.h.Sum) == staleMarkerBits
	}
	wantHints := expectedHints(hints, stale)
	for i := range want {
		w := want[i].h
		if stale[i] {
			w = staleHist()
		}
		w = w.Copy()
		w.CounterResetHint = wantHints[i]
		if got[i].t != want[i].t {
			return fmt.Sprintf("sample %d: t = %d, want %d", i, got[i].t, want[i].t)
		}
		if d := diffHistogram(got[i].h, w, true); d != "" {
			return fmt.Sprintf("sample %d: %s\n got %v\nwant %v", i, d, got[i].h, w)
		}
	}
	return ""
}

func diffFloatHistogramSamples(got, want []fhsample) string {
	if len(got) != len(want) {
		return fmt.Sprintf("decoded %d samples, want %d", len(got), len(want))
	}
	hints := make([]histogram.CounterResetHint, len(want))
	stale := make([]bool, len(want))
	for i, s := range want {
		hints[i], stale[i] = s.h.CounterResetHint, math.Float64bits(s.h.Sum) == staleMarkerBits
	}
	wantHints := expectedHints(hints, stale)
	for i := range want {
		w := want[i].h
		if stale[i] {
			w = staleFloatHist()
		}
		w = w.Copy()
		w.CounterResetHint = wantHints[i]
		if got[i].t != want[i].t {
			return fmt.Sprintf("sample %d: t = %d, want %d", i, got[i].t, want[i].t)
		}
		if d := diffFloatHistogram(got[i].h, w, true); d != "" {
			return fmt.Sprintf("sample %d: %s\n got %v\nwant %v", i, d, got[i].h, w)
		}
	}
	return ""
}

// toFloatSamples converts integer samples for the float chunk.
func toFloatSamples(samples []hsample) []fhsample {
	out := make([]fhsample, len(samples))
	for i, s := range samples {
		out[i] = fhsample{s.t, s.h.ToFloat(nil)}
	}
	return out
}

// realisticHistograms returns n histograms of a series scraped every 15s
// with up to 5ms of jitter: a latency histogram of schema 3 that starts
// with 2000 observations and gets about rate more per scrape (give or
// take 10%), log-normally
// distributed around 250ms so that about 20 buckets are populated and
// rare ones keep appearing in the tails, plus 1% observations of 0.
func realisticHistograms(n, rate int, seed uint64) []hsample {
	rng := rand.New(rand.NewPCG(seed, 1))
	counts := buckets{}
	var zeros uint64
	var sum float64
	observe := func(k int) {
		for range k {
			if rng.IntN(100) == 0 {
				zeros++
				continue
			}
			v := 0.25 * math.Exp(0.3*rng.NormFloat64())
			counts[int32(math.Ceil(math.Log2(v)*8))]++
			sum += v
		}
	}
	observe(2000)
	out := make([]hsample, n)
	for i := range out {
		// The load varies by about 10% from scrape to scrape.
		observe(max(0, int(math.Round(float64(rate)*(1+0.1*rng.NormFloat64())))))
		out[i] = hsample{1700000000000 + int64(i)*15000 + rng.Int64N(11) - 5, hist(zeros, sum, counts, nil)}
	}
	return out
}

// rateHistograms returns n gauge float histograms like those a recording
// rule computes from realisticHistograms: per-second rates over the last
// four scrapes, fractions that use the whole mantissa.
func rateHistograms(n, rate int, seed uint64) []fhsample {
	src := realisticHistograms(n+4, rate, seed)
	out := make([]fhsample, n)
	for i := range out {
		cur, old := src[i+4].h.ToFloat(nil), src[i].h.ToFloat(nil)
		secs := float64(src[i+4].t-src[i].t) / 1000
		// Buckets of old are a subset of cur's: subtract them in place.
		oldCounts := bucketCounts(old.PositiveSpans, old.PositiveBuckets, false)
		c := spanCursor{spans: cur.PositiveSpans}
		for j := range cur.PositiveBuckets {
			idx, _ := c.advance()
			cur.PositiveBuckets[j] = (cur.PositiveBuckets[j] - math.Float64frombits(oldCounts[idx])) / secs
		}
		cur.Count = (cur.Count - old.Count) / secs
		cur.ZeroCount = (cur.ZeroCount - old.ZeroCount) / secs
		cur.Sum = (cur.Sum - old.Sum) / secs
		cur.CounterResetHint = histogram.GaugeType
		out[i] = fhsample{src[i+4].t, cur}
	}
	return out
}

// withFinalLayout returns samples whose histograms have the spans of the
// last one, with buckets of count 0 where they had none, so that a chunk
// of them never re-encodes. The last layout must cover all the others, as
// it does for realisticHistograms, whose counts only grow.
func withFinalLayout(samples []hsample) []hsample {
	last := samples[len(samples)-1].h
	out := make([]hsample, len(samples))
	for i, s := range samples {
		h := s.h.Copy()
		h.PositiveSpans = slices.Clone(last.PositiveSpans)
		h.PositiveBuckets = make([]int64, len(last.PositiveBuckets))
		fits, valid := fitBuckets(h.PositiveBuckets, last.PositiveSpans, s.h.PositiveSpans, s.h.PositiveBuckets, true)
		if !fits || !valid {
			panic("withFinalLayout: the last layout does not cover them all")
		}
		for j := len(h.PositiveBuckets) - 1; j > 0; j-- {
			h.PositiveBuckets[j] -= h.PositiveBuckets[j-1] // back to deltas
		}
		out[i] = hsample{s.t, h}
	}
	return out
}

// asGauges returns samples with every histogram but stale markers marked
// a gauge.
func asGauges(samples []hsample) []hsample {
	out := make([]hsample, len(samples))
	for i, s := range samples {
		h := s.h.Copy()
		if math.Float64bits(h.Sum) != staleMarkerBits {
			h.CounterResetHint = histogram.GaugeType
		}
		out[i] = hsample{s.t, h}
	}
	return out
}
