package chunkenc

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// bitField is one write: the low n bits of u.
type bitField struct {
	u uint64
	n uint8
}

func (f bitField) String() string { return fmt.Sprintf("%0*b", f.n, f.u) }

func randomField(rng *rand.Rand, minN, maxN int) bitField {
	n := uint8(minN + rng.IntN(maxN-minN+1))
	u := rng.Uint64()
	if n < 64 {
		u &= 1<<n - 1
	}
	return bitField{u, n}
}

// TestBitWriter checks writes of every width, alone and paired, from
// every starting capacity (so that both the word store and the byte-wise
// path near the end of the capacity run), against bitString.
func TestBitWriter(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 300 {
		w := bitWriter{buf: make([]byte, 0, trial%20)}
		var want strings.Builder
		for range 1 + rng.IntN(40) {
			if rng.IntN(3) == 0 {
				f1, f2 := randomField(rng, 0, 24), randomField(rng, 1, 64)
				if f1.n == 0 {
					f1.u = 0
				}
				w.writeBits2(f1.u, f1.n, f2.u, f2.n)
				if f1.n > 0 {
					want.WriteString(f1.String())
				}
				want.WriteString(f2.String())
			} else {
				f := randomField(rng, 1, 64)
				w.writeBits(f.u, f.n)
				want.WriteString(f.String())
			}
			if exp := bitString(want.String()); !bytes.Equal(w.buf, exp) {
				t.Fatalf("trial %d: wrote %s\n got %x\nwant %x", trial, want.String(), w.buf, exp)
			}
			if exp := uint8(-want.Len() & 7); w.free != exp {
				t.Fatalf("trial %d: free = %d after %d bits, want %d", trial, w.free, want.Len(), exp)
			}
		}
	}
}

// TestBitReader reads random fields and unary codes back, from slices
// whose ends fall anywhere in the reader's buffer.
func TestBitReader(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	type field struct {
		bitField
		ones int // for a unary code of at most 4 ones, their count; else -1
	}
	for trial := range 300 {
		var fields []field
		var all strings.Builder
		for range 1 + rng.IntN(40) {
			f := field{randomField(rng, 1, 64), -1}
			if rng.IntN(4) == 0 {
				f.ones = rng.IntN(5)
				f.bitField = bitField{uint64(1<<f.ones-1) << 1, uint8(f.ones + 1)} // ones, then a zero
				if f.ones == 4 {
					f.bitField = bitField{0b1111, 4} // four ones end the code
				}
			}
			fields = append(fields, f)
			all.WriteString(f.String())
		}
		b := bitString(all.String())

		var r bitReader
		r.reset(b)
		for i, f := range fields {
			if f.ones >= 0 {
				if ones, ok := r.readOnes(4); !ok || int(ones) != f.ones {
					t.Fatalf("trial %d field %d: readOnes = %d, %v; want %d", trial, i, ones, ok, f.ones)
				}
				continue
			}
			var got uint64
			var ok bool
			if rng.IntN(2) == 0 {
				got, ok = r.readBitsFast(f.n)
			}
			if !ok {
				got, ok = r.readBits(f.n)
			}
			if !ok || got != f.u {
				t.Fatalf("trial %d field %d: read %0*b, %v; want %s", trial, i, f.n, got, ok, f)
			}
		}
		if rem, pad := r.remaining(), -all.Len()&7; rem != pad {
			t.Fatalf("trial %d: %d bits remain, want the %d of padding", trial, rem, pad)
		}
		if _, ok := r.readBits(8); ok {
			t.Fatalf("trial %d: read 8 bits past the end", trial)
		}
		if r.remaining() != 0 {
			t.Fatalf("trial %d: a failed read left %d bits", trial, r.remaining())
		}
	}
}
