package record

import (
	"bytes"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"

	"github.com/strata-db/strata/internal/storage"
)

// staleNaN is Prometheus' stale marker, a NaN with a payload that must
// survive a round trip.
var staleNaN = math.Float64frombits(0x7ff0000000000002)

func histogramFixture() []RefHistogramSample {
	return []RefHistogramSample{
		{Ref: 10, T: 1700000000000, H: &histogram.Histogram{
			CounterResetHint: histogram.NotCounterReset,
			Schema:           3,
			ZeroThreshold:    1e-128,
			ZeroCount:        5,
			Count:            42,
			Sum:              1234.5,
			PositiveSpans:    []histogram.Span{{Offset: -3, Length: 2}, {Offset: 4, Length: 3}},
			PositiveBuckets:  []int64{3, 2, -4, 10, -1},
			NegativeSpans:    []histogram.Span{{Offset: 0, Length: 1}},
			NegativeBuckets:  []int64{7},
		}},
		{Ref: 12, T: 1700000000000, H: &histogram.Histogram{Schema: 0, Count: 1, Sum: -0.5, ZeroCount: 1}},
	}
}

func floatHistogramFixture() []RefFloatHistogramSample {
	return []RefFloatHistogramSample{
		{Ref: 10, T: 1700000000000, FH: &histogram.FloatHistogram{
			CounterResetHint: histogram.CounterReset,
			Schema:           -2,
			ZeroThreshold:    0.001,
			ZeroCount:        2.5,
			Count:            40.25,
			Sum:              -17,
			PositiveSpans:    []histogram.Span{{Offset: 1, Length: 3}},
			PositiveBuckets:  []float64{1, 0.5, 30},
			NegativeSpans:    []histogram.Span{{Offset: -2, Length: 1}, {Offset: 1, Length: 1}},
			NegativeBuckets:  []float64{3, 3.25},
		}},
		{Ref: 3, T: 1699999999000, FH: &histogram.FloatHistogram{Schema: 8, Count: 1, Sum: 1, PositiveSpans: []histogram.Span{{Length: 1}}, PositiveBuckets: []float64{1}}},
	}
}

func equalSpans(a, b []histogram.Span) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func equalFloatBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// equalHistogram compares every field, floats bit for bit; nil and empty
// slices are equal.
func equalHistogram(a, b *histogram.Histogram) bool {
	if a.CounterResetHint != b.CounterResetHint || a.Schema != b.Schema ||
		math.Float64bits(a.ZeroThreshold) != math.Float64bits(b.ZeroThreshold) ||
		a.ZeroCount != b.ZeroCount || a.Count != b.Count || math.Float64bits(a.Sum) != math.Float64bits(b.Sum) ||
		!equalSpans(a.PositiveSpans, b.PositiveSpans) || !equalSpans(a.NegativeSpans, b.NegativeSpans) ||
		len(a.PositiveBuckets) != len(b.PositiveBuckets) || len(a.NegativeBuckets) != len(b.NegativeBuckets) ||
		!equalFloatBits(a.CustomValues, b.CustomValues) {
		return false
	}
	for i := range a.PositiveBuckets {
		if a.PositiveBuckets[i] != b.PositiveBuckets[i] {
			return false
		}
	}
	for i := range a.NegativeBuckets {
		if a.NegativeBuckets[i] != b.NegativeBuckets[i] {
			return false
		}
	}
	return true
}

func equalFloatHistogram(a, b *histogram.FloatHistogram) bool {
	return a.CounterResetHint == b.CounterResetHint && a.Schema == b.Schema &&
		math.Float64bits(a.ZeroThreshold) == math.Float64bits(b.ZeroThreshold) &&
		math.Float64bits(a.ZeroCount) == math.Float64bits(b.ZeroCount) &&
		math.Float64bits(a.Count) == math.Float64bits(b.Count) &&
		math.Float64bits(a.Sum) == math.Float64bits(b.Sum) &&
		equalSpans(a.PositiveSpans, b.PositiveSpans) && equalSpans(a.NegativeSpans, b.NegativeSpans) &&
		equalFloatBits(a.PositiveBuckets, b.PositiveBuckets) && equalFloatBits(a.NegativeBuckets, b.NegativeBuckets) &&
		equalFloatBits(a.CustomValues, b.CustomValues)
}

