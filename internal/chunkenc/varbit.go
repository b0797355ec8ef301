package chunkenc

// The varbit code writes the signed integers of histogram chunks (the
// delta-of-deltas of counts and buckets, and their first values): a prefix
// of up to varbitMaxOnes ones, ended by a zero unless it has that many,
// picks the width of the two's complement value that follows, 0 for the
// value 0 itself. See docs/format/chunks.md for why these widths.
const varbitMaxOnes = 8

// varbitBits maps the count of ones in a varbit prefix to the width of the
// value that follows. Widths below 64 hold [-2^(w-1), 2^(w-1)).
var varbitBits = [varbitMaxOnes + 1]uint8{0, 2, 4, 6, 9, 13, 20, 36, 64}

// varbitCode returns the code of v in the smallest width that holds it and
// the code's length in bits. If wide, the code is only the prefix: the 64
// bits of v follow it.
func varbitCode(v int64) (code uint64, n uint8, wide bool) {
	if v == 0 {
		return 0, 1, false
	}
	for ones := uint8(1); ones < varbitMaxOnes; ones++ {
		if w := varbitBits[ones]; fitsBits(v, w) {
			// ones ones, a zero, then the low w bits of v.
			prefix := uint64(1)<<ones - 1
			return prefix<<(w+1) | uint64(v)&(1<<w-1), ones + 1 + w, false
		}
	}
	return 1<<varbitMaxOnes - 1, varbitMaxOnes, true
}

// writeVarbit writes v in the varbit code.
func writeVarbit(w *bitWriter, v int64) {
	code, n, wide := varbitCode(v)
	if wide {
		w.writeBits2(code, n, uint64(v), 64)
		return
	}
	w.writeBits(code, n)
}

// readVarbit reads a value in the varbit code. ok is false if the stream
// ends first.
func readVarbit(r *bitReader) (v int64, ok bool) {
	ones, ok := r.readOnesFast(varbitMaxOnes)
	if !ok {
		if ones, ok = r.readOnes(varbitMaxOnes); !ok {
			return 0, false
		}
	}
	n := varbitBits[ones]
	if n == 0 {
		return 0, true
	}
	u, ok := r.readBitsFast(n)
	if !ok {
		if u, ok = r.readBits(n); !ok {
			return 0, false
		}
	}
	// Sign-extend the n-bit two's complement value (a no-op for 64).
	return int64(u<<((64-n)&63)) >> ((64 - n) & 63), true
}
