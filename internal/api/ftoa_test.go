package api

import (
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestShortestScales checks the scales appendShortest multiplies by:
// each fills 128 bits, and its shift keeps a significand's multiple in
// 64 bits; and each is the one math/big works out: 10^k the largest
// power of ten within v's rounding interval's width, 10^-k filling 128
// bits, and the shift that puts c·2^q·10^-k·2^131 at c·2^h·g.
func TestShortestScales(t *testing.T) {
	one := big.NewRat(1, 1)
	pow10 := func(n int) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil) }
	for i, row := range shortestScales {
		q := i + shortestMinExp
		for irregular, sc := range row {
			if sc.k > 0 || sc.hi < 1<<63 || sc.h > 8 {
				t.Errorf("q %d: scale %+v", q, sc)
			}
			width := new(big.Rat).SetFrac(new(big.Int).Lsh(big.NewInt(1), uint(max(q, 0))), new(big.Int).Lsh(big.NewInt(1), uint(-min(q, 0))))
			if irregular == 1 {
				width.Mul(width, big.NewRat(3, 4))
			}
			k := 0
			for new(big.Rat).Mul(width, new(big.Rat).SetInt(pow10(-k))).Cmp(one) < 0 {
				k--
			}
			p := pow10(-k)
			b := p.BitLen() - 1
			g := new(big.Int).Lsh(p, uint(127-b))
			want := shortestScale{k: k, h: uint(q + 4 + b), hi: new(big.Int).Rsh(g, 64).Uint64(), lo: new(big.Int).And(g, new(big.Int).SetUint64(math.MaxUint64)).Uint64()}
			if sc != want {
				t.Errorf("q %d, power of two %v: scale %+v, want %+v", q, irregular == 1, sc, want)
			}
		}
	}
}

// checkShortest fails t unless appendShortest writes f as strconv does
// where it takes f, and takes every f in its range.
func checkShortest(t *testing.T, f float64) {
	t.Helper()
	got, ok := appendShortest(nil, f)
	a := math.Abs(f)
	if inRange := a >= 0x1p-20 && a < 0x1p56; ok != inRange {
		t.Fatalf("%v (%#x): taken %v, in its range %v", f, math.Float64bits(f), ok, inRange)
	}
	if want := strconv.AppendFloat(nil, f, 'f', -1, 64); ok && string(got) != string(want) {
		t.Fatalf("%v (%#x): %s, want %s", f, math.Float64bits(f), got, want)
	}
}

// TestAppendShortest compares appendShortest with strconv over floats of
// every exponent it takes and the two around them: random bits, powers
// of two (whose lower neighbour is nearer), decimals of few digits and
// their neighbours, integers, and random values at every scale.
func TestAppendShortest(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for e := shortestMinExp + 1075 - 1; e <= shortestMaxExp+1075+1; e++ {
		exp := uint64(e) << 52
		for _, m := range []uint64{0, 1, 2, 3, 1<<52 - 1, 1<<52 - 2, 1 << 51} {
			checkShortest(t, math.Float64frombits(exp|m))
			checkShortest(t, -math.Float64frombits(exp|m))
		}
		for range 5000 {
			checkShortest(t, math.Float64frombits(exp|rng.Uint64()&(1<<52-1)))
		}
	}
	for digits := 1; digits <= 17; digits++ {
		for range 5000 {
			m := rng.Int64N(int64(math.Pow10(digits)))
			f := float64(m) / math.Pow10(rng.IntN(23))
			checkShortest(t, f)
			checkShortest(t, math.Nextafter(f, 0))
			checkShortest(t, math.Nextafter(f, math.Inf(1)))
		}
	}
	for range 50000 {
		checkShortest(t, rng.Float64()*math.Pow10(rng.IntN(24)-7))
		checkShortest(t, float64(rng.Int64N(1<<56)))
	}
	for _, f := range []float64{1, 0.1, 0.3, 1e-6, 2e-6, 1e16, 1e17, 0x1p-20, 0x1p56, math.Nextafter(0x1p56, 0), 9007199254740993, 5e-324, math.MaxFloat64, 0, math.Inf(1), math.NaN()} {
		checkShortest(t, f)
	}
}

// FuzzAppendShortest compares appendShortest with strconv on any float's
// bits.
func FuzzAppendShortest(f *testing.F) {
	for _, v := range []float64{1, 0.1, 1234.5678901234567, 0x1p-20, math.Nextafter(0x1p56, 0)} {
		f.Add(math.Float64bits(v))
	}
	f.Fuzz(func(t *testing.T, b uint64) {
		checkShortest(t, math.Float64frombits(b))
	})
}

// TestDecimalLen checks decimalLen at every power of ten and its
// neighbours.
func TestDecimalLen(t *testing.T) {
	for n := 1; n < len(pow10Uint); n++ {
		p := pow10Uint[n]
		for _, c := range []struct {
			d    uint64
			want int
		}{{p - 1, n}, {p, n + 1}, {p + 1, n + 1}} {
			if got := decimalLen(c.d); got != c.want {
				t.Errorf("decimalLen(%d) = %d, want %d", c.d, got, c.want)
			}
		}
	}
	if got := decimalLen(1); got != 1 {
		t.Errorf("decimalLen(1) = %d", got)
	}
}