func equalHistogramSamples(a, b []RefHistogramSample) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Ref != b[i].Ref || a[i].T != b[i].T || !equalHistogram(a[i].H, b[i].H) {
			return false
		}
	}
	return true
}

func equalFloatHistogramSamples(a, b []RefFloatHistogramSample) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Ref != b[i].Ref || a[i].T != b[i].T || !equalFloatHistogram(a[i].FH, b[i].FH) {
			return false
		}
	}
	return true
}

func TestHistogramSamplesRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		hs   []RefHistogramSample
	}{
		{"none", nil},
		{"several series", histogramFixture()},
		{"empty histogram", []RefHistogramSample{{Ref: 1, T: 1, H: &histogram.Histogram{}}}},
		{"negative buckets only", []RefHistogramSample{{Ref: 2, T: 5, H: &histogram.Histogram{
			Schema:          -4,
			Count:           9,
			Sum:             -100,
			NegativeSpans:   []histogram.Span{{Offset: -2147483648, Length: 2}, {Offset: 2147483647, Length: 1}},
			NegativeBuckets: []int64{4, -1, math.MinInt64},
		}}}},
		{"custom buckets", []RefHistogramSample{{Ref: 3, T: 7, H: &histogram.Histogram{
			Schema:          histogram.CustomBucketsSchema,
			Count:           6,
			Sum:             12.5,
			PositiveSpans:   []histogram.Span{{Offset: 0, Length: 4}},
			PositiveBuckets: []int64{1, 1, 0, -1},
			CustomValues:    []float64{0.1, 0.5, 1, math.Inf(1)},
		}}}},
		{"stale NaN sum", []RefHistogramSample{{Ref: 4, T: 8, H: &histogram.Histogram{Schema: 1, Sum: staleNaN}}}},
		{"gauge hint", []RefHistogramSample{{Ref: 5, T: 9, H: &histogram.Histogram{
			CounterResetHint: histogram.GaugeType,
			Schema:           2,
			Count:            3,
			Sum:              math.Copysign(0, -1),
			PositiveSpans:    []histogram.Span{{Offset: 1, Length: 1}},
			PositiveBuckets:  []int64{3},
		}}}},
		{"extremes", []RefHistogramSample{
			{Ref: math.MaxUint64, T: math.MinInt64, H: &histogram.Histogram{
				Schema: math.MinInt32, ZeroCount: math.MaxUint64, Count: math.MaxUint64, ZeroThreshold: math.NaN(),
				PositiveSpans: []histogram.Span{{Offset: 0, Length: math.MaxUint32}},
			}},
			{Ref: 0, T: math.MaxInt64, H: &histogram.Histogram{Schema: math.MaxInt32, PositiveBuckets: []int64{math.MaxInt64}}},
		}},
	}
	var d Decoder
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := EncodeHistogramSamples(nil, tc.hs)
			if got := Kind(rec); got != HistogramSamples {
				t.Fatalf("Kind = %v, want %v", got, HistogramSamples)
			}
			got, err := d.HistogramSamples(rec, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !equalHistogramSamples(got, tc.hs) {
				t.Fatalf("got %+v, want %+v", got, tc.hs)
			}
			// Nothing may alias the record.
			for i := range rec {
				rec[i] = 0xff
			}
			if !equalHistogramSamples(got, tc.hs) {
				t.Fatal("decoded histograms changed when the record buffer was reused")
			}
		})
	}
}

func TestFloatHistogramSamplesRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		hs   []RefFloatHistogramSample
	}{
		{"none", nil},
		{"several series", floatHistogramFixture()},
		{"empty histogram", []RefFloatHistogramSample{{Ref: 1, T: 1, FH: &histogram.FloatHistogram{}}}},
		{"negative buckets only", []RefFloatHistogramSample{{Ref: 2, T: 5, FH: &histogram.FloatHistogram{
			Schema:          -4,
			Count:           9,
			Sum:             -100,
			NegativeSpans:   []histogram.Span{{Offset: -5, Length: 2}},
			NegativeBuckets: []float64{4, math.SmallestNonzeroFloat64},
		}}}},
		{"custom buckets", []RefFloatHistogramSample{{Ref: 3, T: 7, FH: &histogram.FloatHistogram{
			Schema:          histogram.CustomBucketsSchema,
			Count:           6,
			Sum:             12.5,
			PositiveSpans:   []histogram.Span{{Offset: 0, Length: 2}, {Offset: 1, Length: 1}},
			PositiveBuckets: []float64{1, 2, 3},
			CustomValues:    []float64{-1, 0, 2.5, 1e300},
		}}}},
		{"stale NaN sum", []RefFloatHistogramSample{{Ref: 4, T: 8, FH: &histogram.FloatHistogram{Schema: 1, Sum: staleNaN}}}},
		{"gauge hint", []RefFloatHistogramSample{{Ref: 5, T: 9, FH: &histogram.FloatHistogram{
			CounterResetHint: histogram.GaugeType,
			Schema:           2,
			Count:            3.5,
			Sum:              -7,
			PositiveSpans:    []histogram.Span{{Offset: 1, Length: 1}},
			PositiveBuckets:  []float64{3.5},
		}}}},
		{"NaN payloads everywhere", []RefFloatHistogramSample{{Ref: math.MaxUint64, T: math.MinInt64, FH: &histogram.FloatHistogram{
			ZeroThreshold:   math.Float64frombits(0xfff8000000000001),
			ZeroCount:       staleNaN,
			Count:           math.Float64frombits(0x7fffffffffffffff),
			Sum:             math.Inf(-1),
			PositiveSpans:   []histogram.Span{{Length: 1}},
			PositiveBuckets: []float64{staleNaN},
		}}}},
	}
	var d Decoder
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := EncodeFloatHistogramSamples(nil, tc.hs)
			if got := Kind(rec); got != FloatHistogramSamples {
				t.Fatalf("Kind = %v, want %v", got, FloatHistogramSamples)
			}
			got, err := d.FloatHistogramSamples(rec, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !equalFloatHistogramSamples(got, tc.hs) {
				t.Fatalf("got %+v, want %+v", got, tc.hs)
			}
			for i := range rec {
				rec[i] = 0xff
			}
			if !equalFloatHistogramSamples(got, tc.hs) {
				t.Fatal("decoded histograms changed when the record buffer was reused")
			}
		})
	}
}

