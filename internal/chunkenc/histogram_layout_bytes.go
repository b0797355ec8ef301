package chunkenc

import (
	"encoding/binary"
	"math"

	"github.com/prometheus/prometheus/model/histogram"
)

// appendLayout appends the layout's bytes, as docs/format/chunks.md describes them.
func (l *histogramLayout) appendLayout(b []byte) []byte {
	b = binary.AppendVarint(b, int64(l.schema))
	if l.custom() {
		b = appendSpans(b, l.posSpans)
		b = binary.AppendUvarint(b, uint64(len(l.customValues)))
		for _, v := range l.customValues {
			b = binary.BigEndian.AppendUint64(b, math.Float64bits(v))
		}
		return b
	}
	b = binary.BigEndian.AppendUint64(b, l.zeroThreshold)
	b = appendSpans(b, l.posSpans)
	return appendSpans(b, l.negSpans)
}

func appendSpans(b []byte, spans []histogram.Span) []byte {
	b = binary.AppendUvarint(b, uint64(len(spans)))
	for _, s := range spans {
		b = binary.AppendVarint(b, int64(s.Offset))
		b = binary.AppendUvarint(b, uint64(s.Length))
	}
	return b
}

// layoutParser reads a layout from bytes, remembering where it failed.
type layoutParser struct {
	b      []byte // not yet read
	reason string // why parsing failed; "" while it has not
}

// parseLayout reads a layout from the start of b into l, reusing l's span
// memory. l's custom bounds are kept if they are the same, and replaced
// by a new slice otherwise: they are handed out to histograms and never
// written to. It returns the bytes after the layout, or, if reason is not
// "", the bytes from where it failed.
func (l *histogramLayout) parseLayout(b []byte) (rest []byte, reason string) {
	p := layoutParser{b: b}
	schema := p.varint()
	if p.reason == "" && (schema < math.MinInt32 || schema > math.MaxInt32) {
		p.fail("schema out of the int32 range")
	}
	l.schema = int32(schema)
	if p.reason != "" {
		return p.b, p.reason
	}
	if l.custom() {
		l.zeroThreshold = 0
		l.posSpans, l.nPos = p.spans(l.posSpans[:0])
		l.negSpans, l.nNeg = l.negSpans[:0], 0
		l.customValues = p.customValues(l.customValues)
		return p.b, p.reason
	}
	// customValues stays as it is, for the next chunk of custom buckets.
	l.zeroThreshold = p.fixed64()
	l.posSpans, l.nPos = p.spans(l.posSpans[:0])
	l.negSpans, l.nNeg = p.spans(l.negSpans[:0])
	return p.b, p.reason
}

func (p *layoutParser) fail(reason string) {
	if p.reason == "" {
		p.reason = reason
	}
}

func (p *layoutParser) uvarint() uint64 {
	if p.reason != "" {
		return 0
	}
	u, n := binary.Uvarint(p.b)
	switch {
	case n == 0:
		p.fail("truncated layout")
	case n < 0:
		p.fail("layout varint overflows 64 bits")
	default:
		p.b = p.b[n:]
	}
	return u
}

func (p *layoutParser) varint() int64 {
	u := p.uvarint()
	// Undo the zig-zag encoding of binary.AppendVarint.
	return int64(u>>1) ^ -int64(u&1)
}

// fixed64 reads a big-endian uint64.
func (p *layoutParser) fixed64() uint64 {
	if p.reason != "" {
		return 0
	}
	if len(p.b) < 8 {
		p.fail("truncated layout")
		return 0
	}
	u := binary.BigEndian.Uint64(p.b)
	p.b = p.b[8:]
	return u
}

// spans appends a span list to dst and returns it and the number of
// buckets it covers. It accepts only canonical spans.
func (p *layoutParser) spans(dst []histogram.Span) ([]histogram.Span, int) {
	n := p.uvarint()
	// Every span takes at least two bytes: bound n before growing dst.
	if p.reason == "" && n > uint64(len(p.b)/2) {
		p.fail("more spans than the chunk has bytes")
	}
	var buckets int64
	for i := uint64(0); i < n && p.reason == ""; i++ {
		offset, length := p.varint(), p.uvarint()
		switch {
		case p.reason != "":
		case offset < math.MinInt32 || offset > math.MaxInt32:
			p.fail("span offset out of the int32 range")
		case length == 0 || length > math.MaxUint32:
			p.fail("span length not in [1, 2^32-1]")
		case i > 0 && offset < 1:
			p.fail("spans not separated by a gap")
		default:
			dst = append(dst, histogram.Span{Offset: int32(offset), Length: uint32(length)})
			// A histogram spends at least a bit on every bucket: this
			// coarse bound keeps the count an int; the iterator checks
			// it against the stream's bits exactly.
			if buckets += int64(length); buckets > int64(len(p.b))*8 {
				p.fail("more buckets than the chunk has bits")
			}
		}
	}
	return dst, int(buckets)
}

// customValues returns the custom bounds that follow: old if it holds the
// same bits, else a new slice.
func (p *layoutParser) customValues(old []float64) []float64 {
	n := p.uvarint()
	if p.reason != "" {
		return old
	}
	// Each bound takes eight bytes: bound n before allocating.
	if n > uint64(len(p.b)/8) {
		p.fail("more custom bounds than the chunk has bytes")
		return old
	}
	raw := p.b[:n*8]
	p.b = p.b[n*8:]
	same := len(old) == int(n)
	for i := 0; same && i < len(old); i++ {
		same = math.Float64bits(old[i]) == binary.BigEndian.Uint64(raw[8*i:])
	}
	if same {
		return old
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = math.Float64frombits(binary.BigEndian.Uint64(raw[8*i:]))
	}
	return out
}
