package chunkenc

import (
	"encoding/binary"
	"math"
	"math/bits"
	"slices"
)

// XORIterator decodes the samples of an encoded XOR chunk in order.
//
// An iterator is meant to be reused: Reset points it at another chunk
// without allocating, and Next allocates only the error for malformed
// input. The zero value is usable after Reset. The iterator reads the
// bytes it was given, and keeps them, until the next Reset (Reset(nil)
// lets go of them, as before putting it in a pool); it never modifies
// them, and they must not change while it iterates (see XORChunk.Bytes).
type XORIterator struct {
	br   bitReader
	size int // len of the chunk, to turn the reader's position into an offset

	num  uint16 // samples in the chunk, from the header
	read uint16 // samples decoded so far

	// The current sample and the state to decode the next one, as in
	// XORChunk.
	t       int64
	tDelta  int64
	v       uint64
	leading uint8
	sigbits uint8

	err error // sticky: once set, Next returns false
}

// NewXORIterator returns an iterator over the encoded chunk b.
func NewXORIterator(b []byte) *XORIterator {
	it := &XORIterator{}
	it.Reset(b)
	return it
}

// Reset makes the iterator start over on the encoded chunk b, which is laid
// out as XORChunk.Bytes returns it (or a copy of that).
func (it *XORIterator) Reset(b []byte) {
	*it = XORIterator{size: len(b), sigbits: 64}
	// A b too short for the header leaves num at 0, and Next reports it.
	if len(b) >= xorChunkHeaderSize {
		it.num = binary.BigEndian.Uint16(b)
		it.br.reset(b[xorChunkHeaderSize:])
	}
}

// At returns the current sample. It is only valid after Next returned true.
func (it *XORIterator) At() (int64, float64) {
	return it.t, math.Float64frombits(it.v)
}

// Err returns the error that ended the iteration, if any. It wraps
// ErrCorruptChunk and is a *CorruptChunkError.
func (it *XORIterator) Err() error { return it.err }

// Next advances to the next sample. It returns false at the end of the
// chunk or on malformed input; Err tells which.
//
// After the header's count of samples, Next checks that nothing but up to 7
// zero bits of padding follows, so trailing garbage is reported too.
func (it *XORIterator) Next() bool {
	if it.err != nil {
		return false
	}
	if it.read == it.num {
		it.checkEnd()
		return false
	}
	switch it.read {
	case 0:
		t, ok := it.readVarint()
		if !ok {
			return false
		}
		v, ok := it.br.readBits(64)
		if !ok {
			return it.corrupt("truncated first value")
		}
		it.t, it.v = t, v
	case 1:
		d, ok := it.readUvarint()
		if !ok {
			return false
		}
		it.tDelta = int64(d)
		it.t += it.tDelta
		if !it.readValue() {
			return false
		}
	default:
		if !it.readDod() || !it.readValue() {
			return false
		}
	}
	it.read++
	return true
}

// readDod reads a delta-of-delta and advances the timestamp.
func (it *XORIterator) readDod() bool {
	prefix, ok := it.br.readOnesFast(4)
	if !ok {
		if prefix, ok = it.br.readOnes(4); !ok {
			return it.corrupt("truncated timestamp")
		}
	}
	if prefix > 0 {
		n := dodBits[prefix]
		u, ok := it.br.readBitsFast(n)
		if !ok {
			if u, ok = it.br.readBits(n); !ok {
				return it.corrupt("truncated timestamp")
			}
		}
		// Sign-extend the n-bit two's complement value.
		it.tDelta += int64(u<<((64-n)&63)) >> ((64 - n) & 63)
	}
	it.t += it.tDelta
	return true
}

// readValue reads an XOR-encoded value and applies it to the last value.
func (it *XORIterator) readValue() bool {
	// 0: same value, 10: current window, 11: new window.
	control, ok := it.br.readOnesFast(2)
	if !ok {
		if control, ok = it.br.readOnes(2); !ok {
			return it.corrupt("truncated value")
		}
	}
	switch control {
	case 0:
		return true
	case 2:
		// 5 bits of leading zeros, 6 of width (0 means 64).
		u, ok := it.br.readBitsFast(11)
		if !ok {
			if u, ok = it.br.readBits(11); !ok {
				return it.corrupt("truncated value window")
			}
		}
		leading, sigbits := uint8(u>>6), uint8(u&63)
		if sigbits == 0 {
			sigbits = 64
		}
		if leading+sigbits > 64 {
			return it.corrupt("value window wider than 64 bits")
		}
		it.leading, it.sigbits = leading, sigbits
	}
	x, ok := it.br.readBitsFast(it.sigbits)
	if !ok {
		if x, ok = it.br.readBits(it.sigbits); !ok {
			return it.corrupt("truncated value bits")
		}
	}
	it.v ^= x << ((64 - it.leading - it.sigbits) & 63)
	return true
}

// readVarint reads a signed varint as whole bytes of 8 bits.
func (it *XORIterator) readVarint() (int64, bool) {
	u, ok := it.readUvarint()
	// Undo the zig-zag encoding of binary.AppendVarint.
	return int64(u>>1) ^ -int64(u&1), ok
}

// readUvarint reads an unsigned varint as whole bytes of 8 bits, rejecting
// encodings that overflow 64 bits.
func (it *XORIterator) readUvarint() (uint64, bool) {
	var u uint64
	for i := 0; i < binary.MaxVarintLen64; i++ {
		b, ok := it.br.readBits(8)
		if !ok {
			return 0, it.corrupt("truncated timestamp varint")
		}
		if i == binary.MaxVarintLen64-1 && b > 1 {
			break // the tenth byte may hold only the 64th bit
		}
		u |= (b & 0x7f) << (7 * i)
		if b < 0x80 {
			return u, true
		}
	}
	return 0, it.corrupt("timestamp varint overflows 64 bits")
}