// TestHistogramSamplesLayout pins the byte layout documented in
// docs/format/wal.md.
func TestHistogramSamplesLayout(t *testing.T) {
	hs := []RefHistogramSample{
		{Ref: 300, T: 1000, H: &histogram.Histogram{
			CounterResetHint: histogram.GaugeType,
			Schema:           -1,
			ZeroThreshold:    1,
			ZeroCount:        2,
			Count:            5,
			Sum:              staleNaN,
			PositiveSpans:    []histogram.Span{{Offset: -1, Length: 2}},
			PositiveBuckets:  []int64{1, -1},
			CustomValues:     []float64{2},
		}},
		{Ref: 299, T: 1001, H: &histogram.Histogram{Schema: histogram.CustomBucketsSchema}},
	}
	want := bytes.Join([][]byte{
		{6},          // type
		{2},          // count
		{0xac, 0x02}, // base ref 300
		{0xd0, 0x0f}, // base time 1000
		// First sample.
		{0, 0},                         // ref delta, time delta
		{3},                            // counter reset hint: gauge
		{1},                            // schema -1
		{0, 0, 0, 0, 0, 0, 0xf0, 0x3f}, // zero threshold 1.0
		{2},                            // zero count
		{5},                            // count
		{2, 0, 0, 0, 0, 0, 0xf0, 0x7f}, // sum: stale marker
		{1, 1, 2},                      // 1 positive span: offset -1, length 2
		{0},                            // no negative spans
		{2, 2, 1},                      // 2 positive buckets: 1, -1
		{0},                            // no negative buckets
		{1, 0, 0, 0, 0, 0, 0, 0, 0x40}, // 1 custom value: 2.0
		// Second sample.
		{1, 2},                   // ref delta -1, time delta +1
		{0},                      // counter reset hint: unknown
		{105},                    // schema -53
		{0, 0, 0, 0, 0, 0, 0, 0}, // zero threshold
		{0, 0},                   // zero count, count
		{0, 0, 0, 0, 0, 0, 0, 0}, // sum
		{0, 0, 0, 0, 0},          // no spans, buckets or custom values
	}, nil)
	got := EncodeHistogramSamples(nil, hs)
	if !bytes.Equal(got, want) {
		t.Fatalf("encoded\n%x\nwant\n%x", got, want)
	}
}

// TestFloatHistogramSamplesLayout pins the float layout: as the integer
// one, but zero count, count and buckets as 8 bytes each.
func TestFloatHistogramSamplesLayout(t *testing.T) {
	hs := []RefFloatHistogramSample{{Ref: 1, T: -1, FH: &histogram.FloatHistogram{
		CounterResetHint: histogram.CounterReset,
		Schema:           2,
		ZeroCount:        1,
		Count:            2,
		Sum:              -2,
		NegativeSpans:    []histogram.Span{{Offset: 3, Length: 1}},
		NegativeBuckets:  []float64{1},
	}}}
	want := bytes.Join([][]byte{
		{7, 1, 1, 1},                      // type, count, base ref 1, base time -1
		{0, 0},                            // ref delta, time delta
		{1},                               // counter reset hint
		{4},                               // schema 2
		{0, 0, 0, 0, 0, 0, 0, 0},          // zero threshold
		{0, 0, 0, 0, 0, 0, 0xf0, 0x3f},    // zero count 1.0
		{0, 0, 0, 0, 0, 0, 0, 0x40},       // count 2.0
		{0, 0, 0, 0, 0, 0, 0, 0xc0},       // sum -2.0
		{0},                               // no positive spans
		{1, 6, 1},                         // 1 negative span: offset 3, length 1
		{0},                               // no positive buckets
		{1, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f}, // 1 negative bucket: 1.0
		{0},                               // no custom values
	}, nil)
	got := EncodeFloatHistogramSamples(nil, hs)
	if !bytes.Equal(got, want) {
		t.Fatalf("encoded\n%x\nwant\n%x", got, want)
	}
}

func TestHistogramSamplesAppendsToDst(t *testing.T) {
	var d Decoder
	prev := RefHistogramSample{Ref: 99, H: &histogram.Histogram{Count: 99}}
	got, err := d.HistogramSamples(EncodeHistogramSamples(nil, histogramFixture()), []RefHistogramSample{prev})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] != prev || got[0].H.Count != 99 || !equalHistogramSamples(got[1:], histogramFixture()) {
		t.Fatalf("got %+v, want the earlier element followed by the decoded ones", got)
	}
}

