package chunkenc

import (
	"math"

	"github.com/prometheus/prometheus/model/histogram"
)

// HistogramIterator decodes the histograms of an encoded HistogramChunk in
// order.
//
// An iterator is meant to be reused: Reset points it at another chunk,
// allocating only to grow its buffers for a bigger layout or to hold new
// custom bounds, and Next allocates only the error for malformed input.
// The zero value is usable after Reset. The iterator reads the bytes it
// was given, and keeps them, until the next Reset (Reset(nil) lets go of
// them); it never modifies them, and they must not change while it
// iterates (see HistogramChunk.Bytes).
type HistogramIterator struct {
	histogramDecoder

	count uint64     // Count of the current histogram
	resid dodState   // Count minus the zero count and buckets
	vals  []dodState // zero count and absolute bucket counts, as in HistogramChunk
}

// NewHistogramIterator returns an iterator over the encoded chunk b.
func NewHistogramIterator(b []byte) *HistogramIterator {
	it := &HistogramIterator{}
	it.Reset(b)
	return it
}

// Reset makes the iterator start over on the encoded chunk b, which is
// laid out as HistogramChunk.Bytes returns it (or a copy of that). A
// malformed header or layout is reported by Err at once, and Next returns
// false.
func (it *HistogramIterator) Reset(b []byte) {
	it.reset(b, EncHistogram)
	it.count, it.resid = 0, dodState{}
	it.vals = it.vals[:0]
	if it.err == nil && it.num > 0 {
		it.vals = resizeSlice(it.vals, it.layout.numValues())
		clear(it.vals)
	}
}

// Header returns the chunk's counter-reset header. It is valid after Reset;
// an empty chunk, or one that breaks off or is corrupt before or in its
// header byte, reports UnknownCounterReset.
func (it *HistogramIterator) Header() CounterResetHeader { return it.header }

// Err returns the error that ended the iteration, if any. It wraps
// ErrCorruptChunk and is a *CorruptChunkError.
func (it *HistogramIterator) Err() error { return it.err }

// AtT returns the current timestamp. It is only valid after Next returned
// true.
func (it *HistogramIterator) AtT() int64 { return it.t }

// Next advances to the next histogram. It returns false at the end of the
// chunk or on malformed input; Err tells which. After the header's count
// of samples, Next checks that nothing but up to 7 zero bits of padding
// follows, so trailing garbage is reported too.
func (it *HistogramIterator) Next() bool {
	if !it.nextTimeSum() {
		return false
	}
	if !it.stale {
		first := it.layout.firstValue()
		for i := first; i < len(it.vals); i++ {
			if !it.readValue(&it.vals[i]) {
				return it.corrupt("truncated zero count or bucket")
			}
		}
		if !it.readValue(&it.resid) {
			return it.corrupt("truncated count")
		}
		count := uint64(it.resid.v)
		for _, s := range it.vals[first:] {
			count += uint64(s.v) // wraps like the encoder's difference
		}
		it.count = count
		it.reals++
	}
	it.read++
	return true
}

// readValue reads a delta-of-delta and applies it to s. The chunk's first
// real histogram has its values whole.
func (it *HistogramIterator) readValue(s *dodState) bool {
	x, ok := readVarbit(&it.br)
	if !ok {
		return false
	}
	if it.reals == 0 {
		s.v, s.d = x, 0
		return true
	}
	s.d += x
	s.v += s.d
	return true
}

