package chunkenc

import (
	"math"

	"github.com/prometheus/prometheus/model/histogram"
)

// FloatHistogramIterator decodes the histograms of an encoded
// FloatHistogramChunk in order. It is reused, and holds the bytes it was
// given, as HistogramIterator does.
type FloatHistogramIterator struct {
	histogramDecoder

	count xorState   // count.v is the current histogram's Count
	vals  []xorState // zero count and buckets, as in FloatHistogramChunk
}

// NewFloatHistogramIterator returns an iterator over the encoded chunk b.
func NewFloatHistogramIterator(b []byte) *FloatHistogramIterator {
	it := &FloatHistogramIterator{}
	it.Reset(b)
	return it
}

// Reset makes the iterator start over on the encoded chunk b, which is
// laid out as FloatHistogramChunk.Bytes returns it (or a copy of that). A
// malformed header or layout is reported by Err at once, and Next returns
// false.
func (it *FloatHistogramIterator) Reset(b []byte) {
	it.reset(b, EncFloatHistogram)
	it.count = newXORState()
	it.vals = it.vals[:0]
	if it.err == nil && it.num > 0 {
		it.vals = resizeSlice(it.vals, it.layout.numValues())
		for i := range it.vals {
			it.vals[i] = newXORState()
		}
	}
}

// Header returns the chunk's counter-reset header. It is valid after Reset;
// an empty chunk, or one that breaks off or is corrupt before or in its
// header byte, reports UnknownCounterReset.
func (it *FloatHistogramIterator) Header() CounterResetHeader { return it.header }

// Err returns the error that ended the iteration, if any. It wraps
// ErrCorruptChunk and is a *CorruptChunkError.
func (it *FloatHistogramIterator) Err() error { return it.err }

// AtT returns the current timestamp. It is only valid after Next returned
// true.
func (it *FloatHistogramIterator) AtT() int64 { return it.t }

// Next advances to the next histogram. It returns false at the end of the
// chunk or on malformed input; Err tells which. After the header's count
// of samples, Next checks that nothing but up to 7 zero bits of padding
// follows, so trailing garbage is reported too.
func (it *FloatHistogramIterator) Next() bool {
	if !it.nextTimeSum() {
		return false
	}
	if !it.stale {
		first := it.layout.firstValue()
		for i := first; i < len(it.vals); i++ {
			if reason := readXOR(&it.br, &it.vals[i]); reason != "" {
				return it.corrupt("zero count or bucket: " + reason)
			}
		}
		it.count.v = predictCount(it.vals[first:])
		if reason := readXOR(&it.br, &it.count); reason != "" {
			return it.corrupt("count: " + reason)
		}
		it.reals++
	}
	it.read++
	return true
}

// val returns value i of the current histogram (see
// histogramLayout.numValues).
func (it *FloatHistogramIterator) val(i int) float64 { return math.Float64frombits(it.vals[i].v) }

// AtFloatHistogram returns the current histogram. It is only valid after
// Next returned true. It writes into fh, reusing its slices, if fh is not
// nil, and into a new histogram otherwise. What it returns, and how
// CustomValues is shared, is as for HistogramIterator.AtHistogram.
func (it *FloatHistogramIterator) AtFloatHistogram(fh *histogram.FloatHistogram) *histogram.FloatHistogram {
	if fh == nil {
		fh = &histogram.FloatHistogram{}
	}
	if it.stale {
		setStaleFloat(fh)
		return fh
	}
	l := &it.layout
	fh.CounterResetHint = it.hint()
	fh.Schema = l.schema
	fh.Count = math.Float64frombits(it.count.v)
	fh.Sum = math.Float64frombits(it.sum.v)
	fh.PositiveSpans = append(fh.PositiveSpans[:0], l.posSpans...)
	fh.PositiveBuckets = fh.PositiveBuckets[:0]
	for i := range l.nPos {
		fh.PositiveBuckets = append(fh.PositiveBuckets, it.val(1+i))
	}
	if l.custom() {
		fh.ZeroThreshold, fh.ZeroCount = 0, 0
		fh.NegativeSpans, fh.NegativeBuckets = fh.NegativeSpans[:0], fh.NegativeBuckets[:0]
		fh.CustomValues = l.customValues
		return fh
	}
	fh.ZeroThreshold = math.Float64frombits(l.zeroThreshold)
	fh.ZeroCount = it.val(0)
	fh.NegativeSpans = append(fh.NegativeSpans[:0], l.negSpans...)
	fh.NegativeBuckets = fh.NegativeBuckets[:0]
	for i := range l.nNeg {
		fh.NegativeBuckets = append(fh.NegativeBuckets, it.val(1+l.nPos+i))
	}
	fh.CustomValues = nil
	return fh
}
