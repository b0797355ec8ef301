package chunkenc

import (
	"bytes"
	"maps"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
)

// TestHistogramBytesSnapshot checks that a copy of Bytes taken after k
// appends iterates exactly those k histograms, for every k, through layout
// growth, stale markers and the layout a first real histogram brings.
func TestHistogramBytesSnapshot(t *testing.T) {
	var samples []hsample
	samples = append(samples, hsample{1, staleHist()}, hsample{2, staleHist()})
	samples = append(samples, histogramRoundTripCases()["layout grows"]...)
	samples = append(samples, hsample{samples[len(samples)-1].t + 1, staleHist()})
	samples = append(samples, realisticHistograms(120, 1000, 7)...)
	// Gauges, as the parts do not continue one another.
	samples = asGauges(samples)
	c, fc := NewHistogramChunk(), NewFloatHistogramChunk()
	snaps := [][]byte{bytes.Clone(c.Bytes())}
	fsnaps := [][]byte{bytes.Clone(fc.Bytes())}
	for i, s := range samples {
		if r := c.Append(s.t, s.h); r != Appended {
			t.Fatalf("append %d: %v", i, r)
		}
		if r := fc.Append(s.t, s.h.ToFloat(nil)); r != Appended {
			t.Fatalf("float append %d: %v", i, r)
		}
		snaps = append(snaps, bytes.Clone(c.Bytes()))
		fsnaps = append(fsnaps, bytes.Clone(fc.Bytes()))
	}
	it, fit := &HistogramIterator{}, &FloatHistogramIterator{}
	for k := range snaps {
		got, err := decodeHistograms(it, snaps[k])
		if err != nil {
			t.Fatalf("snapshot after %d appends: %v", k, err)
		}
		if d := diffHistogramSamples(got, samples[:k]); d != "" {
			t.Fatalf("snapshot after %d appends: %s", k, d)
		}
		fgot, err := decodeFloatHistograms(fit, fsnaps[k])
		if err != nil {
			t.Fatalf("float snapshot after %d appends: %v", k, err)
		}
		if d := diffFloatHistogramSamples(fgot, toFloatSamples(samples[:k])); d != "" {
			t.Fatalf("float snapshot after %d appends: %s", k, d)
		}
	}
}

// TestHistogramBytesCapacity checks that what a caller appends to the
// result of Bytes is its own.
func TestHistogramBytesCapacity(t *testing.T) {
	samples := realisticHistograms(121, 20, 1)
	c, err := encodeHistograms(samples[:120])
	if err != nil {
		t.Fatal(err)
	}
	mine := append(c.Bytes(), 0xff, 0xff)
	c.Append(samples[120].t, samples[120].h)
	if !bytes.Equal(mine[len(mine)-2:], []byte{0xff, 0xff}) {
		t.Fatalf("Append wrote over bytes appended to Bytes(): %x", mine[len(mine)-2:])
	}
}