// AtHistogram returns the current histogram. It is only valid after Next
// returned true. It writes into h, reusing h's slices, if h is not nil,
// and into a new histogram otherwise.
//
// The result does not alias the iterator's memory, except for
// CustomValues: those of custom-bucket histograms are one slice per set of
// bounds, shared by all histograms the iterator returns with them, and
// never written to. Package histogram already asks that they be treated
// as immutable, and that h's be copied by reference, so AtHistogram never
// writes into h.CustomValues.
//
// The spans are the chunk's layout, so the histogram may have buckets of
// count 0 that the appended one lacked. A stale marker comes back as
// Prometheus writes one: Sum is the stale NaN and everything else is zero.
// CounterResetHint is what Prometheus' storage gives: GaugeType in a
// gauge chunk; in a chunk of counters, UnknownCounterReset for the
// chunk's first sample, whatever its header says, and NotCounterReset
// for the others.
func (it *HistogramIterator) AtHistogram(h *histogram.Histogram) *histogram.Histogram {
	if h == nil {
		h = &histogram.Histogram{}
	}
	if it.stale {
		*h = histogram.Histogram{
			Sum:             math.Float64frombits(staleMarkerBits),
			PositiveSpans:   h.PositiveSpans[:0],
			NegativeSpans:   h.NegativeSpans[:0],
			PositiveBuckets: h.PositiveBuckets[:0],
			NegativeBuckets: h.NegativeBuckets[:0],
		}
		return h
	}
	l := &it.layout
	h.CounterResetHint = it.hint()
	h.Schema = l.schema
	h.Count = it.count
	h.Sum = math.Float64frombits(it.sum.v)
	h.PositiveSpans = append(h.PositiveSpans[:0], l.posSpans...)
	h.PositiveBuckets = appendDeltas(h.PositiveBuckets[:0], it.vals[1:1+l.nPos])
	if l.custom() {
		h.ZeroThreshold, h.ZeroCount = 0, 0
		h.NegativeSpans, h.NegativeBuckets = h.NegativeSpans[:0], h.NegativeBuckets[:0]
		h.CustomValues = l.customValues
		return h
	}
	h.ZeroThreshold = math.Float64frombits(l.zeroThreshold)
	h.ZeroCount = uint64(it.vals[0].v)
	h.NegativeSpans = append(h.NegativeSpans[:0], l.negSpans...)
	h.NegativeBuckets = appendDeltas(h.NegativeBuckets[:0], it.vals[1+l.nPos:])
	h.CustomValues = nil
	return h
}

// appendDeltas appends the differences between consecutive counts, the
// first against 0, as histogram.Histogram holds its buckets.
func appendDeltas(dst []int64, vals []dodState) []int64 {
	var prev int64
	for _, s := range vals {
		dst = append(dst, s.v-prev)
		prev = s.v
	}
	return dst
}

// AtFloatHistogram returns the current histogram converted to a float
// histogram, written into fh if it is not nil, as AtHistogram does.
func (it *HistogramIterator) AtFloatHistogram(fh *histogram.FloatHistogram) *histogram.FloatHistogram {
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
	fh.Count = float64(it.count)
	fh.Sum = math.Float64frombits(it.sum.v)
	fh.PositiveSpans = append(fh.PositiveSpans[:0], l.posSpans...)
	fh.PositiveBuckets = fh.PositiveBuckets[:0]
	for _, s := range it.vals[1 : 1+l.nPos] {
		fh.PositiveBuckets = append(fh.PositiveBuckets, float64(s.v))
	}
	if l.custom() {
		fh.ZeroThreshold, fh.ZeroCount = 0, 0
		fh.NegativeSpans, fh.NegativeBuckets = fh.NegativeSpans[:0], fh.NegativeBuckets[:0]
		fh.CustomValues = l.customValues
		return fh
	}
	fh.ZeroThreshold = math.Float64frombits(l.zeroThreshold)
	fh.ZeroCount = float64(uint64(it.vals[0].v))
	fh.NegativeSpans = append(fh.NegativeSpans[:0], l.negSpans...)
	fh.NegativeBuckets = fh.NegativeBuckets[:0]
	for _, s := range it.vals[1+l.nPos:] {
		fh.NegativeBuckets = append(fh.NegativeBuckets, float64(s.v))
	}
	fh.CustomValues = nil
	return fh
}

// setStaleFloat makes fh a stale marker as Prometheus writes one, keeping
// its slices' memory.
func setStaleFloat(fh *histogram.FloatHistogram) {
	*fh = histogram.FloatHistogram{
		Sum:             math.Float64frombits(staleMarkerBits),
		PositiveSpans:   fh.PositiveSpans[:0],
		NegativeSpans:   fh.NegativeSpans[:0],
		PositiveBuckets: fh.PositiveBuckets[:0],
		NegativeBuckets: fh.NegativeBuckets[:0],
	}
}
