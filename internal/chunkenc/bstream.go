package chunkenc

import (
	"encoding/binary"
	"math/bits"
)

// bitWriter appends bits, most significant first, to a byte slice.
//
// The last byte of buf may be partly written: its low free bits are still
// zero and are filled by the next write. Writes only add bits to that byte
// and append new ones, so bytes already complete never change.
type bitWriter struct {
	buf  []byte
	free uint8 // unused low bits in buf[len(buf)-1]; 0 when it is full or buf is empty
}

// writeBits writes the low n bits of u, most significant first. n must be
// in [1, 64] and the bits of u above the low n must be zero.
func (w *bitWriter) writeBits(u uint64, n uint8) {
	l := len(w.buf)
	if cap(w.buf)-l < 9 {
		w.writeBitsSlow(u, n)
		return
	}
	// Store the partly written last byte and the new bits as a big-endian
	// word and one more byte for the up to 7 bits that do not fit in it.
	// The stored bytes past the new length are zero and lie within the
	// capacity, where nothing reads them.
	used := (8 - w.free) & 7 // bits already in the last byte; 0 if it is full
	pos := l
	var word uint64
	if used > 0 {
		pos--
		word = uint64(w.buf[pos]) << 56
	}
	u <<= (64 - n) & 63 // left-align: the next bit to write is the top bit
	b := w.buf[pos : pos+9]
	binary.BigEndian.PutUint64(b, word|u>>used)
	b[8] = byte(u << (8 - used))
	total := used + n
	w.buf = w.buf[:pos+int(total+7)/8]
	w.free = -total & 7
}

// writeBits2 writes the low n1 bits of u1, then the low n2 bits of u2: one
// writeBits if they fit in 64 bits. n1 may be 0 if u1 is.
func (w *bitWriter) writeBits2(u1 uint64, n1 uint8, u2 uint64, n2 uint8) {
	if n1+n2 <= 64 {
		w.writeBits(u1<<(n2&63)|u2, n1+n2) // n2 == 64 only if n1 == 0 and u1 == 0
		return
	}
	w.writeBits(u1, n1)
	w.writeBits(u2, n2)
}

// writeBitsSlow is writeBits a byte at a time, for when the capacity is
// nearly used up, so that the slice grows only when it must.
func (w *bitWriter) writeBitsSlow(u uint64, n uint8) {
	u <<= 64 - n // left-align: the next bit to write is the top bit
	for n > 0 {
		if w.free == 0 {
			if len(w.buf) == cap(w.buf) {
				w.grow()
			}
			w.buf = append(w.buf, 0)
			w.free = 8
		}
		// The top free bits of u go into the low free bits of the byte;
		// if n is smaller, the bits after the n-th are zero.
		w.buf[len(w.buf)-1] |= byte(u>>56) >> (8 - w.free)
		k := min(n, w.free)
		u <<= k
		n -= k
		w.free -= k
	}
}

// grow gives buf room for about an eighth more bytes. The head keeps an
// open chunk's buffer for the next chunk (Reset), so its capacity is what
// the largest chunk of the series needed, rounded up by the growth step:
// with append's doubling, that step wasted a third of the open chunks'
// memory (profiles of 100k series: 630 bytes of buffer a series for
// chunks of about 530). Growing by an eighth costs a few more copies
// during a series' first chunk, and none after.
func (w *bitWriter) grow() {
	buf := make([]byte, len(w.buf), grownCap(len(w.buf)))
	copy(buf, w.buf)
	w.buf = buf
}

// grownCap returns the capacity grow gives memory holding n bytes.
func grownCap(n int) int {
	// Multiples of 32 bytes fall on or just below Go's size classes up
	// to 1 KiB, so little of an allocation goes unused.
	return (n + n/8 + 16 + 31) &^ 31
}

// bitReader reads bits, most significant first, from a byte slice through
// a 64-bit buffer so that most reads are a shift of a register.
//
// Each read comes in two forms: a Fast one, small enough to be inlined,
// that reads only from the buffer and fails, reading nothing, if the
// buffer holds too few bits; and a general one that refills. Hot callers
// try the first and fall back to the second.
type bitReader struct {
	stream []byte // bytes not yet counted into valid
	// buf holds the next bits, left-aligned: the next bit is the top one.
	// The bits after the valid ones are either zero or the stream's next
	// bits in place, so that fill can OR whole words in.
	buf   uint64
	valid uint8 // number of bits of buf not yet read, in [0, 64]
}

