package head

import "github.com/strata-db/strata/internal/record"

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
	b.hists = appendHistogramCopy(b.hists, s.Ref, s.T, s.H)
}

// addFloatHistogram appends a copy of s.
func (b *replayBatch) addFloatHistogram(s record.RefFloatHistogramSample) {
	b.fhists = appendFloatHistogramCopy(b.fhists, s.Ref, s.T, s.FH)
}
