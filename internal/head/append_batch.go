package head

import (
	"cmp"
	"slices"

	"github.com/prometheus/prometheus/model/histogram"

	"github.com/strata-db/strata/internal/chunkenc"
	"github.com/strata-db/strata/internal/record"
	"github.com/strata-db/strata/internal/storage"
)

// appendBatch holds the samples of part of an appender's batch: floats,
// integer and float histograms, each with a parallel slice of their series
// (series[i] is the series of samples[i]). Commit logs and applies a
// part's floats, then its integer histograms, then its float histograms,
// as replay does with the records; an appender starts a new part when a
// series' next sample is of a kind applied earlier than its previous one,
// so that each series' samples are applied in the order they came.
//
// The histograms are the batch's own copies, reused from one commit to
// the next; their CustomValues are shared with the caller's (see
// storage.Sample) until reset.
type appendBatch struct {
	samples     []record.RefSample
	series      []*memSeries
	hists       []record.RefHistogramSample
	histSeries  []*memSeries
	fhists      []record.RefFloatHistogramSample
	fhistSeries []*memSeries

	samplesBuf, histBuf, fhistBuf []byte // encoded records
}

// kindRank is the order in which Commit applies kinds of samples.
func kindRank(k chunkenc.Encoding) int {
	switch k {
	case chunkenc.EncHistogram:
		return 1
	case chunkenc.EncFloatHistogram:
		return 2
	}
	return 0
}

func (b *appendBatch) addHistogram(s *memSeries, t int64, h *histogram.Histogram) {
	b.hists = appendHistogramCopy(b.hists, s.ref, t, h)
	b.histSeries = append(b.histSeries, s)
}

func (b *appendBatch) addFloatHistogram(s *memSeries, t int64, fh *histogram.FloatHistogram) {
	b.fhists = appendFloatHistogramCopy(b.fhists, s.ref, t, fh)
	b.fhistSeries = append(b.fhistSeries, s)
}

// appendHistogramCopy appends a sample holding a copy of h to dst, reusing
// the histogram of the entry it overwrites, if any (see
// histogram.Histogram.CopyTo: custom bucket bounds are shared).
func appendHistogramCopy(dst []record.RefHistogramSample, ref storage.SeriesRef, t int64, h *histogram.Histogram) []record.RefHistogramSample {
	dst = slices.Grow(dst, 1)[:len(dst)+1]
	e := &dst[len(dst)-1]
	if e.H == nil {
		e.H = &histogram.Histogram{}
	}
	h.CopyTo(e.H)
	e.Ref, e.T = ref, t
	return dst
}

// appendFloatHistogramCopy is appendHistogramCopy for float histograms.
func appendFloatHistogramCopy(dst []record.RefFloatHistogramSample, ref storage.SeriesRef, t int64, fh *histogram.FloatHistogram) []record.RefFloatHistogramSample {
	dst = slices.Grow(dst, 1)[:len(dst)+1]
	e := &dst[len(dst)-1]
	if e.FH == nil {
		e.FH = &histogram.FloatHistogram{}
	}
	fh.CopyTo(e.FH)
	e.Ref, e.T = ref, t
	return dst
}

// encode appends the batch's records to recs.
func (b *appendBatch) encode(recs [][]byte) [][]byte {
	if len(b.samples) > 0 {
		b.samplesBuf = record.EncodeSamples(b.samplesBuf[:0], b.samples)
		recs = append(recs, b.samplesBuf)
	}
	if len(b.hists) > 0 {
		b.histBuf = record.EncodeHistogramSamples(b.histBuf[:0], b.hists)
		recs = append(recs, b.histBuf)
	}
	if len(b.fhists) > 0 {
		b.fhistBuf = record.EncodeFloatHistogramSamples(b.fhistBuf[:0], b.fhists)
		recs = append(recs, b.fhistBuf)
	}
	return recs
}

// apply adds the batch's samples to their series and returns how many were
// appended and how many dropped: a sample that another appender's commit
// made out of order or a duplicate since Append checked it. The sample is
// in the WAL; replay decides the same way, dropping it there too.
func (b *appendBatch) apply(m *chunkMem) (appended, dropped uint64) {
	n1, d1 := applyRuns(b.series, m, func(i int) lateSample { return lateSample{t: b.samples[i].T, v: b.samples[i].V} })
	n2, d2 := applyRuns(b.histSeries, m, func(i int) lateSample { return lateSample{t: b.hists[i].T, h: b.hists[i].H} })
	n3, d3 := applyRuns(b.fhistSeries, m, func(i int) lateSample { return lateSample{t: b.fhists[i].T, fh: b.fhists[i].FH} })
	return n1 + n2 + n3, d1 + d2 + d3
}

// applyRuns applies the samples of series, the ith sample(i), holding
// each series' lock once for a run of its samples, and returns how many
// it appended and dropped. The late samples of a run are inserted
// together, in time order (insertRun): applied as they come, in order
// with the others, the series would hold the same samples, since each
// late one is older than every sample appended after it.
func applyRuns(series []*memSeries, m *chunkMem, sample func(i int) lateSample) (appended, dropped uint64) {
	for i := 0; i < len(series); {
		s := series[i]
		late := m.lateRun[:0]
		s.mu.Lock()
		for ; i < len(series) && series[i] == s; i++ {
			x := sample(i)
			switch ok, isLate, _ := s.applyInOrder(x, m); {
			case isLate:
				late = append(late, x)
			case ok:
				appended++
			default:
				dropped++
			}
		}
		if len(late) > 0 {
			slices.SortStableFunc(late, func(a, b lateSample) int { return cmp.Compare(a.t, b.t) })
			s.insertRun(late, m, func(_ int, ok bool, _ error) {
				if ok {
					appended++
				} else {
					dropped++
				}
			})
		}
		s.mu.Unlock()
		clear(late)
		m.lateRun = late[:0]
	}
	return appended, dropped
}

// reset empties the batch, keeping its memory (unless trimmed lets it
// go) and histograms, but no pointer into series or into the caller's
// custom bucket bounds.
func (b *appendBatch) reset(t *bufferTrim) {
	clear(b.series)
	clear(b.histSeries)
	clear(b.fhistSeries)
	for i := range b.hists {
		b.hists[i].H.CustomValues = nil
	}
	for i := range b.fhists {
		b.fhists[i].FH.CustomValues = nil
	}
	b.samples, b.series = trimmed(t, b.samples), trimmed(t, b.series)
	b.hists, b.histSeries = trimmed(t, b.hists), trimmed(t, b.histSeries)
	b.fhists, b.fhistSeries = trimmed(t, b.fhists), trimmed(t, b.fhistSeries)
	b.samplesBuf, b.histBuf, b.fhistBuf = trimmed(t, b.samplesBuf), trimmed(t, b.histBuf), trimmed(t, b.fhistBuf)
}
