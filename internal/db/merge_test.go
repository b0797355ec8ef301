package db

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"
	promchunkenc "github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"

	strchunkenc "github.com/strata-db/strata/internal/chunkenc"
)

// testSample is a float or integer histogram sample for list series.
type testSample struct {
	t int64
	f float64
	h *histogram.Histogram
}

func (s testSample) T() int64                      { return s.t }
func (s testSample) ST() int64                     { return 0 }
func (s testSample) F() float64                    { return s.f }
func (s testSample) H() *histogram.Histogram       { return s.h }
func (s testSample) FH() *histogram.FloatHistogram { return nil }
func (s testSample) Copy() chunks.Sample {
	if s.h != nil {
		s.h = s.h.Copy()
	}
	return s
}

func (s testSample) Type() promchunkenc.ValueType {
	if s.h != nil {
		return promchunkenc.ValHistogram
	}
	return promchunkenc.ValFloat
}

// sampleAt is the sample every source holding time t has there: sources
// overlap only with equal samples, as after a crash between writing a
// block and truncating the head. Every third time holds a histogram whose
// reset hint also depends on t.
func sampleAt(t int64) chunks.Sample {
	if t%3 != 0 {
		return testSample{t: t, f: float64(t) * 1.5}
	}
	hints := []histogram.CounterResetHint{histogram.UnknownCounterReset, histogram.CounterReset, histogram.NotCounterReset, histogram.GaugeType}
	return testSample{t: t, h: &histogram.Histogram{
		CounterResetHint: hints[(t/3)%4],
		Count:            uint64(t),
		Sum:              float64(t),
		Schema:           0,
		PositiveSpans:    []histogram.Span{{Offset: 0, Length: 1}},
		PositiveBuckets:  []int64{t},
	}}
}

// randomSources returns the timestamps of 1 to 5 sources, oldest first:
// disjoint consecutive ranges, or overlapping ones, some empty.
func randomSources(rng *rand.Rand) [][]int64 {
	n := 1 + rng.IntN(5)
	overlap := rng.IntN(2) == 0
	srcs := make([][]int64, n)
	t := int64(rng.IntN(5))
	for i := range srcs {
		if overlap {
			t = int64(rng.IntN(40))
		}
		for range rng.IntN(30) {
			srcs[i] = append(srcs[i], t)
			t += 1 + int64(rng.IntN(3))
		}
	}
	return srcs
}

func listSeries(lset labels.Labels, ts []int64) promstorage.Series {
	samples := make([]chunks.Sample, len(ts))
	for i, t := range ts {
		samples[i] = sampleAt(t)
	}
	return promstorage.NewListSeries(lset, samples)
}

// walk drives it with ops (a Seek to t for t >= 0, Next for -1) and
// describes every step: value type, time, value and histogram hint.
func walk(it promchunkenc.Iterator, ops []int64) []string {
	var out []string
	for _, op := range ops {
		var vt promchunkenc.ValueType
		if op < 0 {
			vt = it.Next()
		} else {
			vt = it.Seek(op)
		}
		switch vt {
		case promchunkenc.ValFloat:
			t, v := it.At()
			out = append(out, fmt.Sprintf("float %d %g", t, v))
		case promchunkenc.ValHistogram:
			t, h := it.AtHistogram(nil)
			out = append(out, fmt.Sprintf("hist %d %d %d", t, h.Count, h.CounterResetHint))
		default:
			out = append(out, vt.String())
		}
	}
	return append(out, fmt.Sprint(it.Err()))
}

