package chunkenc

import (
	"encoding/binary"
	"math"
	"math/bits"
	"unsafe"
)

// xorChunkHeaderSize is the size of the big-endian uint16 sample count that
// starts every XOR chunk.
const xorChunkHeaderSize = 2

// XORInitialCap is the capacity a chunk's memory starts with. The
// head writes an open chunk out in parts as this memory fills (Detach)
// and reuses it for the next chunk (Reset), so most series never grow
// it. Starting small saves every short-lived or quiet series the
// difference: BenchmarkSeriesMemory (head) measured 1140 bytes per
// series with 1-4 samples at a 256-byte start and 948 at 64, and the
// same 1152 at 120 samples either way. At 48 the head holds 16 bytes a
// series less, since it writes an open chunk's part out once a sample
// does not fit (Fits) rather than once the room is under
// XORSampleMaxBytes.
const XORInitialCap = 48

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
// An XORChunk is an XORAppender and the chunk's last sample, which the
// appender needs and does not keep.
type XORChunk struct {
	XORAppender
	t int64   // last timestamp
	v float64 // last value
}

// NewXORChunk returns an empty chunk.
func NewXORChunk() *XORChunk {
	c := &XORChunk{}
	c.Reset()
	return c
}

// Append adds a sample. The caller guarantees that t is greater than the
// previous sample's timestamp (smaller or equal ones still round-trip, but
// compress badly) and that the chunk holds fewer than math.MaxUint16
// samples: Append panics on a full chunk rather than drop the sample.
//
// Append allocates only when the chunk's memory has to grow.
func (c *XORChunk) Append(t int64, v float64) {
	c.XORAppender.Append(c.t, c.v, t, v)
	c.t, c.v = t, v
}

// XORAppender is an open XOR chunk but for its last sample, which Append
// is given: the head keeps it in each series, which holds that sample
// anyway, so that an open chunk adds 32 bytes to the series and no object
// of its own. The zero value is an empty chunk without memory; Reset
// empties a chunk and keeps its memory.
//
// A chunk kept open for long can hand the bytes it has finished to its
// owner (Detach), who keeps them elsewhere, and then holds in memory only
// the bytes appended since: the head keeps all but the newest part of an
// open chunk in a file this way.
type XORAppender struct {
	// buf is the chunk's memory: its len bytes in use are the chunk after
	// its detached bytes (the whole chunk, header included, until Detach),
	// and cap bytes are allocated. It is a pointer and two lengths rather
	// than a slice to keep the appender small.
	buf      *byte
	tDelta   int64 // last timestamp delta (wraps like int64 arithmetic)
	len, cap uint32
	// detached is how many of the chunk's leading bytes Detach handed off,
	// at most math.MaxUint16 (see Detach).
	detached uint16
	num      uint16 // samples appended; mirrors the header while none is detached
	// numDetach is num at the last Detach.
	numDetach uint16
	// leadFree is the leading zeros of the current XOR window (at most
	// maxLeading) above the unused low bits of the last byte
	// (bitWriter.free, under 8), in one byte so that the appender is 32.
	leadFree uint8
	sigbits  uint8 // width of the current XOR window; trailing = 64-leading-sigbits
}

// free returns the unused low bits of the chunk's last byte.
func (a *XORAppender) free() uint8 { return a.leadFree & 7 }

// leading returns the leading zeros of the current XOR window.
func (a *XORAppender) leading() uint8 { return a.leadFree >> 3 }

// writer returns the chunk's memory as a bitWriter, for a write to be
// stored back with setWriter.
func (a *XORAppender) writer() bitWriter {
	return bitWriter{buf: unsafe.Slice(a.buf, a.cap)[:a.len], free: a.free()}
}

func (a *XORAppender) setWriter(w *bitWriter) {
	a.buf, a.len, a.cap = unsafe.SliceData(w.buf), uint32(len(w.buf)), uint32(cap(w.buf))
	a.leadFree = a.leadFree&^7 | w.free
}

// Reset empties the chunk for reuse, keeping its memory, or giving it
// some if it has none. Slices returned by Bytes before must no longer be
// read: the next Append overwrites them.
func (a *XORAppender) Reset() {
	// A chunk without memory gets XORInitialCap bytes.
	buf := unsafe.Slice(a.buf, a.cap)
	if a.cap < xorChunkHeaderSize {
		buf = make([]byte, XORInitialCap)
	}
	buf = buf[:xorChunkHeaderSize]
	clear(buf)
	*a = XORAppender{}
	a.setWriter(&bitWriter{buf: buf})
}

