package chunkenc

import "math/bits"

// xorState is what encoding a float64 series as XORs needs to carry from
// one value to the next, as the values of an XOR chunk do; histogram
// chunks keep one per encoded field (sum, count, every bucket of a float
// histogram). The code is the XOR chunk's value code, described in
// docs/format/chunks.md: 0 for a repeat, 10 for bits in the current
// window, 11 for a new window.
type xorState struct {
	v       uint64 // bits of the previous value: the next one is XOR'd with it
	leading uint8  // leading zeros of the current window
	sigbits uint8  // width of the current window; trailing = 64-leading-sigbits
}

// newXORState returns the state before the first value: the previous value
// is 0 and the window spans all 64 bits.
func newXORState() xorState { return xorState{sigbits: 64} }

// writeXOR writes vb XOR'd with s.v and makes vb the previous value. It
// chooses windows as XORChunk does.
func writeXOR(w *bitWriter, s *xorState, vb uint64) {
	x := vb ^ s.v
	s.v = vb
	if x == 0 {
		w.writeBits(0, 1)
		return
	}
	leading := min(uint8(bits.LeadingZeros64(x)), maxLeading)
	trailing := uint8(bits.TrailingZeros64(x))
	sigbits := 64 - leading - trailing
	// Reuse the window if x fits and it is at most the 11 bits of a new
	// window's description wider than x's own bits.
	if leading >= s.leading && trailing >= 64-s.leading-s.sigbits && s.sigbits <= sigbits+11 {
		w.writeBits2(0b10, 2, x>>(64-s.leading-s.sigbits), s.sigbits)
		return
	}
	s.leading, s.sigbits = leading, sigbits
	// '11', 5 bits of leading zeros, 6 bits of width (64 is written as 0).
	header := uint64(0b11)<<11 | uint64(leading)<<6 | uint64(sigbits&63)
	w.writeBits2(header, 13, x>>trailing, sigbits)
}

// readXOR reads a value written by writeXOR into s.v. On failure it
// returns why, for a CorruptChunkError; it returns "" on success.
func readXOR(r *bitReader, s *xorState) (reason string) {
	control, ok := r.readOnesFast(2)
	if !ok {
		if control, ok = r.readOnes(2); !ok {
			return "truncated value"
		}
	}
	switch control {
	case 0:
		return ""
	case 2:
		u, ok := r.readBitsFast(11)
		if !ok {
			if u, ok = r.readBits(11); !ok {
				return "truncated value window"
			}
		}
		leading, sigbits := uint8(u>>6), uint8(u&63)
		if sigbits == 0 {
			sigbits = 64
		}
		if leading+sigbits > 64 {
			return "value window wider than 64 bits"
		}
		s.leading, s.sigbits = leading, sigbits
	}
	x, ok := r.readBitsFast(s.sigbits)
	if !ok {
		if x, ok = r.readBits(s.sigbits); !ok {
			return "truncated value bits"
		}
	}
	s.v ^= x << ((64 - s.leading - s.sigbits) & 63)
	return ""
}