// TestMergeIteratorMatchesChain checks mergeIterator against Prometheus'
// chained merge on random sources, disjoint and overlapping, driven by
// random Next and Seek calls: the same samples, histogram reset hints
// included.
func TestMergeIteratorMatchesChain(t *testing.T) {
	lset := labels.FromStrings("__name__", "m")
	var reuse promchunkenc.Iterator
	for seed := range uint64(3000) {
		rng := rand.New(rand.NewPCG(seed, 1))
		srcs := randomSources(rng)
		ops := make([]int64, 10+rng.IntN(60))
		for i := range ops {
			ops[i] = -1
			if rng.IntN(4) == 0 {
				ops[i] = int64(rng.IntN(120))
			}
		}
		// Each side gets its own samples: the chained merge changes the
		// reset hints of the histograms its sources hand out.
		parts := func() []promstorage.Series {
			var ps []promstorage.Series
			for _, ts := range srcs {
				ps = append(ps, listSeries(lset, ts))
			}
			return ps
		}
		want := walk(promstorage.ChainedSeriesMerge(parts()...).Iterator(nil), ops)
		reuse = (&mergedSeries{lset: lset, parts: parts()}).Iterator(reuse)
		if got := walk(reuse, ops); !slices.Equal(got, want) {
			t.Fatalf("seed %d, sources %v, ops %v:\n got %v\nwant %v", seed, srcs, ops, got, want)
		}
	}
}

// sliceSet is a series set over a slice, returning at most limit series
// if limit > 0, as the head's and blocks' sets do.
type sliceSet struct {
	series []promstorage.Series
	limit  int
	i      int
}

func (s *sliceSet) Next() bool {
	s.i++
	return s.i <= len(s.series) && (s.limit == 0 || s.i <= s.limit)
}

func (s *sliceSet) At() promstorage.Series            { return s.series[s.i-1] }
func (s *sliceSet) Err() error                        { return nil }
func (s *sliceSet) Warnings() annotations.Annotations { return nil }

// TestMergeSeriesSetMatchesChain checks mergeSeriesSet against Prometheus'
// merge of sorted series sets: the same series in the same order, with
// the same samples, under a limit or not.
func TestMergeSeriesSetMatchesChain(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 2))
		nsets, limit := 1+rng.IntN(4), rng.IntN(3)*rng.IntN(10)
		type entry struct {
			lset labels.Labels
			ts   []int64
		}
		entries := make([][]entry, nsets)
		for i := range entries {
			for j := range 20 {
				if rng.IntN(3) == 0 {
					entries[i] = append(entries[i], entry{labels.FromStrings("__name__", "m", "i", fmt.Sprintf("%02d", j)), randomSources(rng)[0]})
				}
			}
		}
		sets := func() []promstorage.SeriesSet {
			var ss []promstorage.SeriesSet
			for _, es := range entries {
				s := &sliceSet{limit: limit}
				for _, e := range es {
					s.series = append(s.series, listSeries(e.lset, e.ts))
				}
				ss = append(ss, s)
			}
			return ss
		}
		describe := func(ss promstorage.SeriesSet) []string {
			var out []string
			for ss.Next() {
				s := ss.At()
				out = append(out, s.Labels().String())
				out = append(out, walk(s.Iterator(nil), []int64{-1, -1, -1, 50, -1})...)
			}
			return append(out, fmt.Sprint(ss.Err()))
		}
		want := describe(promstorage.NewMergeSeriesSet(sets(), limit, promstorage.ChainedSeriesMerge))
		got := describe(&mergeSeriesSet{sets: sets(), live: make([]bool, nsets), limit: limit})
		if !slices.Equal(got, want) {
			t.Fatalf("seed %d:\n got %v\nwant %v", seed, got, want)
		}
	}
}