// TestHistogramSamplesReuse checks that decoding into a slice whose spare
// capacity holds histograms reuses them, allocating nothing for data of the
// same shape, and that reuse leaves nothing of the previous contents.
func TestHistogramSamplesReuse(t *testing.T) {
	// Two records of the same shape with different values, custom buckets
	// included (same custom values: they are interned in practice).
	mk := func(seed int64) []RefHistogramSample {
		hs := make([]RefHistogramSample, 100)
		for i := range hs {
			h := &histogram.Histogram{
				Schema:          3,
				ZeroThreshold:   1e-128,
				ZeroCount:       uint64(seed),
				Count:           uint64(seed + int64(i)),
				Sum:             float64(seed) * 1.5,
				PositiveSpans:   []histogram.Span{{Offset: int32(seed), Length: 3}, {Offset: 2, Length: 2}},
				PositiveBuckets: []int64{seed, 1, -1, 2, 0},
				NegativeSpans:   []histogram.Span{{Offset: -1, Length: 1}},
				NegativeBuckets: []int64{seed * 2},
			}
			if i%10 == 0 {
				h = &histogram.Histogram{
					Schema:          histogram.CustomBucketsSchema,
					Count:           uint64(seed),
					PositiveSpans:   []histogram.Span{{Length: 3}},
					PositiveBuckets: []int64{seed, 0, -seed},
					CustomValues:    []float64{0.5, 1, 5},
				}
			}
			hs[i] = RefHistogramSample{Ref: storage.SeriesRef(1000 + i), T: 1000 + seed, H: h}
		}
		return hs
	}
	in1, in2 := mk(1), mk(2)
	rec1, rec2 := EncodeHistogramSamples(nil, in1), EncodeHistogramSamples(nil, in2)
	var d Decoder
	dst, err := d.HistogramSamples(rec1, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := dst[0].H
	keptCV := dst[0].H.CustomValues
	allocs := testing.AllocsPerRun(100, func() {
		dst, err = d.HistogramSamples(rec2, dst[:0])
	})
	if err != nil {
		t.Fatal(err)
	}
	if allocs != 0 {
		t.Errorf("HistogramSamples allocated %.1f times per call decoding same-shaped data into the same dst, want 0", allocs)
	}
	if !equalHistogramSamples(dst, in2) {
		t.Fatal("reused histograms do not hold the second record")
	}
	if dst[0].H != first {
		t.Error("the histogram in dst was not reused")
	}
	if &dst[0].H.CustomValues[0] != &keptCV[0] {
		t.Error("equal custom values were not kept")
	}

	// Different custom values must not be written into the shared slice.
	in3 := []RefHistogramSample{{Ref: 1, H: &histogram.Histogram{Schema: histogram.CustomBucketsSchema, CustomValues: []float64{7, 8, 9}}}}
	if dst, err = d.HistogramSamples(EncodeHistogramSamples(nil, in3), dst[:0]); err != nil {
		t.Fatal(err)
	}
	if !equalFloatBits(keptCV, []float64{0.5, 1, 5}) {
		t.Fatalf("custom values shared with an earlier histogram were overwritten: %v", keptCV)
	}
	if !equalHistogramSamples(dst, in3) {
		t.Fatalf("got %+v, want %+v", dst, in3)
	}

	// Reuse across growth: the spare histograms move to the new array.
	small, err := d.HistogramSamples(EncodeHistogramSamples(nil, in1[:2]), nil)
	if err != nil {
		t.Fatal(err)
	}
	h0 := small[0].H
	big, err := d.HistogramSamples(EncodeHistogramSamples(nil, in2[:5]), small[:0])
	if err != nil {
		t.Fatal(err)
	}
	if big[0].H != h0 || !equalHistogramSamples(big, in2[:5]) {
		t.Fatal("growing dst lost its spare histograms or their contents are wrong")
	}
}

func TestFloatHistogramSamplesReuse(t *testing.T) {
	mk := func(seed float64) []RefFloatHistogramSample {
		hs := make([]RefFloatHistogramSample, 100)
		for i := range hs {
			hs[i] = RefFloatHistogramSample{Ref: storage.SeriesRef(i), T: int64(seed), FH: &histogram.FloatHistogram{
				CounterResetHint: histogram.GaugeType,
				Schema:           histogram.CustomBucketsSchema,
				Count:            seed,
				Sum:              seed * 2,
				PositiveSpans:    []histogram.Span{{Length: 2}},
				PositiveBuckets:  []float64{seed, float64(i)},
				CustomValues:     []float64{1, 2},
			}}
		}
		return hs
	}
	in2 := mk(2)
	rec1, rec2 := EncodeFloatHistogramSamples(nil, mk(1)), EncodeFloatHistogramSamples(nil, in2)
	var d Decoder
	dst, err := d.FloatHistogramSamples(rec1, nil)
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		dst, err = d.FloatHistogramSamples(rec2, dst[:0])
	})
	if err != nil {
		t.Fatal(err)
	}
	if allocs != 0 {
		t.Errorf("FloatHistogramSamples allocated %.1f times per call decoding same-shaped data into the same dst, want 0", allocs)
	}
	if !equalFloatHistogramSamples(dst, in2) {
		t.Fatal("reused histograms do not hold the second record")
	}
}

