package api

import (
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
)

// The appenders below write the JSON Prometheus' HTTP API writes, byte for
// byte, so that golden files taken from Prometheus hold for strata too:
//
//   - timestamps are seconds with the milliseconds written as three digits
//     ("1.500", not "1.5"), and no fraction at all on whole seconds;
//   - sample values are strings, formatted %f-style except below 1e-6 and
//     from 1e21 on, where they switch to exponent form, and "NaN", "+Inf",
//     "-Inf";
//   - label names and values are escaped only as far as JSON requires (no
//     HTML escaping), while other strings (label name lists, warnings,
//     errors) are escaped as encoding/json escapes them.
//
// Each appends to dst and returns the extended slice.

// appendTimestamp appends t, in milliseconds, as seconds.
func appendTimestamp(dst []byte, t int64) []byte {
	if t < 0 {
		dst = append(dst, '-')
		t = -t
	}
	dst = strconv.AppendInt(dst, t/1000, 10)
	if frac := t % 1000; frac != 0 {
		dst = append(dst, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
	}
	return dst
}

// appendFloat appends f as a quoted sample value, as Prometheus writes it:
// the shortest decimal that reads back as f, with an exponent only below
// 1e-6 and from 1e21 on.
func appendFloat(dst []byte, f float64) []byte {
	if out, ok := appendDecimal(append(dst, '"'), f); ok {
		return append(out, '"')
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = append(dst, '"')
	if format == 'f' {
		if out, ok := appendShortest(dst, f); ok {
			return append(out, '"')
		}
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	return append(dst, '"')
}

// appendDecimal appends f as strconv.AppendFloat(dst, f, 'f', -1, 64)
// would, if f is a decimal of at most 6 fraction digits and 15
// significant ones, or an integer below 2^53, and reports whether it
// did. Most sample values are such (counters, and gauges of a few
// digits), and this takes a fraction of the time of the shortest-digits
// search.
//
// The digits are right: f is m/10^6 rounded, with m under 10^15, and two
// decimals of at most 15 significant digits never round to the same
// float64 (whose 53 bits are 15.95 digits), so no other decimal of as
// few digits as m's reads back as f, and none of fewer. An integer below
// 2^53 is exact in a float64, and its neighbours are other integers.
// Division being correctly rounded, m/10^6 is f exactly when m's decimal
// reads back as f, whatever zeros m ends in.
func appendDecimal(dst []byte, f float64) ([]byte, bool) {
	a := math.Abs(f)
	var whole, frac uint64 // a's integer part, and its fraction in millionths
	switch {
	case a >= 1e-6 && a < 1e9:
		// Below 1e-6 Prometheus writes an exponent; from 1e9 on m could
		// reach 10^15.
		//
		// RoundToEven is one instruction where Round is not. How a tie
		// rounds does not matter: a*1e6 is within 0.25 of an integer
		// for a decimal of six places, and anything else fails the
		// check below.
		m := math.RoundToEven(a * 1e6)
		if m/1e6 != a {
			return dst, false
		}
		whole, frac = uint64(m)/1e6, uint64(m)%1e6
	case a >= 1e9 && a < 1<<53 && a == math.Trunc(a):
		whole = uint64(a)
	default:
		return dst, false
	}
	// The digits, written from the end: the fraction without its
	// trailing zeros, then the integer part.
	var digits [24]byte
	i := len(digits)
	if frac != 0 {
		n := 6
		for frac%10 == 0 {
			frac /= 10
			n--
		}
		for range n {
			i--
			digits[i] = byte('0' + frac%10)
			frac /= 10
		}
		i--
		digits[i] = '.'
	}
	for {
		i--
		digits[i] = byte('0' + whole%10)
		whole /= 10
		if whole == 0 {
			break
		}
	}
	if f < 0 {
		dst = append(dst, '-')
	}
	return append(dst, digits[i:]...), true
}

const hexDigits = "0123456789abcdef"

// appendLabelString appends s quoted, escaping only '"', '\\' and control
// characters. Bytes from 0x80 on are copied as they are: label names and
// values are valid UTF-8 by the time they are stored.
func appendLabelString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b >= 0x20 && b != '"' && b != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		dst = appendEscapedASCII(dst, b)
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendString appends s quoted and escaped as encoding/json does with
// HTML escaping on: also '<', '>', '&', U+2028 and U+2029 are escaped,
// and invalid UTF-8 becomes U+FFFD.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			dst = appendEscapedASCII(dst, b)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\u202`...)
			dst = append(dst, hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendEscapedASCII appends the escape sequence for the ASCII byte b.
func appendEscapedASCII(dst []byte, b byte) []byte {
	switch b {
	case '"', '\\':
		return append(dst, '\\', b)
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	}
	return append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xf])
}

// appendStrings appends ss as a JSON array of strings; nil is [].
func appendStrings(dst []byte, ss []string) []byte {
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, s)
	}
	return append(dst, ']')
}

// appendLabels appends ls as an object, in label order.
func appendLabels(dst []byte, ls labels.Labels) []byte {
	dst = append(dst, '{')
	first := true
	ls.Range(func(l labels.Label) {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = appendLabelString(dst, l.Name)
		dst = append(dst, ':')
		dst = appendLabelString(dst, l.Value)
	})
	return append(dst, '}')
}

