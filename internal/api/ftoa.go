package api

import (
	"math"
	"math/bits"
)

// Sample values that are not decimals of a few digits (rates, averages,
// quantiles: most values a range query answers) are written as the
// shortest decimal that reads back as the value, which strconv finds and
// formats in about 65 ns; a panel of 43,000 such points spent most of
// its server time there. appendShortest finds the same decimal with the
// Schubfach method (Raffaello Giulietti, "The Schubfach way to render
// doubles", 2020) and writes it %f-style, for the values strconv would
// take longest over: from 2^-20 (below 1e-6, where Prometheus switches
// to exponent form) up to 2^56. Over that range each power of ten it
// scales by, 10^0 to 10^22, is an integer, held exactly in 128 bits, so
// every product it compares is exact: no case needs the proofs that
// approximated powers take.

// shortestMinExp and shortestMaxExp bound the binary exponent q of the
// values v = c·2^q (c in [2^52, 2^53)) appendShortest writes.
const (
	shortestMinExp = -72 // 2^-20 = 2^52 · 2^-72
	shortestMaxExp = 3   // below 2^56
)

// shortestScale is, for a binary exponent q and whether v is a power of
// two (its lower neighbour is half as far as its upper one), the decimal
// exponent k of the scale 10^-k, an integer n = -k of b+1 bits, as g =
// hi·2^64+lo, n shifted to fill 128 bits (n·2^(127-b)), and h, the shift
// of a significand's multiple whose product with g is where the
// multiple times v/c·10^-k·8 is in the top word: c·2^h·g = c·2^q·10^-k·2^131.
type shortestScale struct {
	k      int
	h      uint
	hi, lo uint64
}

var shortestScales = func() (t [shortestMaxExp - shortestMinExp + 1][2]shortestScale) {
	// 10^0 to 10^22, 128-bit integers as [hi, lo].
	var pow10 [23][2]uint64
	pow10[0][1] = 1
	for n := 1; n < len(pow10); n++ {
		hi, lo := bits.Mul64(pow10[n-1][1], 10)
		pow10[n] = [2]uint64{pow10[n-1][0]*10 + hi, lo}
	}
	bitLen := func(hi, lo uint64) int {
		if hi != 0 {
			return 64 + bits.Len64(hi)
		}
		return bits.Len64(lo)
	}
	for q := shortestMinExp; q <= shortestMaxExp; q++ {
		for irregular := range 2 {
			// k is the largest with 10^k at most the width of v's
			// rounding interval, 2^q, or 3/4·2^q for a power of two;
			// below 10, so k = -n <= 0 for the least n with 10^n·width
			// >= 1: with m·10^n >= 2^e, m 1 and e -q, or 3 and 2-q. As
			// m·10^n >= 1 is an integer, that is its bit length > e.
			m, e := uint64(1), -q
			if irregular == 1 {
				m, e = 3, 2-q
			}
			n := 0
			for {
				hi, lo := bits.Mul64(pow10[n][1], m)
				if bitLen(pow10[n][0]*m+hi, lo) > e {
					break
				}
				n++
			}
			hi, lo := pow10[n][0], pow10[n][1]
			b := bitLen(hi, lo) - 1
			if s := uint(127 - b); s >= 64 {
				hi, lo = lo<<(s-64), 0
			} else if s > 0 {
				hi, lo = hi<<s|lo>>(64-s), lo<<s
			}
			t[q-shortestMinExp][irregular] = shortestScale{k: -n, h: uint(q + 4 + b), hi: hi, lo: lo}
		}
	}
	return t
}()

// roundOdd returns c·2^h·g/2^131 rounded down to an integer, with its
// lowest bit set if anything was rounded off. The result compares with
// an even integer as the exact quotient does: rounded to odd, a quotient
// that is not an integer falls strictly between two even integers.
func (s *shortestScale) roundOdd(c uint64) uint64 {
	cp := c << s.h
	h1, h0 := bits.Mul64(cp, s.hi)
	l1, l0 := bits.Mul64(cp, s.lo)
	mid, carry := bits.Add64(h0, l1, 0)
	top := h1 + carry
	var sticky uint64
	if top&7|mid|l0 != 0 {
		sticky = 1
	}
	return top>>3 | sticky
}