// TestHistogramChunkReset checks that a reset chunk encodes exactly like a
// new one and that refilling it does not allocate once its memory has
// grown, for each kind of chunk.
func TestHistogramChunkReset(t *testing.T) {
	first := realisticHistograms(120, 1000, 1)
	second := withFinalLayout(realisticHistograms(120, 20, 2))
	customs := []hsample{
		{1, customHist(testBounds, 1, buckets{0: 1, 3: 2})},
		{2, customHist(testBounds, 2, buckets{0: 2, 3: 2, 5: 1})},
	}
	c := NewHistogramChunk()
	for _, s := range first {
		c.Append(s.t, s.h)
	}
	for _, next := range [][]hsample{second, customs, second} {
		c.Reset()
		if c.NumSamples() != 0 || !bytes.Equal(c.Bytes(), []byte{0, 0}) {
			t.Fatalf("reset chunk: %d samples, bytes %x", c.NumSamples(), c.Bytes())
		}
		fresh, err := encodeHistograms(next)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range next {
			c.Append(s.t, s.h)
		}
		if !bytes.Equal(c.Bytes(), fresh.Bytes()) {
			t.Fatalf("reset chunk encodes differently:\n%x\n%x", c.Bytes(), fresh.Bytes())
		}
	}

	fc := NewFloatHistogramChunk()
	for _, s := range toFloatSamples(first) {
		fc.Append(s.t, s.h)
	}
	fc.Reset()
	fresh, err := encodeFloatHistograms(toFloatSamples(second))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range toFloatSamples(second) {
		fc.Append(s.t, s.h)
	}
	if !bytes.Equal(fc.Bytes(), fresh.Bytes()) {
		t.Fatalf("reset float chunk encodes differently:\n%x\n%x", fc.Bytes(), fresh.Bytes())
	}

	// second has one layout all through, so refilling allocates nothing.
	fsecond := toFloatSamples(second)
	for name, fill := range map[string]func(){
		"int": func() {
			c.Reset()
			for _, s := range second {
				c.Append(s.t, s.h)
			}
		},
		"custom": func() {
			c.Reset()
			for _, s := range customs[1:] {
				c.Append(s.t, s.h)
			}
		},
		"float": func() {
			fc.Reset()
			for _, s := range fsecond {
				fc.Append(s.t, s.h)
			}
		},
	} {
		if allocs := testing.AllocsPerRun(20, fill); allocs != 0 {
			t.Errorf("%s: Reset and Append allocated %v times", name, allocs)
		}
	}
}

// TestHistogramIteratorReuse checks that a reused iterator forgets its
// previous chunk, its error included, and iterates chunks of one series
// (custom buckets too) without allocating once its buffers have grown.
func TestHistogramIteratorReuse(t *testing.T) {
	cases := histogramRoundTripCases()
	names := slices.Sorted(maps.Keys(cases))
	chunks := make([][]byte, len(names))
	fchunks := make([][]byte, len(names))
	for i, name := range names {
		c, err := encodeHistograms(cases[name])
		if err != nil {
			t.Fatal(err)
		}
		chunks[i] = c.Bytes()
		fc, err := encodeFloatHistograms(toFloatSamples(cases[name]))
		if err != nil {
			t.Fatal(err)
		}
		fchunks[i] = fc.Bytes()
	}
	it := NewHistogramIterator([]byte{0, 5, 1})
	fit := NewFloatHistogramIterator([]byte{0, 5, 1})
	if it.Err() == nil || fit.Err() == nil {
		t.Fatal("want an error from a corrupt chunk")
	}
	for i, name := range names {
		got, err := decodeHistograms(it, chunks[i])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if d := diffHistogramSamples(got, cases[name]); d != "" {
			t.Fatalf("%s after Reset: %s", name, d)
		}
		fgot, err := decodeFloatHistograms(fit, fchunks[i])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if d := diffFloatHistogramSamples(fgot, toFloatSamples(cases[name])); d != "" {
			t.Fatalf("%s after float Reset: %s", name, d)
		}
	}

	// Chunks of one series: Reset and At* reuse everything.
	var series, fseries [][]byte
	for _, name := range []string{"realistic", "realistic busy", "custom buckets", "custom stale", "stale marker"} {
		series = append(series, chunks[slices.Index(names, name)])
		fseries = append(fseries, fchunks[slices.Index(names, name)])
	}
	h, fh := &histogram.Histogram{}, &histogram.FloatHistogram{}
	var total uint64
	allocs := testing.AllocsPerRun(50, func() {
		for _, b := range series {
			it.Reset(b)
			for it.Next() {
				h = it.AtHistogram(h)
				fh = it.AtFloatHistogram(fh)
				total += h.Count
			}
			if it.Err() != nil {
				t.Fatal(it.Err())
			}
		}
		for _, b := range fseries {
			fit.Reset(b)
			for fit.Next() {
				fh = fit.AtFloatHistogram(fh)
				total += uint64(fh.Count)
			}
			if fit.Err() != nil {
				t.Fatal(fit.Err())
			}
		}
	})
	if allocs != 0 {
		t.Fatalf("Reset and full iteration: %v allocs, want 0", allocs)
	}
}

