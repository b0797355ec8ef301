package chunkenc

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// xorChunkHeaderSize is the size of the big-endian uint16 sample count that
// starts every XOR chunk.
const xorChunkHeaderSize = 2

// xorChunkInitialCap is the capacity NewXORChunk gives the byte slice. The
// head cuts a new chunk about every 120 samples and then reuses the open
// chunk's memory (Reset), so the slice grows to what a series needs during
// its first chunk and keeps that capacity for good. Starting small costs a
// series two or three growths once, and saves every short-lived or quiet
// series the difference: BenchmarkSeriesMemory (head) measured 1140 bytes
// per series with 1-4 samples at a 256-byte start and 948 at 64, and the
// same 1152 at 120 samples either way.
const xorChunkInitialCap = 64

// Delta-of-delta buckets: a prefix of up to four ones, ended by a zero
// unless it has four, picks the width of the two's complement value that
// follows. See docs/format/chunks.md for why these widths.
const (
	dodBits1 = 7  // prefix 10
	dodBits2 = 14 // prefix 110
	dodBits3 = 20 // prefix 1110
	dodBits4 = 64 // prefix 1111
)

// dodBits maps the count of ones in a delta-of-delta prefix to the width
// of the value that follows.
var dodBits = [5]uint8{0, dodBits1, dodBits2, dodBits3, dodBits4}

// maxLeading is the largest count of leading zero bits the 5-bit field of a
// '11' value can hold; XORs with more are encoded as if they had 31.
const maxLeading = 31

// XORChunk holds up to math.MaxUint16 float samples: timestamps as
// delta-of-delta, values XOR'd with the previous value (Gorilla). The byte
// format is described in docs/format/chunks.md.
//
// An XORChunk is not safe for concurrent use: Append writes into the memory
// Bytes returns, so readers of that memory must be synchronised with the
// appender, or work on a copy. The zero value is not usable; use
// NewXORChunk.
//
// A chunk kept open for long can hand the bytes it has finished to its
// owner (Detach), who keeps them elsewhere, and then holds in memory only
// the bytes appended since: the head keeps all but the newest part of an
// open chunk in a file this way.
type XORChunk struct {
	t      int64  // last timestamp
	tDelta int64  // last timestamp delta (wraps like int64 arithmetic)
	v      uint64 // bits of the last value

	// w.buf is the chunk after its detached bytes: the whole chunk,
	// header included, until Detach.
	w bitWriter

	num     uint16 // samples appended; mirrors the header while none is detached
	leading uint8  // leading zeros of the current XOR window
	sigbits uint8  // width of the current XOR window; trailing = 64-leading-sigbits
	// detached is how many of the chunk's leading bytes Detach handed off.
	detached uint32
}

// NewXORChunk returns an empty chunk.
func NewXORChunk() *XORChunk {
	// The byte slice is pre-sized for about 120 samples so a typical chunk
	// never reallocates; see xorChunkInitialCap.
	buf := make([]byte, xorChunkHeaderSize, xorChunkInitialCap)
	return &XORChunk{
		w:       bitWriter{buf: buf},
		sigbits: 64, // the initial window spans all 64 bits
	}
}

// Reset empties the chunk for reuse, keeping its memory. Slices returned
// by Bytes before must no longer be read: the next Append overwrites them.
func (c *XORChunk) Reset() {
	buf := c.w.buf[:xorChunkHeaderSize]
	clear(buf)
	*c = XORChunk{w: bitWriter{buf: buf}, sigbits: 64}
}

// NumSamples returns the number of samples appended so far.
func (c *XORChunk) NumSamples() int { return int(c.num) }

// Finished returns the bytes after the detached ones that appends no
// longer change: all but a partly written last byte. If none is detached
// yet, they start with the header, holding the sample count of now. The
// result aliases the chunk's memory, as Bytes does.
func (c *XORChunk) Finished() []byte {
	n := len(c.w.buf)
	if c.w.free != 0 {
		n--
	}
	return c.w.buf[:n:n]
}

// Detach drops the first n bytes of what Finished returned from the
// chunk's memory, which keeps its capacity: the caller holds them now.
// Bytes then returns only the bytes after all detached ones, and Append no
// longer updates the header.
func (c *XORChunk) Detach(n int) {
	if n > len(c.Finished()) {
		panic("chunkenc: Detach of unfinished bytes")
	}
	c.w.buf = c.w.buf[:copy(c.w.buf, c.w.buf[n:])]
	c.detached += uint32(n)
}

// Detached returns how many of the chunk's leading bytes were detached.
func (c *XORChunk) Detached() int { return int(c.detached) }

// AppendWhole appends the whole chunk to dst: detached, the bytes Detach
// handed off as their holder has them, then those the chunk holds, with
// the header's sample count set to the chunk's.
func (c *XORChunk) AppendWhole(dst, detached []byte) []byte {
	start := len(dst)
	dst = append(dst, detached[:c.detached]...)
	dst = append(dst, c.w.buf...)
	SetXORSampleCount(dst[start:], c.NumSamples())
	return dst
}