// appendHistogram appends a native histogram as count, sum and the
// non-empty buckets, each [boundaries, lower, upper, count] where
// boundaries says which ends are inclusive: 0 upper only, 1 lower only,
// 2 neither, 3 both.
func appendHistogram(dst []byte, h *histogram.FloatHistogram) []byte {
	dst = append(dst, `{"count":`...)
	dst = appendFloat(dst, h.Count)
	dst = append(dst, `,"sum":`...)
	dst = appendFloat(dst, h.Sum)
	inBuckets := false
	it := h.AllBucketIterator()
	for it.Next() {
		b := it.At()
		if b.Count == 0 {
			continue
		}
		if inBuckets {
			dst = append(dst, ',')
		} else {
			dst = append(dst, `,"buckets":[`...)
			inBuckets = true
		}
		var bounds byte
		switch {
		case b.LowerInclusive && b.UpperInclusive:
			bounds = '3'
		case b.LowerInclusive:
			bounds = '1'
		case b.UpperInclusive:
			bounds = '0'
		default:
			bounds = '2'
		}
		dst = append(dst, '[', bounds, ',')
		dst = appendFloat(dst, b.Lower)
		dst = append(dst, ',')
		dst = appendFloat(dst, b.Upper)
		dst = append(dst, ',')
		dst = appendFloat(dst, b.Count)
		dst = append(dst, ']')
	}
	if inBuckets {
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

// appendFPoint appends [t, "v"].
func appendFPoint(dst []byte, t int64, f float64) []byte {
	dst = append(dst, '[')
	dst = appendTimestamp(dst, t)
	dst = append(dst, ',')
	dst = appendFloat(dst, f)
	return append(dst, ']')
}

// appendHPoint appends [t, {histogram}].
func appendHPoint(dst []byte, t int64, h *histogram.FloatHistogram) []byte {
	dst = append(dst, '[')
	dst = appendTimestamp(dst, t)
	dst = append(dst, ',')
	dst = appendHistogram(dst, h)
	return append(dst, ']')
}

// appendVector appends an instant vector: each sample with "value", or
// "histogram" for a native histogram sample.
func appendVector(dst []byte, v promql.Vector) []byte {
	dst = append(dst, '[')
	for i, s := range v {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"metric":`...)
		dst = appendLabels(dst, s.Metric)
		if s.H == nil {
			dst = append(dst, `,"value":`...)
			dst = appendFPoint(dst, s.T, s.F)
		} else {
			dst = append(dst, `,"histogram":`...)
			dst = appendHPoint(dst, s.T, s.H)
		}
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// Sizes a range vector's JSON is estimated with, in bytes: the series'
// keys and brackets, a label pair, and a point. A float point is about
// 25 bytes (`[1795686405.123,"0.57"]`) and one of 17 digits, as rates
// are, 40: an estimate short of the answer costs a copy of all of it,
// one over it only memory the pool keeps; a histogram point some
// hundreds.
const (
	matrixSeriesOverhead = 32
	labelPairSize        = 32
	floatPointSize       = 40
	histogramPointSize   = 256
)

// stampCache keeps the timestamps of a range vector's points as
// appendTimestamp wrote them, by the point's position in its series: the
// series of a range query share their steps, so the timestamps of all
// but the first are copied rather than formatted. Formatting them was
// 6% of the CPU of a day-long range query of 180 series (43,000
// points).
type stampCache struct {
	t   []int64
	end []int // where each one ends in buf
	buf []byte
}

// reserve makes room for n timestamps.
func (c *stampCache) reserve(n int) {
	c.t, c.end = make([]int64, 0, n), make([]int, 0, n)
	c.buf = make([]byte, 0, n*len("1795675905.123"))
}

// append appends t, the timestamp of point j of a series, as
// appendTimestamp does. A cache that reserve did not set up (an answer
// of one series) keeps nothing.
func (c *stampCache) append(dst []byte, j int, t int64) []byte {
	if j < len(c.t) && c.t[j] == t {
		start := 0
		if j > 0 {
			start = c.end[j-1]
		}
		return append(dst, c.buf[start:c.end[j]]...)
	}
	if c.t == nil || j != len(c.t) {
		return appendTimestamp(dst, t)
	}
	n := len(dst)
	dst = appendTimestamp(dst, t)
	c.buf = append(c.buf, dst[n:]...)
	c.t, c.end = append(c.t, t), append(c.end, len(c.buf))
	return dst
}

// appendMatrix appends a range vector: each series with its float points
// under "values" and its histogram points under "histograms", each key
// left out when it has no points.
func appendMatrix(dst []byte, m promql.Matrix) []byte {
	// Grow once to about the size needed rather than by doubling, which
	// for a panel of many series copied each byte about twice more.
	size := 2
	for _, s := range m {
		size += matrixSeriesOverhead + s.Metric.Len()*labelPairSize + len(s.Floats)*floatPointSize + len(s.Histograms)*histogramPointSize
	}
	dst = slices.Grow(dst, size)
	var stamps stampCache
	if len(m) > 1 {
		stamps.reserve(len(m[0].Floats))
	}
	dst = append(dst, '[')
	for i, s := range m {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"metric":`...)
		dst = appendLabels(dst, s.Metric)
		if len(s.Floats) > 0 {
			dst = append(dst, `,"values":[`...)
			for j, p := range s.Floats {
				if j > 0 {
					dst = append(dst, ',')
				}
				dst = append(dst, '[')
				dst = stamps.append(dst, j, p.T)
				dst = append(dst, ',')
				dst = appendFloat(dst, p.F)
				dst = append(dst, ']')
			}
			dst = append(dst, ']')
		}
		if len(s.Histograms) > 0 {
			dst = append(dst, `,"histograms":[`...)
			for j, p := range s.Histograms {
				if j > 0 {
					dst = append(dst, ',')
				}
				dst = appendHPoint(dst, p.T, p.H)
			}
			dst = append(dst, ']')
		}
		dst = append(dst, '}')
	}
	return append(dst, ']')
}