// NumSamples returns the number of samples appended so far.
func (a *XORAppender) NumSamples() int { return int(a.num) }

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
func (a *XORAppender) Bytes() []byte { return unsafe.Slice(a.buf, a.len) }

// Finished returns the bytes after the detached ones that appends no
// longer change: all but a partly written last byte. If none is detached
// yet, they start with the header, holding the sample count of now. The
// result aliases the chunk's memory, as Bytes does.
func (a *XORAppender) Finished() []byte {
	n := a.len
	if a.free() != 0 {
		n--
	}
	return unsafe.Slice(a.buf, n)
}

// Detach drops the first n bytes of what Finished returned from the
// chunk's memory, which keeps its capacity: the caller holds them now.
// Bytes then returns only the bytes after all detached ones, and Append no
// longer updates the header. The bytes detached in all are at most
// math.MaxUint16: the head keeps them in a region of at most that.
func (a *XORAppender) Detach(n int) {
	if n > len(a.Finished()) {
		panic("chunkenc: Detach of unfinished bytes")
	}
	if int(a.detached)+n > math.MaxUint16 {
		panic("chunkenc: Detach of more than math.MaxUint16 bytes")
	}
	buf := a.Bytes()
	a.len = uint32(copy(buf, buf[n:]))
	a.detached += uint16(n)
	a.numDetach = a.num
}

// SinceDetach returns the number of samples appended since the last
// Detach, or since Reset if none.
func (a *XORAppender) SinceDetach() int { return int(a.num - a.numDetach) }

// Memory returns the chunk's memory, all of its capacity: its bytes
// (Bytes) and the room after them. It is nil for a chunk without memory.
func (a *XORAppender) Memory() []byte {
	if a.cap == 0 {
		return nil
	}
	return unsafe.Slice(a.buf, a.cap)
}

// MoveTo makes mem the chunk's memory, its bytes copied there, for an
// owner that allocates the memory itself: it gives a chunk memory before
// a sample that does not fit (Fits), of GrowCap bytes, so that Append
// never allocates. The chunk no longer uses the memory it had (Memory
// before the move). mem must hold the chunk's bytes and XORSampleMaxBytes
// more; a chunk without memory starts empty in it, as after Reset.
func (a *XORAppender) MoveTo(mem []byte) {
	if cap(mem) < int(a.len)+XORSampleMaxBytes {
		panic("chunkenc: MoveTo memory smaller than the chunk and a sample")
	}
	if a.cap == 0 {
		a.buf, a.cap = unsafe.SliceData(mem), uint32(cap(mem))
		a.Reset()
		return
	}
	w := a.writer()
	w.buf = append(mem[:0], w.buf...)
	a.setWriter(&w)
}

// GrowCap returns the capacity of memory for the chunk to move to
// (MoveTo) before a sample that does not fit: XORInitialCap for a chunk
// without memory, else an eighth more than its bytes, as Append grows
// it, and room for any sample.
func (a *XORAppender) GrowCap() int {
	if a.cap == 0 {
		return XORInitialCap
	}
	return max(grownCap(int(a.len)), int(a.len)+XORSampleMaxBytes)
}

// XORSampleMaxBytes is the most an Append adds to a chunk's length: a
// varint timestamp or delta (10 bytes) and a value (at most 77 bits).
const XORSampleMaxBytes = 20

// Room returns how many bytes the chunk's memory has after its last one:
// Append moves the chunk to larger memory only if that is fewer than
// XORSampleMaxBytes.
func (a *XORAppender) Room() int { return int(a.cap - a.len) }