// checkEnd reports a missing header, or trailing data after the last
// sample: at most the zero padding of the last byte may remain.
func (it *XORIterator) checkEnd() {
	if it.size < xorChunkHeaderSize {
		it.corrupt("chunk shorter than its 2-byte header")
		return
	}
	if problem := it.br.endProblem(); problem != "" {
		it.corrupt(problem)
	}
}

// corrupt records a CorruptChunkError at the current position and returns
// false, so that decoders can return it.
func (it *XORIterator) corrupt(reason string) bool {
	it.err = &CorruptChunkError{Encoding: EncXOR, Offset: it.br.offset(it.size), Sample: int(it.read), Reason: reason}
	return false
}

// AppendSamples appends the next samples of the chunk, up to limit of
// them, to ts and vs, stopping at the first after maxt (which it
// consumes), for a reader that wants every sample: the loop keeps the
// decoder's state in registers, where Next and At go through the
// iterator's fields and a call or three a sample
// (BenchmarkXORAppendSamples against BenchmarkXORIterate). It continues
// where the iterator is. It returns ok false, and appends nothing, on
// malformed input; the caller then learns why by iterating with Next
// from Reset.
func (it *XORIterator) AppendSamples(ts []int64, vs []float64, maxt int64, limit int) (_ []int64, _ []float64, ok bool) {
	if it.err != nil {
		return ts, vs, false
	}
	n0, n := len(ts), min(int(it.num-it.read), limit)
	ts, vs = slices.Grow(ts, n), slices.Grow(vs, n)
	for len(ts)-n0 < limit {
		if it.read >= 2 {
			var past bool
			if ts, vs, past = it.appendFast(ts, vs, maxt, limit-(len(ts)-n0)); past {
				return ts, vs, true
			}
			if len(ts)-n0 == limit {
				break
			}
		}
		// The first two samples, the last few bytes and whatever the loop
		// leaves (64-bit deltas, malformed input) go through Next.
		if !it.Next() {
			break
		}
		t, v := it.At()
		if t > maxt {
			return ts, vs, true
		}
		ts, vs = append(ts, t), append(vs, v)
	}
	if it.err != nil {
		return ts[:n0], vs[:n0], false
	}
	return ts, vs, true
}

// appendFast decodes up to limit samples as Next would while eight bytes
// or more of the chunk are left, and returns at the first sample it leaves
// to Next, the iterator at that sample's start; past says it returned at
// a sample after maxt instead.
func (it *XORIterator) appendFast(ts []int64, vs []float64, maxt int64, limit int) (_ []int64, _ []float64, past bool) {
	stream, buf, valid := it.br.stream, it.br.buf, uint(it.br.valid)
	t, dt, v := it.t, it.tDelta, it.v
	leading, sigbits := uint(it.leading), uint(it.sigbits)
	read, end := it.read, it.num
	if n := uint16(min(limit, math.MaxUint16)); end-read > n {
		end = read + n
	}
	// Samples are stored by index into the room the caller made for
	// them: append's capacity checks on two slices cost a sixth of the time.
	n0 := len(ts)
	ot, ov := ts[n0:n0+int(end-read)], vs[n0:n0+int(end-read)]
	j := 0
	for read < end && len(stream) >= 8 {
		// bitReader.fill: at least 57 bits.
		buf |= binary.BigEndian.Uint64(stream) >> (valid & 63)
		nb := (64 - valid) / 8
		stream, valid = stream[nb:], valid+nb*8
		// The sample's start, for Next to take over at.
		s0, b0, v0, dt0 := stream, buf, valid, dt

		// The delta of delta: at most 3+1+20 bits here.
		ones := uint(bits.LeadingZeros64(^buf))
		if ones >= 4 {
			break
		}
		buf, valid = buf<<(ones+1), valid-(ones+1)
		if ones > 0 {
			n := uint(dodBits[ones])
			u := buf >> (64 - n)
			buf, valid = buf<<n, valid-n
			dt += int64(u<<(64-n)) >> (64 - n)
		}
		// The value: 0, 10 (the current window) or 11 and a new window.
		if buf>>63 == 0 {
			buf, valid = buf<<1, valid-1
		} else {
			nl, ns := leading, sigbits
			if buf>>62 == 3 {
				u := buf << 2 >> 53
				buf, valid = buf<<13, valid-13
				nl, ns = uint(u>>6), uint(u&63)
				if ns == 0 {
					ns = 64
				}
			} else {
				buf, valid = buf<<2, valid-2
			}
			if ns > valid && len(stream) >= 8 {
				buf |= binary.BigEndian.Uint64(stream) >> (valid & 63)
				nb := (64 - valid) / 8
				stream, valid = stream[nb:], valid+nb*8
			}
			if nl+ns > 64 || ns > valid {
				stream, buf, valid, dt = s0, b0, v0, dt0
				break
			}
			x := buf >> ((64 - ns) & 63)
			buf, valid = buf<<((ns-1)&63)<<1, valid-ns
			v ^= x << ((64 - nl - ns) & 63)
			leading, sigbits = nl, ns
		}
		t += dt
		read++
		if t > maxt {
			past = true
			break
		}
		ot[j], ov[j] = t, math.Float64frombits(v)
		j++
	}
	ts, vs = ts[:n0+j], vs[:n0+j]
	it.br.stream, it.br.buf, it.br.valid = stream, buf, uint8(valid)
	it.t, it.tDelta, it.v = t, dt, v
	it.leading, it.sigbits = uint8(leading), uint8(sigbits)
	it.read = read
	return ts, vs, past
}
