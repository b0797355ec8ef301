package head

import (
	"slices"

	"github.com/prometheus/prometheus/model/histogram"

	"github.com/strata-db/strata/internal/record"
)

// replayBatch is what the dispatcher hands a worker at once: samples of the
// worker's series, in log order. A worker applies a batch's floats, then
// its integer histograms, then its float histograms, so the dispatcher
// hands a batch over before adding a sample of a kind that comes earlier
// in that order than a kind the batch already holds.
//
// The histograms belong to the batch: the dispatcher copies decoded ones
// into them, reusing their memory from one trip to the next. Their
// CustomValues are shared with the decoder's, which never changes them in
// place.
type replayBatch struct {
	floats []record.RefSample
	hists  []record.RefHistogramSample
	fhists []record.RefFloatHistogramSample
}

func newReplayBatch() *replayBatch {
	return &replayBatch{floats: make([]record.RefSample, 0, replayBatchSize)}
}

func (b *replayBatch) len() int { return len(b.floats) + len(b.hists) + len(b.fhists) }

// reset empties the batch, keeping its histograms for reuse.
func (b *replayBatch) reset() {
	for i := range b.hists {
		b.hists[i].H.CustomValues = nil
	}
	for i := range b.fhists {
		b.fhists[i].FH.CustomValues = nil
	}
	b.floats, b.hists, b.fhists = b.floats[:0], b.hists[:0], b.fhists[:0]
}

// addHistogram appends a copy of s.
func (b *replayBatch) addHistogram(s record.RefHistogramSample) {
	b.hists = slices.Grow(b.hists, 1)[:len(b.hists)+1]
	e := &b.hists[len(b.hists)-1]
	if e.H == nil {
		e.H = &histogram.Histogram{}
	}
	s.H.CopyTo(e.H)
	e.Ref, e.T = s.Ref, s.T
}

// addFloatHistogram appends a copy of s.
func (b *replayBatch) addFloatHistogram(s record.RefFloatHistogramSample) {
	b.fhists = slices.Grow(b.fhists, 1)[:len(b.fhists)+1]
	e := &b.fhists[len(b.fhists)-1]
	if e.FH == nil {
		e.FH = &histogram.FloatHistogram{}
	}
	s.FH.CopyTo(e.FH)
	e.Ref, e.T = s.Ref, s.T
}
