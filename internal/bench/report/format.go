package report

import (
	"math"
	"strconv"
	"strings"
)

// formatValue prints v with the precision it deserves: whole numbers with
// thousands separators, and about three significant digits otherwise,
// which is as much as a noisy two-core machine can tell apart.
func formatValue(v float64) string {
	a := math.Abs(v)
	switch {
	case v == math.Trunc(v) && a < 1e15:
		return group(strconv.FormatFloat(v, 'f', 0, 64))
	case a >= 100:
		return group(strconv.FormatFloat(v, 'f', 0, 64))
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

// group inserts thousands separators into a formatted integer.
func group(s string) string {
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	if len(s) <= 3 {
		if neg {
			return "-" + s
		}
		return s
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	head := len(s) % 3
	if head > 0 {
		b.WriteString(s[:head])
	}
	for i := head; i < len(s); i += 3 {
		if b.Len() > 0 && !(neg && b.Len() == 1) {
			b.WriteByte(',')
		}
		b.WriteString(s[i : i+3])
	}
	return b.String()
}

// formatRatio prints v/base as "1.23x", or "-" when it is undefined.
func formatRatio(v, base float64) string {
	if base == 0 || math.IsNaN(v) || math.IsNaN(base) {
		return "-"
	}
	return strconv.FormatFloat(v/base, 'f', 2, 64) + "x"
}
