package chunkenc

import (
	"math"

	"github.com/prometheus/prometheus/model/histogram"
)

// FloatHistogramChunk holds up to math.MaxUint16 float histograms
// (histogram.FloatHistogram) of one series. Its layout is stored once, as
// in a HistogramChunk; each histogram stores its timestamp as a
// delta-of-delta, and its sum, zero count and bucket counts XOR'd with the
// previous histogram's, and its count XOR'd with the sum of its zero count
// and buckets. The byte format is described in docs/format/chunks.md.
//
// A FloatHistogramChunk is not safe for concurrent use: Append writes into
// the memory Bytes returns, so readers of that memory must be synchronised
// with the appender, or work on a copy. The zero value is not usable; use
// NewFloatHistogramChunk.
type FloatHistogramChunk struct {
	histogramEncoder

	// count is XOR'd with the count predicted from the zero count and
	// buckets (see predictCount); count.v is the last histogram's Count.
	count xorState
	// vals are the zero count and buckets of the last histogram, as
	// histogramLayout.numValues lays them out.
	vals []xorState
	// cur is scratch for the histogram being appended, laid out as vals.
	cur []float64
}

// NewFloatHistogramChunk returns an empty chunk.
func NewFloatHistogramChunk() *FloatHistogramChunk {
	return &FloatHistogramChunk{histogramEncoder: newHistogramEncoder(), count: newXORState()}
}

// Reset empties the chunk for reuse, keeping its memory. Slices returned
// by Bytes before must no longer be read: the next Append overwrites them.
func (c *FloatHistogramChunk) Reset() {
	c.reset()
	c.count = newXORState()
}

// NumSamples returns the number of histograms appended so far.
func (c *FloatHistogramChunk) NumSamples() int { return int(c.num) }

// Bytes returns the encoded chunk, ready for NewFloatHistogramIterator or
// to be written out. It aliases the chunk's memory as
// HistogramChunk.Bytes does.
func (c *FloatHistogramChunk) Bytes() []byte { return c.bytes() }

// Append adds the histogram h at time t, or says why it cannot, as
// HistogramChunk.Append does: the same rules decide between Appended,
// NeedNewChunk and CounterResetDetected, with counts and buckets compared
// as floats (a NaN is never lower), and Append panics if h's spans do not
// describe its buckets. After CounterResetDetected the caller appends h
// to a new chunk with h.CounterResetHint set to histogram.CounterReset.
//
// NeedNewChunk and CounterResetDetected leave the chunk unchanged. Append
// allocates only when the byte slice has to grow or the layout changes.
func (c *FloatHistogramChunk) Append(t int64, h *histogram.FloatHistogram) AppendResult {
	if math.Float64bits(h.Sum) == staleMarkerBits {
		if !c.appendStale(t, h.CounterResetHint) {
			return NeedNewChunk
		}
		return Appended
	}
	custom := histogram.IsCustomBucketsSchema(h.Schema)
	if !c.hasReal {
		if c.num == math.MaxUint16 {
			return NeedNewChunk
		}
		c.adopt(h)
	} else {
		if !c.joinable(h.CounterResetHint, h.Schema, h.ZeroThreshold, h.CustomValues) {
			return NeedNewChunk
		}
		fits := fitHistogram(c.cur, &c.layout, h.PositiveSpans, h.NegativeSpans, h.PositiveBuckets, h.NegativeBuckets, false)
		if c.header != GaugeType && c.isReset(h) {
			return CounterResetDetected
		}
		if c.num == math.MaxUint16 {
			return NeedNewChunk
		}
		if !fits {
			l, ok := c.grownLayout(h.PositiveSpans, h.NegativeSpans)
			if !ok {
				return NeedNewChunk
			}
			c.recode(l, c.header)
			fitHistogram(c.cur, &c.layout, h.PositiveSpans, h.NegativeSpans, h.PositiveBuckets, h.NegativeBuckets, false)
		}
	}
	if !custom {
		c.cur[0] = h.ZeroCount
	}
	c.appendReal(t, math.Float64bits(h.Sum), math.Float64bits(h.Count))
	return Appended
}

// adopt makes h's layout and hint the chunk's, for the first histogram
// that is not a stale marker, and fits h into cur.
func (c *FloatHistogramChunk) adopt(h *histogram.FloatHistogram) {
	header := headerFromHint(h.CounterResetHint)
	if c.num == 0 {
		// Into the layout's memory, which Reset keeps.
		if !c.layout.set(h.Schema, h.ZeroThreshold, h.PositiveSpans, h.NegativeSpans,
			len(h.PositiveBuckets), len(h.NegativeBuckets), h.CustomValues) {
			panic(errInvalidHistogram)
		}
		c.start(header)
		c.sizeValues()
	} else {
		l := layoutFor(h.Schema, h.ZeroThreshold, h.PositiveSpans, h.NegativeSpans,
			len(h.PositiveBuckets), len(h.NegativeBuckets), h.CustomValues)
		c.recode(l, header) // the stale markers so far
	}
	fitHistogram(c.cur, &c.layout, h.PositiveSpans, h.NegativeSpans, h.PositiveBuckets, h.NegativeBuckets, false)
}

// sizeValues sizes vals and cur for the layout, vals in their initial
// state.
func (c *FloatHistogramChunk) sizeValues() {
	n := c.layout.numValues()
	c.vals = resizeSlice(c.vals, n)
	for i := range c.vals {
		c.vals[i] = newXORState()
	}
	c.cur = resizeSlice(c.cur, n)
	clear(c.cur)
}

// isReset reports whether h, fitted into cur, is a counter reset against
// the chunk's last histogram.
func (c *FloatHistogramChunk) isReset(h *histogram.FloatHistogram) bool {
	if h.CounterResetHint == histogram.CounterReset || h.Count < math.Float64frombits(c.count.v) {
		return true
	}
	if c.layout.firstValue() == 0 && h.ZeroCount < math.Float64frombits(c.vals[0].v) {
		return true
	}
	for i := 1; i < len(c.cur); i++ {
		if c.cur[i] < math.Float64frombits(c.vals[i].v) {
			return true
		}
	}
	return false
}

// appendReal writes a histogram that is not a stale marker: its zero
// count and buckets are in cur.
func (c *FloatHistogramChunk) appendReal(t int64, sum, count uint64) {
	c.appendTimeSum(t, sum)
	first := c.layout.firstValue()
	for i := first; i < len(c.cur); i++ {
		writeXOR(&c.w, &c.vals[i], math.Float64bits(c.cur[i]))
	}
	c.count.v = predictCount(c.vals[first:])
	writeXOR(&c.w, &c.count, count)
	c.hasReal = true
	c.finish()
}

// predictCount returns the bits of the sum of the values' floats, added in
// order: the count a histogram without NaN observations has, exactly or
// nearly. Encoder and decoder compute it alike, so the count's XOR with
// it is usually 0 or narrow.
func predictCount(vals []xorState) uint64 {
	var p float64
	for _, s := range vals {
		p += math.Float64frombits(s.v)
	}
	return math.Float64bits(p)
}
