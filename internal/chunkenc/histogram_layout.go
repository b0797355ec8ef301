package chunkenc

import (
	"math"

	"github.com/prometheus/prometheus/model/histogram"
)

// histogramLayout is what a histogram chunk stores once, before its
// samples: the schema, the zero threshold, the spans of its buckets, and
// the bounds of custom buckets. Every histogram of the chunk is encoded
// with one value per bucket of the layout; a histogram that lacks a
// bucket has 0 in it.
//
// The spans are kept canonical: no empty spans, and a gap of at least one
// bucket between spans. Schema histogram.CustomBucketsSchema uses
// customValues and no zero threshold, zero count or negative buckets;
// other schemas use no customValues.
type histogramLayout struct {
	schema        int32
	zeroThreshold uint64 // bits of the zero threshold; 0 for custom buckets
	posSpans      []histogram.Span
	negSpans      []histogram.Span
	customValues  []float64 // only meaningful for custom buckets
	nPos, nNeg    int       // buckets the spans cover
}

// custom reports whether the layout is of custom buckets.
func (l *histogramLayout) custom() bool { return histogram.IsCustomBucketsSchema(l.schema) }

// numValues is the number of values a histogram of the layout has: the
// zero count, then the positive buckets, then the negative ones. Custom
// buckets leave the zero count's slot unused, so that bucket i is always
// at 1+i.
func (l *histogramLayout) numValues() int { return 1 + l.nPos + l.nNeg }

// firstValue is the index of the first value that is encoded: 1 for
// custom buckets, which have no zero count, else 0.
func (l *histogramLayout) firstValue() int {
	if l.custom() {
		return 1
	}
	return 0
}

// matches reports whether a histogram with this schema, zero threshold
// and custom bounds can join a chunk of the layout. Floats are compared
// bit by bit, so what a chunk returns is exactly what went in.
func (l *histogramLayout) matches(schema int32, zeroThreshold float64, customValues []float64) bool {
	if schema != l.schema {
		return false
	}
	if l.custom() {
		return sameFloats(customValues, l.customValues)
	}
	return math.Float64bits(zeroThreshold) == l.zeroThreshold
}

// sameFloats reports whether a and b hold the same bits.
func sameFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 || &a[0] == &b[0] {
		return true // interned bounds are usually the same slice
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// set makes l the layout of a histogram with the given fields, copying
// them into l's memory. It reports false, leaving l unusable, if the
// spans are not valid for nPos positive and nNeg negative buckets (see
// canonicalSpans).
func (l *histogramLayout) set(schema int32, zeroThreshold float64, pos, neg []histogram.Span, nPos, nNeg int, customValues []float64) bool {
	l.schema = schema
	var ok bool
	if l.posSpans, ok = canonicalSpans(l.posSpans[:0], pos, nPos); !ok {
		return false
	}
	l.nPos = nPos
	l.negSpans, l.nNeg = l.negSpans[:0], 0
	l.zeroThreshold = 0
	l.customValues = l.customValues[:0]
	if l.custom() {
		l.customValues = append(l.customValues, customValues...)
		return true
	}
	l.zeroThreshold = math.Float64bits(zeroThreshold)
	if l.negSpans, ok = canonicalSpans(l.negSpans, neg, nNeg); !ok {
		return false
	}
	l.nNeg = nNeg
	return true
}