// A reused histogram must not keep fields of what it held before: decode a
// rich histogram, then a bare one into the same dst.
func TestHistogramSamplesReuseClearsFields(t *testing.T) {
	var d Decoder
	dst, err := d.HistogramSamples(EncodeHistogramSamples(nil, histogramFixture()), nil)
	if err != nil {
		t.Fatal(err)
	}
	bare := []RefHistogramSample{{Ref: 1, T: 2, H: &histogram.Histogram{}}, {Ref: 3, T: 4, H: &histogram.Histogram{Schema: 1}}}
	if dst, err = d.HistogramSamples(EncodeHistogramSamples(nil, bare), dst[:0]); err != nil {
		t.Fatal(err)
	}
	if !equalHistogramSamples(dst, bare) {
		t.Fatalf("got %+v, want %+v", dst, bare)
	}
	fdst, err := d.FloatHistogramSamples(EncodeFloatHistogramSamples(nil, floatHistogramFixture()), nil)
	if err != nil {
		t.Fatal(err)
	}
	fbare := []RefFloatHistogramSample{{Ref: 1, T: 2, FH: &histogram.FloatHistogram{}}, {Ref: 3, T: 4, FH: &histogram.FloatHistogram{}}}
	if fdst, err = d.FloatHistogramSamples(EncodeFloatHistogramSamples(nil, fbare), fdst[:0]); err != nil {
		t.Fatal(err)
	}
	if !equalFloatHistogramSamples(fdst, fbare) {
		t.Fatalf("got %+v, want %+v", fdst, fbare)
	}
}