// Fits reports whether Append(prevT, prevV, t, v) would fit in the
// chunk's memory, so that it does not move the chunk to larger memory. It
// may report false for a sample that would just fit: it counts the
// value's bits as a new XOR window takes them, which is at most as many
// as Append writes. It lets an owner that detaches bytes do so only when
// the memory is full, not as soon as it holds less than
// XORSampleMaxBytes: a counter takes a few bytes a sample, not twenty.
func (a *XORAppender) Fits(prevT int64, prevV float64, t int64, v float64) bool {
	switch {
	case a.Room() >= XORSampleMaxBytes:
		// Any sample fits: most calls end here.
		return true
	case a.cap == 0:
		return false
	}
	x := math.Float64bits(v) ^ math.Float64bits(prevV)
	var bytes int
	switch a.num {
	case 0:
		// A varint timestamp and 64 raw bits, from a whole byte.
		bytes = varintLen(t) + 8
	case 1:
		// A varint delta, then the value from a whole byte.
		bytes = uvarintLen(uint64(t-prevT)) + (valueBits(x)+7)/8
	default:
		delta := t - prevT
		_, n, wide := dodCode(delta - a.tDelta)
		if wide {
			n += dodBits4
		}
		// The bits after those left free in the last byte.
		bytes = (int(n) + valueBits(x) - int(a.free()) + 7) / 8
	}
	return bytes <= a.Room()
}

// valueBits returns the most bits appendValue writes for the XOR x of a
// value with the previous one: one for a repeat, else a new window's 13
// bits of description and x's significant bits. Reusing the current
// window is chosen only if it is no longer.
func valueBits(x uint64) int {
	if x == 0 {
		return 1
	}
	leading := min(bits.LeadingZeros64(x), maxLeading)
	return 13 + 64 - leading - bits.TrailingZeros64(x)
}

// Detached returns how many of the chunk's leading bytes were detached.
func (a *XORAppender) Detached() int { return int(a.detached) }

// AppendWhole appends the whole chunk to dst: detached, the bytes Detach
// handed off as their holder has them, then those the chunk holds, with
// the header's sample count set to the chunk's.
func (a *XORAppender) AppendWhole(dst, detached []byte) []byte {
	start := len(dst)
	dst = append(dst, detached[:a.detached]...)
	dst = append(dst, a.Bytes()...)
	SetXORSampleCount(dst[start:], a.NumSamples())
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

// Append adds a sample after the chunk's last one, (prevT, prevV), which
// it ignores if the chunk is empty. The caller guarantees what
// XORChunk.Append needs.
func (a *XORAppender) Append(prevT int64, prevV float64, t int64, v float64) {
	if a.num == 0 && a.cap == 0 {
		a.Reset()
	}
	w := a.writer()
	vb := math.Float64bits(v)
	switch a.num {
	case 0:
		// The chunk is byte-aligned here: the first timestamp is a varint,
		// the first value its 64 raw bits. The first XOR window spans all
		// 64 bits.
		w.buf = binary.AppendVarint(w.buf, t)
		w.writeBits(vb, 64)
		a.leadFree, a.sigbits = a.leadFree&7, 64
	case 1:
		// Still byte-aligned: sample 0 was whole bytes. Differences are
		// taken with int64 wrap-around, which decoding reverses exactly.
		a.tDelta = t - prevT
		w.buf = binary.AppendUvarint(w.buf, uint64(a.tDelta))
		a.appendValue(&w, 0, 0, vb^math.Float64bits(prevV))
	case math.MaxUint16:
		panic("chunkenc: Append to a full XOR chunk")
	default:
		delta := t - prevT
		dod := delta - a.tDelta
		a.tDelta = delta
		// The delta-of-delta's code goes out with the value's, in one
		// store when they fit in a word.
		code, n, wide := dodCode(dod)
		if wide {
			w.writeBits2(code, n, uint64(dod), dodBits4)
			code, n = 0, 0
		}
		a.appendValue(&w, code, n, vb^math.Float64bits(prevV))
	}
	a.num++
	if a.detached == 0 {
		binary.BigEndian.PutUint16(w.buf, a.num)
	}
	a.setWriter(&w)
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
// code), then x, the XOR of the value with the previous one.
func (a *XORAppender) appendValue(w *bitWriter, code uint64, n uint8, x uint64) {
	if x == 0 {
		w.writeBits(code<<1, n+1)
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
	if aLeading := a.leading(); leading >= aLeading && trailing >= 64-aLeading-a.sigbits && a.sigbits <= sigbits+11 {
		w.writeBits2(code<<2|0b10, n+2, x>>(64-aLeading-a.sigbits), a.sigbits)
		return
	}
	a.leadFree, a.sigbits = leading<<3|a.leadFree&7, sigbits
	// '11', 5 bits of leading zeros, 6 bits of width (64 is written as 0).
	header := code<<13 | 0b11<<11 | uint64(leading)<<6 | uint64(sigbits&63)
	w.writeBits2(header, n+13, x>>trailing, sigbits)
}