// SetXORSampleCount writes n, at most math.MaxUint16, as the sample count
// into the header at the start of the XOR chunk b.
func SetXORSampleCount(b []byte, n int) {
	binary.BigEndian.PutUint16(b, uint16(n))
}

// AppendXORHeader appends the header of an XOR chunk of n samples.
func AppendXORHeader(dst []byte, n int) []byte {
	return binary.BigEndian.AppendUint16(dst, uint16(n))
}

// Bytes returns the encoded chunk: the header and all samples appended so
// far, ready for NewXORIterator or to be written out. After Detach, it
// returns only the bytes after the detached ones (see AppendWhole).
//
// The result aliases the chunk's memory and is only a snapshot in length.
// A later Append rewrites the first two bytes (the sample count) and its
// last byte in place, and may move the chunk to new memory. A caller that
// keeps the result across an Append, or reads it while another goroutine
// appends, must copy it first. Its capacity is its length, so appending to
// it copies rather than writes into the chunk.
func (c *XORChunk) Bytes() []byte { return c.w.buf[:len(c.w.buf):len(c.w.buf)] }

// Append adds a sample. The caller guarantees that t is greater than the
// previous sample's timestamp (smaller or equal ones still round-trip, but
// compress badly) and that the chunk holds fewer than math.MaxUint16
// samples: Append panics on a full chunk rather than drop the sample.
//
// Append allocates only when the byte slice has to grow.
func (c *XORChunk) Append(t int64, v float64) {
	vb := math.Float64bits(v)
	switch c.num {
	case 0:
		// The chunk is byte-aligned here: the first timestamp is a varint,
		// the first value its 64 raw bits.
		c.w.buf = binary.AppendVarint(c.w.buf, t)
		c.w.writeBits(vb, 64)
	case 1:
		// Still byte-aligned: sample 0 was whole bytes. Differences are
		// taken with int64 wrap-around, which decoding reverses exactly.
		c.tDelta = t - c.t
		c.w.buf = binary.AppendUvarint(c.w.buf, uint64(c.tDelta))
		c.appendValue(0, 0, vb)
	case math.MaxUint16:
		panic("chunkenc: Append to a full XOR chunk")
	default:
		delta := t - c.t
		dod := delta - c.tDelta
		c.tDelta = delta
		// The delta-of-delta's code goes out with the value's, in one
		// store when they fit in a word.
		code, n, wide := dodCode(dod)
		if wide {
			c.w.writeBits2(code, n, uint64(dod), dodBits4)
			code, n = 0, 0
		}
		c.appendValue(code, n, vb)
	}
	c.t = t
	c.v = vb
	c.num++
	if c.detached == 0 {
		binary.BigEndian.PutUint16(c.w.buf, c.num)
	}
}

// dodCode returns the code of a timestamp delta-of-delta in the smallest
// bucket that holds it, and its width in bits. If wide, the code is only
// the prefix: the 64 bits of dod follow it.
func dodCode(dod int64) (code uint64, n uint8, wide bool) {
	switch {
	case dod == 0:
		return 0, 1, false
	case fitsBits(dod, dodBits1):
		return 0b10<<dodBits1 | uint64(dod)&(1<<dodBits1-1), 2 + dodBits1, false
	case fitsBits(dod, dodBits2):
		return 0b110<<dodBits2 | uint64(dod)&(1<<dodBits2-1), 3 + dodBits2, false
	case fitsBits(dod, dodBits3):
		return 0b1110<<dodBits3 | uint64(dod)&(1<<dodBits3-1), 4 + dodBits3, false
	}
	return 0b1111, 4, true
}

// fitsBits reports whether x is in the range of an n-bit two's complement
// integer, n < 64.
func fitsBits(x int64, n uint8) bool {
	return x >= -1<<(n-1) && x < 1<<(n-1)
}

// appendValue writes the low n bits of code (n <= 24; the timestamp's
// code), then the XOR of vb with the previous value.
func (c *XORChunk) appendValue(code uint64, n uint8, vb uint64) {
	x := vb ^ c.v
	if x == 0 {
		c.w.writeBits(code<<1, n+1)
		return
	}
	leading := uint8(bits.LeadingZeros64(x))
	trailing := uint8(bits.TrailingZeros64(x))
	if leading > maxLeading {
		leading = maxLeading
	}
	sigbits := 64 - leading - trailing

	// Reuse the current window if x fits in it and that is no more than the
	// 11 bits of a new window's description longer than x's own bits. This
	// greedy choice also lets the first XOR use the initial 64-bit window
	// when it is nearly that wide anyway.
	if leading >= c.leading && trailing >= 64-c.leading-c.sigbits && c.sigbits <= sigbits+11 {
		c.w.writeBits2(code<<2|0b10, n+2, x>>(64-c.leading-c.sigbits), c.sigbits)
		return
	}
	c.leading, c.sigbits = leading, sigbits
	// '11', 5 bits of leading zeros, 6 bits of width (64 is written as 0).
	header := code<<13 | 0b11<<11 | uint64(leading)<<6 | uint64(sigbits&63)
	c.w.writeBits2(header, n+13, x>>trailing, sigbits)
}
