package head

import (
	"github.com/prometheus/prometheus/model/histogram"

	"github.com/strata-db/strata/internal/chunkenc"
	"github.com/strata-db/strata/internal/storage"
)

// histChunkMaxBytes closes a histogram chunk once its bytes reach it, even
// before it holds chunkMem.samples histograms. A histogram with dozens of
// buckets takes tens of bytes even compressed, and a query decodes whole
// chunks: Prometheus aims at 1 KiB for the same reason.
const histChunkMaxBytes = 1024

// appendableHistogram reports whether an integer (h) or float (fh)
// histogram at t may follow the series' newest sample; dup is true for an
// exact duplicate, which is accepted and dropped. mu must be held.
func (s *memSeries) appendableHistogram(t int64, h *histogram.Histogram, fh *histogram.FloatHistogram) (dup bool, err error) {
	switch {
	case t > s.maxt:
		return false, nil
	case t < s.maxt:
		return false, storage.ErrOutOfOrderSample
	}
	// Same timestamp: a duplicate only of the very same histogram. The
	// newest sample is not kept decoded, as a repeat is rare: decode it.
	lastH, lastFH := s.lastHistogram()
	if sameHistogram(lastH, lastFH, h, fh) {
		return true, nil
	}
	return false, storage.ErrDuplicateSampleForTimestamp
}

// sameHistogram reports whether two histograms, each given as integer or
// float (the other nil), are of the same kind and equal. A chunk may hold a
// histogram with more (empty) buckets than it was appended with, so both
// are compacted before comparing.
func sameHistogram(h1 *histogram.Histogram, fh1 *histogram.FloatHistogram, h2 *histogram.Histogram, fh2 *histogram.FloatHistogram) bool {
	switch {
	case h1 != nil && h2 != nil:
		return h1.Copy().Compact(0).Equals(h2.Copy().Compact(0))
	case fh1 != nil && fh2 != nil:
		return fh1.Copy().Compact(0).Equals(fh2.Copy().Compact(0))
	}
	return false
}

// lastHistogram decodes the newest sample if it is a histogram. mu must be
// held.
func (s *memSeries) lastHistogram() (*histogram.Histogram, *histogram.FloatHistogram) {
	var (
		data []byte
		enc  chunkenc.Encoding
	)
	if s.hasOpenSamples() {
		data, enc = s.openBytes(), s.open
	} else if s.nChunks > 0 {
		c := s.newest()
		data, enc = c.bytes(), c.encoding()
	}
	switch enc {
	case chunkenc.EncHistogram:
		var it chunkenc.HistogramIterator
		it.Reset(data)
		var h *histogram.Histogram
		for it.Next() {
			h = it.AtHistogram(h)
		}
		return h, nil
	case chunkenc.EncFloatHistogram:
		var it chunkenc.FloatHistogramIterator
		it.Reset(data)
		var fh *histogram.FloatHistogram
		for it.Next() {
			fh = it.AtFloatHistogram(fh)
		}
		return nil, fh
	}
	return nil, nil
}

// appendHistogram adds an integer histogram that appendableHistogram
// accepted. h is not retained. mu must be held.
func (s *memSeries) appendHistogram(t int64, h *histogram.Histogram, m *chunkMem) {
	c, ok := s.openHist().(*chunkenc.HistogramChunk)
	first := false
	switch {
	case !ok:
		s.closeOpen(m)
		c = chunkenc.NewHistogramChunk()
		s.setOpen(chunkenc.EncHistogram, c, &m.arena.cells, m.series)
		first = true
	case c.NumSamples() >= m.samples || len(c.Bytes()) >= histChunkMaxBytes || m.crossesRange(s.headMint(), t) || t-s.headMint() > maxChunkSpan:
		s.cut(m)
		first = true
	}
	switch c.Append(t, h) {
	case chunkenc.NeedNewChunk:
		s.cut(m)
		first = true
		c.Append(t, h)
	case chunkenc.CounterResetDetected:
		s.cut(m)
		first = true
		reset := *h
		reset.CounterResetHint = histogram.CounterReset
		c.Append(t, &reset)
	}
	s.setNewest(t, first)
}

// appendFloatHistogram adds a float histogram that appendableHistogram
// accepted. fh is not retained. mu must be held.
func (s *memSeries) appendFloatHistogram(t int64, fh *histogram.FloatHistogram, m *chunkMem) {
	c, ok := s.openHist().(*chunkenc.FloatHistogramChunk)
	first := false
	switch {
	case !ok:
		s.closeOpen(m)
		c = chunkenc.NewFloatHistogramChunk()
		s.setOpen(chunkenc.EncFloatHistogram, c, &m.arena.cells, m.series)
		first = true
	case c.NumSamples() >= m.samples || len(c.Bytes()) >= histChunkMaxBytes || m.crossesRange(s.headMint(), t) || t-s.headMint() > maxChunkSpan:
		s.cut(m)
		first = true
	}
	switch c.Append(t, fh) {
	case chunkenc.NeedNewChunk:
		s.cut(m)
		first = true
		c.Append(t, fh)
	case chunkenc.CounterResetDetected:
		s.cut(m)
		first = true
		reset := *fh
		reset.CounterResetHint = histogram.CounterReset
		c.Append(t, &reset)
	}
	s.setNewest(t, first)
}
