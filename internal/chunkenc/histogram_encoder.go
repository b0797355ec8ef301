package chunkenc

import (
	"encoding/binary"
	"math"

	"github.com/prometheus/prometheus/model/histogram"
)

// histogramChunkHeaderSize is the size of the header of a histogram chunk
// with samples: the big-endian uint16 sample count, then the counter-reset
// header byte. An empty chunk is only the count.
const histogramChunkHeaderSize = 3

// histogramChunkInitialCap is the capacity a new histogram chunk's byte
// slice starts with: the header, the layout and the first histogram of the
// benchmark histograms (about 20 buckets) take 66-70 bytes, each later one
// 16-31 (BenchmarkHistogramAppend). As for XOR chunks (see
// XORInitialCap), a chunk grows to what its series needs during the
// first chunk, 2-4 KiB for 120 of those, and Reset keeps that capacity
// for the next ones; a quiet series stays small.
const histogramChunkInitialCap = 128

// staleMarkerBits is the bit pattern of Prometheus' stale marker, a NaN
// that marks a series gone; a histogram whose sum has it is a stale
// marker, and nothing else of it is stored (see docs/format/chunks.md).
const staleMarkerBits = 0x7ff0000000000002

// histogramEncoder is the state both histogram chunks share: the bytes,
// the header and layout, and the timestamp and sum of the last sample.
type histogramEncoder struct {
	w      bitWriter // w.buf is the whole chunk, header included
	num    uint16    // samples appended; mirrors the count in the header
	header CounterResetHeader
	layout histogramLayout
	// hasReal says a histogram other than a stale marker is in the chunk.
	// Until one is, the layout and header are the first stale marker's,
	// and the first real histogram replaces them.
	hasReal bool
	t       int64
	tDelta  int64 // wraps like int64 arithmetic
	sum     xorState
}

func newHistogramEncoder() histogramEncoder {
	buf := make([]byte, 2, histogramChunkInitialCap)
	return histogramEncoder{w: bitWriter{buf: buf}, sum: newXORState()}
}

// reset empties the chunk, keeping the memory of its bytes and layout.
func (e *histogramEncoder) reset() {
	buf := e.w.buf[:2]
	clear(buf)
	*e = histogramEncoder{w: bitWriter{buf: buf}, layout: e.layout, sum: newXORState()}
}

// bytes returns the chunk with its capacity cut to its length.
func (e *histogramEncoder) bytes() []byte { return e.w.buf[:len(e.w.buf):len(e.w.buf)] }

// start writes the header byte and e.layout into an empty chunk.
func (e *histogramEncoder) start(header CounterResetHeader) {
	e.header = header
	e.w.buf = append(e.w.buf, byte(header))
	e.w.buf = e.layout.appendLayout(e.w.buf)
}

// joinable says whether a histogram that is not a stale marker, with these
// fields, may join the chunk's real histograms: it is of the same kind
// (gauge or counter) and has the same schema, zero threshold and custom
// bounds.
func (e *histogramEncoder) joinable(hint histogram.CounterResetHint, schema int32, zeroThreshold float64, customValues []float64) bool {
	if (hint == histogram.GaugeType) != (e.header == GaugeType) {
		return false
	}
	return e.layout.matches(schema, zeroThreshold, customValues)
}

// appendStale appends a stale marker. It reports false if the chunk is
// full. A stale marker starts a chunk with an empty layout.
func (e *histogramEncoder) appendStale(t int64, hint histogram.CounterResetHint) bool {
	if e.num == math.MaxUint16 {
		return false
	}
	if e.num == 0 {
		e.layout.set(0, 0, nil, nil, 0, 0, nil)
		e.start(headerFromHint(hint))
	}
	e.appendTimeSum(t, staleMarkerBits)
	e.finish()
	return true
}

// appendTimeSum writes a sample's timestamp and the bits of its sum.
func (e *histogramEncoder) appendTimeSum(t int64, sum uint64) {
	if e.num == 0 {
		// Right after the layout, still byte-aligned.
		e.w.buf = binary.AppendVarint(e.w.buf, t)
	} else {
		// tDelta starts at 0, so sample 1's delta-of-delta is its delta.
		// Differences wrap like int64 arithmetic; decoding reverses them.
		delta := t - e.t
		dod := delta - e.tDelta
		e.tDelta = delta
		code, n, wide := dodCode(dod)
		if wide {
			e.w.writeBits2(code, n, uint64(dod), dodBits4)
		} else {
			e.w.writeBits(code, n)
		}
	}
	e.t = t
	writeXOR(&e.w, &e.sum, sum)
}

// finish counts the sample just written into the header.
func (e *histogramEncoder) finish() {
	e.num++
	binary.BigEndian.PutUint16(e.w.buf, e.num)
}

// layoutFor returns the layout of a histogram with these fields in new
// memory. It panics if the spans do not describe the buckets.
func layoutFor(schema int32, zeroThreshold float64, pos, neg []histogram.Span, nPos, nNeg int, customValues []float64) histogramLayout {
	var l histogramLayout
	if !l.set(schema, zeroThreshold, pos, neg, nPos, nNeg, customValues) {
		panic(errInvalidHistogram)
	}
	return l
}

// errInvalidHistogram is the panic of Append given a histogram whose spans
// do not describe its buckets, a caller's bug like appending to a full
// XOR chunk: the caller validates histograms (histogram.Validate) first.
const errInvalidHistogram = "chunkenc: Append of a histogram whose spans do not describe its buckets (increasing bucket indices, one bucket per span slot, gaps within int32)"

// grownLayout returns a new layout with the chunk's schema, threshold and
// bounds and the union of its spans with pos and neg (nil for custom
// buckets). It reports false if the union cannot be written as spans.
func (e *histogramEncoder) grownLayout(pos, neg []histogram.Span) (histogramLayout, bool) {
	l := histogramLayout{schema: e.layout.schema, zeroThreshold: e.layout.zeroThreshold, customValues: e.layout.customValues}
	var ok bool
	if l.posSpans, ok = unionSpans(e.layout.posSpans, pos); !ok {
		return l, false
	}
	l.nPos = countBuckets(l.posSpans)
	if !l.custom() {
		if l.negSpans, ok = unionSpans(e.layout.negSpans, neg); !ok {
			return l, false
		}
		l.nNeg = countBuckets(l.negSpans)
	}
	return l, true
}

// countBuckets returns the number of buckets spans cover.
func countBuckets(spans []histogram.Span) int {
	n := 0
	for _, s := range spans {
		n += int(s.Length)
	}
	return n
}

// fitHistogram writes a histogram's buckets into vals, laid out as
// histogramLayout.numValues says, for the chunk's layout. It reports
// whether the layout has all of the histogram's buckets, and panics if
// the spans do not describe the buckets. neg and negBuckets are ignored
// for custom buckets.
func fitHistogram[T int64 | float64](vals []T, l *histogramLayout, pos, neg []histogram.Span, posBuckets, negBuckets []T, deltas bool) (fits bool) {
	fits, valid := fitBuckets(vals[1:1+l.nPos], l.posSpans, pos, posBuckets, deltas)
	if !valid {
		panic(errInvalidHistogram)
	}
	if l.custom() {
		return fits
	}
	fitsNeg, valid := fitBuckets(vals[1+l.nPos:], l.negSpans, neg, negBuckets, deltas)
	if !valid {
		panic(errInvalidHistogram)
	}
	return fits && fitsNeg
}

// resizeSlice returns s with length n, reusing its memory if it can. The
// elements are not cleared.
func resizeSlice[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