// shortestDecimal returns the decimal d·10^e of fewest digits within v's
// rounding interval, the one nearest v of those, the even one where two
// are as near: what reads back as v = c·2^q and strconv's shortest
// formatting writes. c is in [2^52, 2^53) and q in [shortestMinExp,
// shortestMaxExp].
func shortestDecimal(c uint64, q int) (d uint64, e int) {
	irregular := 0
	if c == 1<<52 {
		irregular = 1
	}
	sc := &shortestScales[q-shortestMinExp][irregular]
	// Four times v and the ends of its rounding interval, scaled by
	// 10^-k: the lower end is half the gap to the next lower float
	// away, a quarter of 2^q below a power of two, the upper one half
	// of 2^q. The interval includes its ends where c is even (out 0),
	// as round-to-even reads them back as v.
	cb := c << 2
	cbl := cb - 2 + uint64(irregular)
	out := c & 1
	vb, vbl, vbr := sc.roundOdd(cb), sc.roundOdd(cbl), sc.roundOdd(cb+2)
	s := vb >> 2 // v·10^-k rounded down
	// A decimal of one digit fewer: of the multiples of 10 around s, at
	// most one is in the interval, which is under 10 wide.
	sp10 := s / 10 * 10
	tp10 := sp10 + 10
	upin := vbl+out <= sp10<<2
	wpin := tp10<<2+out <= vbr
	if upin != wpin {
		if upin {
			return sp10, sc.k
		}
		return tp10, sc.k
	}
	// Otherwise s or s+1, at least one of which is in the interval,
	// which is at least 1 wide; the nearer if both are.
	t := s + 1
	uin := vbl+out <= s<<2
	win := t<<2+out <= vbr
	if uin != win {
		if uin {
			return s, sc.k
		}
		return t, sc.k
	}
	if mid := (s + t) << 1; vb < mid || vb == mid && s&1 == 0 {
		return s, sc.k
	}
	return t, sc.k
}

// appendShortest appends f as strconv.AppendFloat(dst, f, 'f', -1, 64)
// does, if |f| is in [2^-20, 2^56), and reports whether it did.
func appendShortest(dst []byte, f float64) ([]byte, bool) {
	fb := math.Float64bits(f)
	q := int(fb>>52&0x7ff) - 1075
	if q < shortestMinExp || q > shortestMaxExp {
		return dst, false
	}
	d, e := shortestDecimal(fb&(1<<52-1)|1<<52, q)
	// d has at most 18 digits: written as three blocks of 8, whose
	// digits do not wait on each other's divisions, then cut to its own
	// digits without the trailing zeros.
	var digits [24]byte
	hi, mid, lo := uint32(d/1e16), uint32(d/1e8%1e8), uint32(d%1e8)
	put4(digits[0:4], hi/1e4)
	put4(digits[4:8], hi%1e4)
	put4(digits[8:12], mid/1e4)
	put4(digits[12:16], mid%1e4)
	put4(digits[16:20], lo/1e4)
	put4(digits[20:24], lo%1e4)
	ds := digits[len(digits)-decimalLen(d):]
	for ds[len(ds)-1] == '0' {
		ds = ds[:len(ds)-1]
		e++
	}
	if fb>>63 != 0 {
		dst = append(dst, '-')
	}
	// The decimal point falls point digits in: after them with zeros
	// (e >= 0), among them, or before them with zeros.
	switch point := len(ds) + e; {
	case e >= 0:
		dst = append(dst, ds...)
		for range e {
			dst = append(dst, '0')
		}
	case point > 0:
		dst = append(dst, ds[:point]...)
		dst = append(dst, '.')
		dst = append(dst, ds[point:]...)
	default:
		dst = append(dst, '0', '.')
		for range -point {
			dst = append(dst, '0')
		}
		dst = append(dst, ds...)
	}
	return dst, true
}

// put4 writes n, below 10^4, as 4 digits to b.
func put4(b []byte, n uint32) {
	hi, lo := n/100*2, n%100*2
	b[3], b[0], b[1], b[2] = twoDigits[lo+1], twoDigits[hi], twoDigits[hi+1], twoDigits[lo]
}

// decimalLen returns the number of decimal digits of d, at least 1.
func decimalLen(d uint64) int {
	// bits.Len64(d)·log10(2), rounded down, plus one is the length or
	// one more.
	n := bits.Len64(d)*1233>>12 + 1
	if n > 1 && d < pow10Uint[n-1] {
		n--
	}
	return n
}

// pow10Uint holds 10^0 to 10^19.
var pow10Uint = func() (p [20]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// twoDigits holds "00" to "99".
const twoDigits = "00010203040506070809" +
	"10111213141516171819" +
	"20212223242526272829" +
	"30313233343536373839" +
	"40414243444546474849" +
	"50515253545556575859" +
	"60616263646566676869" +
	"70717273747576777879" +
	"80818283848586878889" +
	"90919293949596979899"
