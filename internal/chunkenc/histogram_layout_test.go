package chunkenc

import (
	"math"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
)

type spans = []histogram.Span

// sp returns spans from pairs of offset and length.
func sp(pairs ...int64) spans {
	var out spans
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, histogram.Span{Offset: int32(pairs[i]), Length: uint32(pairs[i+1])})
	}
	return out
}

func TestCanonicalSpans(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   spans
		n    int
		want spans
		ok   bool
	}{
		{"none", nil, 0, nil, true},
		{"canonical", sp(-3, 2, 4, 1), 3, sp(-3, 2, 4, 1), true},
		{"adjacent", sp(0, 2, 0, 3), 5, sp(0, 5), true},
		{"empty spans shift", sp(1, 0, 2, 1, 3, 0, 0, 2), 3, sp(3, 1, 3, 2), true},
		{"only empty", sp(5, 0, -3, 0), 0, nil, true},
		{"too few buckets", sp(0, 2), 3, nil, false},
		{"too many buckets", sp(0, 2), 1, nil, false},
		{"negative gap", sp(0, 2, -1, 1), 3, nil, false},
		{"negative gap to the same bucket", sp(0, 2, -2, 1), 3, nil, false},
		{"gap beyond int32", sp(math.MinInt32, 1, math.MaxInt32, 0, math.MaxInt32, 1), 2, nil, false},
		{"extreme but fine", sp(math.MinInt32, 1, math.MaxInt32, 1), 2, sp(math.MinInt32, 1, math.MaxInt32, 1), true},
	} {
		got, ok := canonicalSpans(nil, tc.in, tc.n)
		if ok != tc.ok || ok && !slices.Equal(got, tc.want) {
			t.Errorf("%s: canonicalSpans(%v, %d) = %v, %v; want %v, %v", tc.name, tc.in, tc.n, got, ok, tc.want, tc.ok)
		}
	}
}

func TestUnionSpans(t *testing.T) {
	for _, tc := range []struct {
		a, b, want spans
		ok         bool
	}{
		{nil, nil, nil, true},
		{sp(0, 2), nil, sp(0, 2), true},
		{nil, sp(-1, 0, 3, 1), sp(2, 1), true},
		{sp(0, 2), sp(0, 2), sp(0, 2), true},
		{sp(0, 2), sp(2, 1), sp(0, 3), true},                   // appends and merges
		{sp(0, 2), sp(-5, 1), sp(-5, 1, 4, 2), true},           // before
		{sp(0, 1, 3, 1), sp(2, 1), sp(0, 1, 1, 1, 1, 1), true}, // in the gap
		{sp(0, 1, 1, 1), sp(1, 1), sp(0, 3), true},             // fills the gap
		{sp(math.MinInt32, 1), sp(math.MaxInt32, 1), nil, false},
	} {
		got, ok := unionSpans(tc.a, tc.b)
		if ok != tc.ok || ok && !slices.Equal(got, tc.want) {
			t.Errorf("unionSpans(%v, %v) = %v, %v; want %v, %v", tc.a, tc.b, got, ok, tc.want, tc.ok)
		}
	}
}

func TestFitBuckets(t *testing.T) {
	layout := sp(-2, 2, 2, 3) // buckets -2 -1 2 3 4
	for _, tc := range []struct {
		name        string
		spans       spans
		buckets     []int64 // deltas
		want        []int64
		fits, valid bool
	}{
		{"same", layout, []int64{1, 1, 1, 1, 1}, []int64{1, 2, 3, 4, 5}, true, true},
		{"subset", sp(-1, 1, 3, 0, 0, 2), []int64{5, -4, 2}, []int64{0, 5, 0, 1, 3}, true, true},
		{"empty", nil, nil, []int64{0, 0, 0, 0, 0}, true, true},
		{"extra bucket", sp(-1, 3), []int64{1, 1, 1}, []int64{0, 1, 0, 0, 0}, false, true},
		{"extra after", sp(4, 2), []int64{7, 1}, []int64{0, 0, 0, 0, 7}, false, true},
		{"count mismatch", sp(-1, 2), []int64{1}, nil, false, false},
		{"count mismatch, layout's spans", layout, []int64{1, 1, 1, 1}, nil, false, false},
		{"decreasing", sp(2, 1, -3, 1), []int64{1, 1}, nil, false, false},
	} {
		dst := make([]int64, 5)
		fits, valid := fitBuckets(dst, layout, tc.spans, tc.buckets, true)
		if valid != tc.valid || valid && (fits != tc.fits || !slices.Equal(dst, tc.want)) {
			t.Errorf("%s: fitBuckets = %v, %v, %v; want %v, %v, %v", tc.name, dst, fits, valid, tc.want, tc.fits, tc.valid)
		}
	}
	// Absolute counts, as in float histograms.
	dst := make([]float64, 5)
	if fits, valid := fitBuckets(dst, layout, sp(-1, 1, 2, 1), []float64{0.5, 0.25}, false); !fits || !valid || !slices.Equal(dst, []float64{0, 0.5, 0.25, 0, 0}) {
		t.Errorf("float fitBuckets = %v, %v, %v", dst, fits, valid)
	}
}

func TestBucketPositions(t *testing.T) {
	got := bucketPositions(sp(-1, 1, 2, 2), sp(-3, 3, 1, 3)) // -1 2 3 in -3 -2 -1 1 2 3
	if want := []int{2, 4, 5}; !slices.Equal(got, want) {
		t.Fatalf("bucketPositions = %v, want %v", got, want)
	}
}

// TestLayoutBytes checks that layouts survive their byte form and that
// parsing keeps the custom bounds it already has when they are the same.
func TestLayoutBytes(t *testing.T) {
	exp := layoutFor(-4, 1e-128, sp(-3, 2, 4, 1), sp(0, 1), 3, 1, nil)
	custom := layoutFor(histogram.CustomBucketsSchema, 0, sp(0, 3), nil, 3, 0, []float64{1, 2, math.Inf(1)})
	var l histogramLayout
	for _, want := range []histogramLayout{exp, custom, custom, exp, custom} {
		before := l.customValues
		b := want.appendLayout(nil)
		rest, reason := l.parseLayout(append(b, 0xaa))
		if reason != "" || !slices.Equal(rest, []byte{0xaa}) {
			t.Fatalf("parseLayout(%x) left %x: %q", b, rest, reason)
		}
		if l.schema != want.schema || l.zeroThreshold != want.zeroThreshold || !slices.Equal(l.posSpans, want.posSpans) ||
			!slices.Equal(l.negSpans, want.negSpans) || l.nPos != want.nPos || l.nNeg != want.nNeg ||
			want.custom() && !slices.Equal(l.customValues, want.customValues) {
			t.Fatalf("parsed %+v, want %+v", l, want)
		}
		if want.custom() && len(before) > 0 && &before[0] != &l.customValues[0] {
			t.Fatal("parseLayout replaced custom bounds that had not changed")
		}
	}
	other := layoutFor(histogram.CustomBucketsSchema, 0, sp(0, 3), nil, 3, 0, []float64{1, 2, 3})
	before := l.customValues
	l.parseLayout(other.appendLayout(nil))
	if !slices.Equal(before, []float64{1, 2, math.Inf(1)}) || !slices.Equal(l.customValues, []float64{1, 2, 3}) {
		t.Fatalf("new bounds written over old ones: %v, %v", before, l.customValues)
	}
}
