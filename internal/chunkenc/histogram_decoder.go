package chunkenc

import (
	"encoding/binary"

	"github.com/prometheus/prometheus/model/histogram"
)

// histogramDecoder is the state both histogram iterators share: the
// header and layout, and the timestamp and sum of the current sample.
type histogramDecoder struct {
	enc  Encoding
	br   bitReader
	size int // len of the chunk, to turn the reader's position into an offset

	num  uint16 // samples in the chunk, from the header
	read uint16 // samples decoded so far
	// reals counts the decoded histograms that are not stale markers: the
	// first of them holds its values whole.
	reals uint16

	header CounterResetHeader
	layout histogramLayout
	t0     int64 // from the byte-aligned start of the chunk

	t      int64
	tDelta int64
	sum    xorState
	stale  bool // the current sample is a stale marker

	err error // sticky: once set, Next returns false
}

// reset parses the header, layout and first timestamp of b, keeping the
// memory of the layout. A malformed start sets err.
func (d *histogramDecoder) reset(b []byte, enc Encoding) {
	*d = histogramDecoder{enc: enc, size: len(b), layout: d.layout, sum: newXORState()}
	// A b too short for the count leaves num at 0, and Next reports it.
	if len(b) < 2 {
		return
	}
	d.num = binary.BigEndian.Uint16(b)
	if d.num == 0 {
		d.br.reset(b[2:]) // Next reports anything after the count
		return
	}
	if len(b) < histogramChunkHeaderSize {
		d.corruptAt(len(b), "truncated header")
		return
	}
	if b[2] > byte(GaugeType) {
		d.corruptAt(2, "unknown counter reset header")
		return
	}
	d.header = CounterResetHeader(b[2])
	rest, reason := d.layout.parseLayout(b[histogramChunkHeaderSize:])
	if reason != "" {
		d.corruptAt(len(b)-len(rest), reason)
		return
	}
	t0, n := binary.Varint(rest)
	switch {
	case n == 0:
		d.corruptAt(len(b), "truncated timestamp varint")
		return
	case n < 0:
		d.corruptAt(len(b)-len(rest), "timestamp varint overflows 64 bits")
		return
	}
	d.t0 = t0
	rest = rest[n:]
	// Every histogram but a stale marker spends at least a bit on every
	// bucket, and the chunk's layout comes from one: bound the buckets
	// before the iterator allocates for them.
	if d.layout.nPos+d.layout.nNeg > len(rest)*8 {
		d.corruptAt(len(b)-len(rest), "more buckets than the chunk has bits")
		return
	}
	d.br.reset(rest)
}

// nextTimeSum starts the next sample: it reads its timestamp and sum. It
// returns false at the end of the chunk or on malformed input.
func (d *histogramDecoder) nextTimeSum() bool {
	if d.err != nil {
		return false
	}
	if d.read == d.num {
		d.checkEnd()
		return false
	}
	if d.read == 0 {
		d.t = d.t0
	} else if !d.readDod() {
		return false
	}
	if reason := readXOR(&d.br, &d.sum); reason != "" {
		return d.corrupt("sum: " + reason)
	}
	d.stale = d.sum.v == staleMarkerBits
	return true
}

// readDod reads a timestamp delta-of-delta and advances the timestamp.
func (d *histogramDecoder) readDod() bool {
	prefix, ok := d.br.readOnesFast(4)
	if !ok {
		if prefix, ok = d.br.readOnes(4); !ok {
			return d.corrupt("truncated timestamp")
		}
	}
	if prefix > 0 {
		n := dodBits[prefix]
		u, ok := d.br.readBitsFast(n)
		if !ok {
			if u, ok = d.br.readBits(n); !ok {
				return d.corrupt("truncated timestamp")
			}
		}
		// Sign-extend the n-bit two's complement value.
		d.tDelta += int64(u<<((64-n)&63)) >> ((64 - n) & 63)
	}
	d.t += d.tDelta
	return true
}

// hint returns the counter reset hint of the current histogram, which is
// not a stale marker: "gauge" in a gauge chunk; in a chunk of counters,
// "unknown" for the chunk's first sample, whatever the header says, and
// "no reset" for the others (a chunk of counters never holds one).
func (d *histogramDecoder) hint() histogram.CounterResetHint {
	switch {
	case d.header == GaugeType:
		return histogram.GaugeType
	case d.read > 1:
		return histogram.NotCounterReset
	}
	// The chunk's first sample: whether it follows the one before it
	// without a reset depends on the previous chunk, which a late
	// sample, a backfill or a deletion may have changed since the
	// header was written. Prometheus' storage says unknown here, and
	// queries (rate's reset detection, aggregations' warnings) go by
	// what the storage says.
	return histogram.UnknownCounterReset
}

// checkEnd reports a missing header, or trailing data after the last
// sample: at most the zero padding of the last byte may remain.
func (d *histogramDecoder) checkEnd() {
	if d.size < 2 {
		d.corruptAt(d.size, "chunk shorter than its 2-byte count")
		return
	}
	if problem := d.br.endProblem(); problem != "" {
		d.corrupt(problem)
	}
}

// corrupt records a CorruptChunkError at the reader's position and
// returns false, so that decoders can return it.
func (d *histogramDecoder) corrupt(reason string) bool {
	return d.corruptAt(d.br.offset(d.size), reason)
}

// corruptAt records a CorruptChunkError at byte offset off.
func (d *histogramDecoder) corruptAt(off int, reason string) bool {
	d.err = &CorruptChunkError{Encoding: d.enc, Offset: off, Sample: int(d.read), Reason: reason}
	return false
}
