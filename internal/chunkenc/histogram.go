package chunkenc

import (
	"math"

	"github.com/prometheus/prometheus/model/histogram"
)

// HistogramChunk holds up to math.MaxUint16 integer histograms
// (histogram.Histogram) of one series. Its layout (schema, zero
// threshold, bucket spans, custom bounds) is stored once; each histogram
// stores its timestamp as a delta-of-delta, its sum XOR'd with the
// previous one, and its zero count, bucket counts and count as
// delta-of-deltas in a variable-width code. The byte format is described
// in docs/format/chunks.md.
//
// A HistogramChunk is not safe for concurrent use: Append writes into the
// memory Bytes returns, so readers of that memory must be synchronised
// with the appender, or work on a copy. The zero value is not usable; use
// NewHistogramChunk.
type HistogramChunk struct {
	histogramEncoder

	// count is the Count of the last histogram that is not a stale marker,
	// for counter reset detection.
	count uint64
	// resid encodes what Count holds beyond the zero count and buckets:
	// usually 0, so its delta-of-delta costs one bit.
	resid dodState
	// vals are the zero count and the buckets' absolute counts of the last
	// histogram, as histogramLayout.numValues lays them out.
	vals []dodState
	// cur is scratch for the histogram being appended, laid out as vals.
	cur []int64
}

// dodState is what encoding an int64 series as delta-of-deltas carries
// from one value to the next.
type dodState struct {
	v int64 // the previous value
	d int64 // the previous delta; 0 after the first value
}

// NewHistogramChunk returns an empty chunk.
func NewHistogramChunk() *HistogramChunk {
	return &HistogramChunk{histogramEncoder: newHistogramEncoder()}
}

// Reset empties the chunk for reuse, keeping its memory. Slices returned
// by Bytes before must no longer be read: the next Append overwrites them.
func (c *HistogramChunk) Reset() {
	c.reset()
	c.count, c.resid = 0, dodState{}
}

// NumSamples returns the number of histograms appended so far.
func (c *HistogramChunk) NumSamples() int { return int(c.num) }

// Bytes returns the encoded chunk, ready for NewHistogramIterator or to be
// written out.
//
// The result aliases the chunk's memory and is only a snapshot in length.
// A later Append rewrites the first two bytes (the sample count) and its
// last byte in place, may move the chunk to new memory, and, when the
// layout grows, re-encodes the whole chunk. A caller that keeps the result
// across an Append, or reads it while another goroutine appends, must copy
// it first. Its capacity is its length, so appending to it copies rather
// than writes into the chunk.
func (c *HistogramChunk) Bytes() []byte { return c.bytes() }

// Append adds the histogram h at time t, or says why it cannot. The caller
// guarantees that t is greater than the previous histogram's timestamp
// (smaller or equal ones still round-trip, but compress badly) and that h
// is valid: h.Validate() returns nil. Append panics if h's spans do not
// describe its buckets, and never keeps or modifies h or its slices.
//
// On an empty chunk Append always succeeds, and h.CounterResetHint sets
// the chunk's header (see CounterResetHeader). After that:
//
//   - A stale marker (h.Sum is Prometheus' stale NaN) joins any chunk that
//     is not full, and only its timestamp and sum are stored.
//   - h gets NeedNewChunk if it cannot join: a gauge histogram
//     (h.CounterResetHint == histogram.GaugeType) in a chunk of counters or
//     the other way round; a schema, zero threshold or custom bounds
//     (compared bit by bit) different from the chunk's; buckets so far
//     from the chunk's that no span list holds both (indices 2^31 apart);
//     or a full chunk, unless h is a counter reset, which is reported as
//     such.
//   - In a chunk of counters, h gets CounterResetDetected if
//     h.CounterResetHint is histogram.CounterReset, or if its count, zero
//     count or any bucket is lower than in the previous histogram (a bucket
//     h lacks counts as 0), stale markers not counting as previous. The
//     caller then appends h to a new chunk with h.CounterResetHint set to
//     histogram.CounterReset, so that the new chunk's header says so.
//   - Otherwise h is appended. If it has buckets the chunk's layout lacks,
//     the chunk re-encodes its histograms with the union of both layouts,
//     the new buckets counting 0 in them; buckets that h lacks are stored
//     as 0 for h.
//
// If the chunk holds only stale markers, h is appended as to an empty
// chunk: its layout and hint replace the chunk's.
//
// NeedNewChunk and CounterResetDetected leave the chunk unchanged. Append
// allocates only when the byte slice has to grow or the layout changes.
func (c *HistogramChunk) Append(t int64, h *histogram.Histogram) AppendResult {
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
		fits := fitHistogram(c.cur, &c.layout, h.PositiveSpans, h.NegativeSpans, h.PositiveBuckets, h.NegativeBuckets, true)
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
			fitHistogram(c.cur, &c.layout, h.PositiveSpans, h.NegativeSpans, h.PositiveBuckets, h.NegativeBuckets, true)
		}
	}
	if !custom {
		c.cur[0] = int64(h.ZeroCount)
	}
	c.appendReal(t, math.Float64bits(h.Sum), h.Count)
	return Appended
}

// adopt makes h's layout and hint the chunk's, for the first histogram
// that is not a stale marker, and fits h into cur.
func (c *HistogramChunk) adopt(h *histogram.Histogram) {
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
	fitHistogram(c.cur, &c.layout, h.PositiveSpans, h.NegativeSpans, h.PositiveBuckets, h.NegativeBuckets, true)
}

// sizeValues sizes vals and cur for the layout, vals all zero.
func (c *HistogramChunk) sizeValues() {
	n := c.layout.numValues()
	c.vals = resizeSlice(c.vals, n)
	clear(c.vals)
	c.cur = resizeSlice(c.cur, n)
	clear(c.cur)
}

// isReset reports whether h, fitted into cur, is a counter reset against
// the chunk's last histogram.
func (c *HistogramChunk) isReset(h *histogram.Histogram) bool {
	if h.CounterResetHint == histogram.CounterReset || h.Count < c.count {
		return true
	}
	first := c.layout.firstValue()
	if first == 0 && h.ZeroCount < uint64(c.vals[0].v) {
		return true
	}
	for i := 1; i < len(c.cur); i++ {
		if c.cur[i] < c.vals[i].v {
			return true
		}
	}
	return false
}

// appendReal writes a histogram that is not a stale marker: its zero
// count and buckets are in cur.
func (c *HistogramChunk) appendReal(t int64, sum uint64, count uint64) {
	c.appendTimeSum(t, sum)
	resid := count
	for i := c.layout.firstValue(); i < len(c.cur); i++ {
		v := c.cur[i]
		c.writeDod(&c.vals[i], v)
		resid -= uint64(v) // wraps like the decoder's sum
	}
	c.writeDod(&c.resid, int64(resid))
	c.count = count
	c.hasReal = true
	c.finish()
}

// writeDod writes v as a delta-of-delta against s. The chunk's first real
// histogram writes its values whole, and their deltas count as 0.
func (c *HistogramChunk) writeDod(s *dodState, v int64) {
	d := v - s.v
	writeVarbit(&c.w, d-s.d)
	if !c.hasReal {
		d = 0
	}
	s.v, s.d = v, d
}