// chunkSeries encodes the samples at ts into chunks of at most perChunk
// samples, a new one also where the kind changes or a histogram cannot
// join, and returns them as a part read in [mint, maxt], as a block's or
// the head's series set would: only the chunks that overlap the range,
// nil if none does. Histograms count t%5, so that some are resets.
func chunkSeries(t *testing.T, lset labels.Labels, ts []int64, perChunk int, mint, maxt int64) promstorage.Series {
	var (
		metas []strchunkenc.Meta
		xor   *strchunkenc.XORChunk
		hc    *strchunkenc.HistogramChunk
		n     int
		first int64
		prev  int64
	)
	flush := func() {
		switch {
		case xor != nil:
			metas = append(metas, strchunkenc.Meta{Data: xor.Bytes(), MinT: first, MaxT: prev, Enc: strchunkenc.EncXOR})
		case hc != nil:
			metas = append(metas, strchunkenc.Meta{Data: hc.Bytes(), MinT: first, MaxT: prev, Enc: strchunkenc.EncHistogram})
		}
		xor, hc, n = nil, nil, 0
	}
	for _, st := range ts {
		s := sampleAt(st).(testSample)
		if n >= perChunk || (s.h == nil) != (hc == nil) || (s.h != nil) != (xor == nil) {
			flush()
		}
		if n == 0 {
			first = st
		}
		if s.h == nil {
			if xor == nil {
				xor = strchunkenc.NewXORChunk()
			}
			xor.Append(st, s.f)
		} else {
			s.h.Count, s.h.PositiveBuckets[0] = uint64(st%5), st%5
			for {
				if hc == nil {
					hc, first = strchunkenc.NewHistogramChunk(), st
				}
				if hc.Append(st, s.h) == strchunkenc.Appended {
					break
				}
				flush()
			}
		}
		n++
		prev = st
	}
	flush()
	var in []strchunkenc.Meta
	for _, m := range metas {
		if m.MaxT >= mint && m.MinT <= maxt {
			in = append(in, m)
		}
	}
	if len(in) == 0 {
		return nil
	}
	return &strchunkenc.Series{Lset: lset, Chunks: in, MinT: mint, MaxT: maxt}
}

// TestJoinMatchesChain checks series joined from parts that follow one
// another in time against Prometheus' chained merge of the same parts,
// read by random Next and Seek calls: the same samples, and the same
// histogram reset hints at the first sample, after a Seek and where one
// part gives way to the next. Parts that overlap are not joined, and
// are read by mergeIterator as the chained merge reads them.
func TestJoinMatchesChain(t *testing.T) {
	lset := labels.FromStrings("__name__", "m")
	joined := 0
	var reuse promchunkenc.Iterator
	for seed := range uint64(3000) {
		rng := rand.New(rand.NewPCG(seed, 3))
		srcs := randomSources(rng)
		qmint, qmaxt := int64(rng.IntN(20)), int64(40+rng.IntN(100))
		var parts []promstorage.Series
		for i, ts := range srcs {
			// Each source holds a range of its own, as a block does,
			// clipped to the query's.
			lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
			if len(ts) > 0 {
				lo = ts[0]
			}
			if i+1 < len(srcs) && len(srcs[i+1]) > 0 && len(ts) > 0 {
				hi = max(ts[len(ts)-1], srcs[i+1][0]-1)
			}
			if p := chunkSeries(t, lset, ts, 1+rng.IntN(6), max(qmint, lo), min(qmaxt, hi)); p != nil {
				parts = append(parts, p)
			}
		}
		if len(parts) < 2 {
			continue
		}
		ops := make([]int64, 10+rng.IntN(60))
		for i := range ops {
			ops[i] = -1
			if rng.IntN(4) == 0 {
				ops[i] = int64(rng.IntN(120))
			}
		}
		want := walk(promstorage.ChainedSeriesMerge(parts...).Iterator(nil), ops)
		var s promstorage.Series = &mergedSeries{lset: lset, parts: parts}
		if j := join(lset, parts); j != nil {
			s = j
			joined++
		}
		reuse = s.Iterator(reuse)
		if got := walk(reuse, ops); !slices.Equal(got, want) {
			t.Fatalf("seed %d, sources %v, query [%d, %d], joined %T, ops %v:\n got %v\nwant %v", seed, srcs, qmint, qmaxt, s, ops, got, want)
		}
	}
	if joined < 500 {
		t.Fatalf("only %d of the cases joined their parts", joined)
	}
}