func TestHistogramSamplesRejects(t *testing.T) {
	good := EncodeHistogramSamples(nil, histogramFixture())
	fgood := EncodeFloatHistogramSamples(nil, floatHistogramFixture())
	custom := EncodeHistogramSamples(nil, []RefHistogramSample{{Ref: 1, H: &histogram.Histogram{
		Schema: histogram.CustomBucketsSchema, CustomValues: []float64{1, 2},
	}}})
	withByte := func(rec []byte, off int, b ...byte) []byte {
		out := append([]byte(nil), rec[:off]...)
		out = append(out, b...)
		return append(out, rec[off+1:]...)
	}
	// A record of one empty histogram, ref 0 at time 0, to corrupt field by
	// field. Its fields start after type, count, base ref, base time and
	// the two deltas, one byte each.
	empty := EncodeHistogramSamples(nil, []RefHistogramSample{{H: &histogram.Histogram{}}})
	const (
		hintOff           = 6
		posSpanCountOff   = hintOff + 1 + 1 + 8 + 1 + 1 + 8
		posBucketCountOff = posSpanCountOff + 2
		customCountOff    = posBucketCountOff + 2
	)

	type decodeFunc func(d *Decoder, rec []byte) (int, error)
	dec := func(d *Decoder, rec []byte) (int, error) {
		got, err := d.HistogramSamples(rec, make([]RefHistogramSample, 1, 4))
		return len(got), err
	}
	fdec := func(d *Decoder, rec []byte) (int, error) {
		got, err := d.FloatHistogramSamples(rec, make([]RefFloatHistogramSample, 1, 4))
		return len(got), err
	}
	huge := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x3f}
	type rejectCase struct {
		name    string
		rec     []byte
		decode  decodeFunc
		wantMsg string
	}
	cases := []rejectCase{
		{"empty", nil, dec, "type"},
		{"wrong type", fgood, dec, "record type is float histogram samples, want histogram samples"},
		{"float wrong type", good, fdec, "want float histogram samples"},
		{"trailing byte", append(append([]byte(nil), good...), 0), dec, "1 trailing bytes"},
		{"float trailing byte", append(append([]byte(nil), fgood...), 0), fdec, "1 trailing bytes"},
		{"huge count", append([]byte{byte(HistogramSamples)}, huge...), dec, "does not fit"},
		{"float huge count", append([]byte{byte(FloatHistogramSamples)}, huge...), fdec, "does not fit"},
		{"unknown hint", withByte(empty, hintOff, 4), dec, "unknown hint 4"},
		{"schema overflows int32", withByte(empty, hintOff+1, 0x80, 0x80, 0x80, 0x80, 0x10), dec, "schema"},
		{"huge span count", withByte(empty, posSpanCountOff, huge...), dec, "positive span count"},
		{"span offset overflows int32", withByte(empty, posSpanCountOff, 1, 0x80, 0x80, 0x80, 0x80, 0x10, 1), dec, "span offset"},
		{"span length overflows uint32", withByte(empty, posSpanCountOff, 1, 0, 0x80, 0x80, 0x80, 0x80, 0x10), dec, "span length"},
		{"huge bucket count", withByte(empty, posBucketCountOff, huge...), dec, "positive bucket count"},
		{"huge custom value count", withByte(empty, customCountOff, huge...), dec, "custom value count"},
		{"custom values past end", custom[:len(custom)-1], dec, "custom value count"},
	}
	for n := range len(good) {
		cases = append(cases, rejectCase{"truncated", good[:n], dec, ""})
	}
	for n := range len(fgood) {
		cases = append(cases, rejectCase{"float truncated", fgood[:n], fdec, ""})
	}
	var d Decoder
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n, err := tc.decode(&d, tc.rec)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decoding %x: err = %v, want ErrCorrupt", tc.rec, err)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error %q does not say %q", err, tc.wantMsg)
			}
			if n != 1 {
				t.Errorf("dst has %d elements after an error, want it unchanged (1)", n)
			}
		})
	}
}

// Counts that the record cannot hold are rejected before anything is
// allocated for them.
func TestHistogramSamplesHugeCountsDoNotAllocate(t *testing.T) {
	empty := EncodeHistogramSamples(nil, []RefHistogramSample{{H: &histogram.Histogram{}}})
	const spanCountOff = 6 + 1 + 1 + 8 + 1 + 1 + 8
	recs := [][]byte{
		{byte(HistogramSamples), 0xff, 0xff, 0xff, 0xff, 0x0f},
		{byte(FloatHistogramSamples), 0xff, 0xff, 0xff, 0xff, 0x0f},
	}
	for off := spanCountOff; off < len(empty); off++ {
		rec := append([]byte(nil), empty[:off]...)
		rec = append(rec, 0xff, 0xff, 0xff, 0xff, 0x0f) // 2^32-1 elements
		recs = append(recs, append(rec, empty[off+1:]...))
	}
	var d Decoder
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, rec := range recs {
		var err error
		if rec[0] == byte(FloatHistogramSamples) {
			_, err = d.FloatHistogramSamples(rec, nil)
		} else {
			_, err = d.HistogramSamples(rec, nil)
		}
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "does not fit") {
			t.Fatalf("%x: err = %v, want a count that does not fit", rec, err)
		}
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 64<<10 {
		t.Errorf("rejecting huge counts allocated %d bytes", n)
	}
}