// TestHistogramAtOwnership checks that what At* returns is the caller's:
// changing it does not change what the iterator returns next, and the
// iterator does not write into it after returning it, except through the
// h passed back in.
func TestHistogramAtOwnership(t *testing.T) {
	samples := every15s(
		customHist(testBounds, 1, buckets{0: 1, 3: 2}),
		customHist(testBounds, 2, buckets{0: 2, 3: 2}),
	)
	samples = append(samples, realisticHistograms(3, 20, 1)...)
	c := NewHistogramChunk()
	for _, s := range samples[:2] {
		c.Append(s.t, s.h)
	}
	c2, err := encodeHistograms(samples[2:])
	if err != nil {
		t.Fatal(err)
	}
	it := NewHistogramIterator(c.Bytes())
	it.Next()
	a := it.AtHistogram(nil)
	fa := it.AtFloatHistogram(nil)
	want, fwant := a.Copy(), fa.Copy()
	bounds := slices.Clone(a.CustomValues)
	// Scribble over everything but the shared, immutable bounds.
	a.PositiveSpans[0].Offset, a.PositiveBuckets[0] = 99, 99
	fa.PositiveSpans[0].Offset, fa.PositiveBuckets[0] = 99, 99

	it.Next()
	b := it.AtHistogram(nil)
	if b.PositiveSpans[0].Offset == 99 || b.PositiveBuckets[0] == 99 {
		t.Fatal("changing a returned histogram changed the next one")
	}
	// Reset to another chunk, and iterate it into a fresh histogram: a and
	// b keep their bounds.
	it.Reset(c2.Bytes())
	for it.Next() {
		it.AtHistogram(nil)
	}
	if !slices.Equal(a.CustomValues, bounds) || !slices.Equal(b.CustomValues, bounds) {
		t.Fatalf("bounds changed after Reset: %v, %v, want %v", a.CustomValues, b.CustomValues, bounds)
	}
	a.PositiveSpans[0].Offset, a.PositiveBuckets[0] = want.PositiveSpans[0].Offset, want.PositiveBuckets[0]
	fa.PositiveSpans[0].Offset, fa.PositiveBuckets[0] = fwant.PositiveSpans[0].Offset, fwant.PositiveBuckets[0]
	if d := diffHistogram(a, want, true); d != "" {
		t.Fatalf("a changed: %s", d)
	}
	if d := diffFloatHistogram(fa, fwant, true); d != "" {
		t.Fatalf("fa changed: %s", d)
	}

	// A histogram passed back in is reused, whatever it held.
	h := hist(1, 2, buckets{-5: 1, 0: 1, 1: 1, 2: 1, 3: 1, 9: 2}, buckets{1: 1, 2: 2})
	h.CustomValues = []float64{1, 2, 3}
	shared := h.CustomValues
	it.Reset(c.Bytes())
	for it.Next() {
		got := it.AtHistogram(h)
		if got != h {
			t.Fatal("AtHistogram(h) did not return h")
		}
	}
	if !slices.Equal(shared, []float64{1, 2, 3}) {
		t.Fatalf("AtHistogram wrote into the CustomValues of the histogram passed in: %v", shared)
	}
	if d := diffHistogram(h, samples[1].h, false); d != "" {
		t.Fatalf("reused histogram: %s", d)
	}
}

func TestHistogramAppendAllocs(t *testing.T) {
	// A chunk whose byte slice already has room, and histograms of one
	// layout: Append must not allocate.
	samples := withFinalLayout(realisticHistograms(3000, 20, 5))
	fsamples := toFloatSamples(samples)
	c := NewHistogramChunk()
	c.w.buf = slices.Grow(c.w.buf, 1<<20)
	fc := NewFloatHistogramChunk()
	fc.w.buf = slices.Grow(fc.w.buf, 1<<20)
	c.Append(samples[0].t, samples[0].h)
	fc.Append(fsamples[0].t, fsamples[0].h)
	i := 0
	allocs := testing.AllocsPerRun(2000, func() {
		i++
		if c.Append(samples[i].t, samples[i].h) != Appended || fc.Append(fsamples[i].t, fsamples[i].h) != Appended {
			t.Fatal("append failed")
		}
	})
	if allocs != 0 {
		t.Fatalf("Append on a pre-grown chunk: %v allocs, want 0", allocs)
	}
}