func (r *bitReader) reset(b []byte) {
	*r = bitReader{stream: b}
}

// remaining returns the number of bits not yet read.
func (r *bitReader) remaining() int {
	return len(r.stream)*8 + int(r.valid)
}

// offset returns the byte offset, in a chunk of size bytes whose tail
// the reader was reset to, of the next bit to read.
func (r *bitReader) offset(size int) int {
	return ((size-len(r.stream))*8 - int(r.valid)) / 8
}

// endProblem reads what is left after a chunk's last sample and says
// what is wrong with it, "" if nothing: at most the zero padding of the
// last byte may remain.
func (r *bitReader) endProblem() string {
	rem := r.remaining()
	if rem >= 8 {
		return "trailing bytes after the last sample"
	}
	if rem > 0 {
		if pad, _ := r.readBits(uint8(rem)); pad != 0 {
			return "non-zero padding after the last sample"
		}
	}
	return ""
}

// fill loads whole bytes into the buffer until it holds more than 56 bits
// or the stream ends.
func (r *bitReader) fill() {
	if len(r.stream) >= 8 {
		// OR in a word after the valid bits and count the whole bytes that
		// fit; bits of the next byte that land in buf too are ORed in again,
		// unchanged, by the next fill.
		r.buf |= binary.BigEndian.Uint64(r.stream) >> (r.valid & 63)
		nb := (64 - r.valid) / 8
		r.stream = r.stream[nb:]
		r.valid += nb * 8
		return
	}
	for len(r.stream) > 0 && r.valid <= 56 {
		r.buf |= uint64(r.stream[0]) << (56 - r.valid)
		r.stream = r.stream[1:]
		r.valid += 8
	}
}

// readBitsFast reads n bits, n in [1, 64], into the low bits of the result
// if the buffer holds them.
func (r *bitReader) readBitsFast(n uint8) (u uint64, ok bool) {
	if n > r.valid {
		return 0, false
	}
	// n-1 < 64 and 64-n < 64: masked shifts compile without the checks Go
	// adds for shifts that may reach 64. Two shifts make a shift by 64.
	u = r.buf >> ((64 - n) & 63)
	r.buf = r.buf << ((n - 1) & 63) << 1
	r.valid -= n
	return u, true
}

// readBits reads n bits, n in [1, 64], into the low bits of the result. If
// fewer than n bits remain, ok is false and the reader is left at the end.
func (r *bitReader) readBits(n uint8) (u uint64, ok bool) {
	if n > 56 {
		// More than fill promises: read in two parts.
		hi, ok := r.readBits(n - 32)
		if !ok {
			return 0, false
		}
		lo, ok := r.readBits(32)
		return hi<<32 | lo, ok
	}
	if n > r.valid {
		r.fill()
		if n > r.valid {
			r.valid = 0 // fill used up the stream
			return 0, false
		}
	}
	return r.readBitsFast(n)
}

// readOnesFast reads a unary code, ones ended by a zero or max ones
// without one, if the buffer holds max bits. It returns the number of
// ones, in [0, max]; max must be in [1, 63].
func (r *bitReader) readOnesFast(max uint8) (ones uint8, ok bool) {
	if max > r.valid {
		return 0, false
	}
	// Counting may run past the valid bits only if they are all ones, and
	// then the count is capped at max <= valid.
	ones = uint8(bits.LeadingZeros64(^r.buf))
	n := ones + 1 // the ones and their ending zero
	if ones >= max {
		ones, n = max, max
	}
	r.buf <<= n & 63 // n <= max < 64
	r.valid -= n
	return ones, true
}

// readOnes reads a unary code like readOnesFast, refilling as needed. ok
// is false if the stream ends first.
func (r *bitReader) readOnes(max uint8) (ones uint8, ok bool) {
	if r.valid < max {
		r.fill()
	}
	if ones, ok := r.readOnesFast(max); ok {
		return ones, true
	}
	// Fewer than max bits are left: the code must end within them.
	for ones < max {
		bit, ok := r.readBits(1)
		if !ok {
			return 0, false
		}
		if bit == 0 {
			break
		}
		ones++
	}
	return ones, true
}