// FuzzHistogramSamples: decoding arbitrary bytes never panics; what decodes
// re-encodes to a record that decodes the same; and decoding into a dst
// whose histograms are reused gives what decoding into nil gives.
//
//	go test ./internal/record -run NONE -fuzz FuzzHistogramSamples -fuzztime 60s
func FuzzHistogramSamples(f *testing.F) {
	f.Add(EncodeHistogramSamples(nil, nil))
	f.Add(EncodeHistogramSamples(nil, histogramFixture()))
	f.Add(EncodeHistogramSamples(nil, []RefHistogramSample{{Ref: 3, T: -7, H: &histogram.Histogram{
		CounterResetHint: histogram.GaugeType, Schema: histogram.CustomBucketsSchema, Sum: staleNaN,
		PositiveSpans: []histogram.Span{{Length: 2}}, PositiveBuckets: []int64{1, 1}, CustomValues: []float64{1, 2},
	}}}))
	reuse := EncodeHistogramSamples(nil, histogramFixture())
	f.Fuzz(func(t *testing.T, rec []byte) {
		var d Decoder
		got, err := d.HistogramSamples(rec, nil)
		if err != nil {
			if len(got) != 0 {
				t.Fatalf("error %v but %d samples returned", err, len(got))
			}
			return
		}
		again, err := d.HistogramSamples(EncodeHistogramSamples(nil, got), nil)
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		if !equalHistogramSamples(again, got) {
			t.Fatalf("round trip changed the samples: %+v, want %+v", again, got)
		}
		dst, err := d.HistogramSamples(reuse, nil)
		if err != nil {
			t.Fatal(err)
		}
		if dst, err = d.HistogramSamples(rec, dst[:0]); err != nil {
			t.Fatalf("decoding into a reused dst: %v", err)
		}
		if !equalHistogramSamples(dst, got) {
			t.Fatalf("decoding into a reused dst gave %+v, want %+v", dst, got)
		}
	})
}

// FuzzFloatHistogramSamples is FuzzHistogramSamples for float histograms.
//
//	go test ./internal/record -run NONE -fuzz FuzzFloatHistogramSamples -fuzztime 60s
func FuzzFloatHistogramSamples(f *testing.F) {
	f.Add(EncodeFloatHistogramSamples(nil, nil))
	f.Add(EncodeFloatHistogramSamples(nil, floatHistogramFixture()))
	f.Add(EncodeFloatHistogramSamples(nil, []RefFloatHistogramSample{{Ref: 3, T: -7, FH: &histogram.FloatHistogram{
		CounterResetHint: histogram.GaugeType, Schema: histogram.CustomBucketsSchema, Sum: staleNaN,
		PositiveSpans: []histogram.Span{{Length: 2}}, PositiveBuckets: []float64{1, staleNaN}, CustomValues: []float64{1, 2},
	}}}))
	reuse := EncodeFloatHistogramSamples(nil, floatHistogramFixture())
	f.Fuzz(func(t *testing.T, rec []byte) {
		var d Decoder
		got, err := d.FloatHistogramSamples(rec, nil)
		if err != nil {
			if len(got) != 0 {
				t.Fatalf("error %v but %d samples returned", err, len(got))
			}
			return
		}
		again, err := d.FloatHistogramSamples(EncodeFloatHistogramSamples(nil, got), nil)
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		if !equalFloatHistogramSamples(again, got) {
			t.Fatalf("round trip changed the samples: %+v, want %+v", again, got)
		}
		dst, err := d.FloatHistogramSamples(reuse, nil)
		if err != nil {
			t.Fatal(err)
		}
		if dst, err = d.FloatHistogramSamples(rec, dst[:0]); err != nil {
			t.Fatalf("decoding into a reused dst: %v", err)
		}
		if !equalFloatHistogramSamples(dst, got) {
			t.Fatalf("decoding into a reused dst gave %+v, want %+v", dst, got)
		}
	})
}
