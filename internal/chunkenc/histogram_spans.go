package chunkenc

import (
	"math"
	"slices"

	"github.com/prometheus/prometheus/model/histogram"
)

// spanCursor walks the bucket indices that spans cover, in order. Indices
// are int64 so that no span list, however odd, overflows them.
type spanCursor struct {
	spans []histogram.Span
	next  int64  // index of the next bucket
	left  uint32 // buckets left in the current span
}

// advance returns the next bucket index, or false after the last.
func (c *spanCursor) advance() (int64, bool) {
	for c.left == 0 {
		if len(c.spans) == 0 {
			return 0, false
		}
		// The first span's offset is its start, a later one's the gap
		// after the previous span: both add to where the last one ended.
		c.next += int64(c.spans[0].Offset)
		c.left = c.spans[0].Length
		c.spans = c.spans[1:]
	}
	idx := c.next
	c.next++
	c.left--
	return idx, true
}

// spanBuilder appends increasing bucket indices to canonical spans.
type spanBuilder struct {
	spans []histogram.Span
	last  int64 // the last index added
}

// add appends idx, which must be greater than the last index added. It
// reports false if the span list cannot hold it: a gap beyond an int32 or
// a span of more than math.MaxUint32 buckets.
func (b *spanBuilder) add(idx int64) bool {
	n := len(b.spans)
	switch {
	case n > 0 && idx == b.last+1:
		if b.spans[n-1].Length == math.MaxUint32 {
			return false // a new span would follow without a gap
		}
		b.spans[n-1].Length++
	case n == 0 && idx >= math.MinInt32 && idx <= math.MaxInt32:
		b.spans = append(b.spans, histogram.Span{Offset: int32(idx), Length: 1})
	case n > 0 && idx-b.last-1 <= math.MaxInt32:
		b.spans = append(b.spans, histogram.Span{Offset: int32(idx - b.last - 1), Length: 1})
	default:
		return false
	}
	b.last = idx
	return true
}

// canonicalSpans appends to dst the canonical form of spans, which must
// cover exactly n buckets at increasing indices, each gap fitting an
// int32. It reports false if they do not.
func canonicalSpans(dst, spans []histogram.Span, n int) ([]histogram.Span, bool) {
	c := spanCursor{spans: spans}
	b := spanBuilder{spans: dst}
	for k := 0; ; k++ {
		idx, ok := c.advance()
		if !ok {
			return b.spans, k == n
		}
		if k == n || k > 0 && idx <= b.last || !b.add(idx) {
			return b.spans, false
		}
	}
}

// fitBuckets writes into dst, one value per bucket of layout in order,
// the counts of the buckets that spans and buckets describe, and 0 for
// the buckets of layout they lack. If deltas, each of buckets is the
// difference to the previous one, as in histogram.Histogram.
//
// fits is false if they have a bucket that layout lacks; its count is
// then not written anywhere. valid is false if spans do not cover
// len(buckets) buckets at increasing indices; dst is then garbage.
func fitBuckets[T int64 | float64](dst []T, layout, spans []histogram.Span, buckets []T, deltas bool) (fits, valid bool) {
	if len(buckets) == len(dst) && slices.Equal(spans, layout) {
		// The usual case: the histogram has the chunk's layout.
		if !deltas {
			copy(dst, buckets)
			return true, true
		}
		var acc T
		for i, b := range buckets {
			acc += b
			dst[i] = acc
		}
		return true, true
	}

	lc, sc := spanCursor{spans: layout}, spanCursor{spans: spans}
	li, lok := lc.advance()
	j := 0 // next index into dst
	fits = true
	var acc T
	prev := int64(math.MinInt64)
	for k := 0; ; k++ {
		si, ok := sc.advance()
		if !ok {
			if k != len(buckets) {
				return false, false
			}
			break
		}
		if k == len(buckets) || k > 0 && si <= prev {
			return false, false
		}
		prev = si
		if deltas {
			acc += buckets[k]
		} else {
			acc = buckets[k]
		}
		for lok && li < si {
			dst[j] = 0
			j++
			li, lok = lc.advance()
		}
		if lok && li == si {
			dst[j] = acc
			j++
			li, lok = lc.advance()
		} else {
			fits = false
		}
	}
	clear(dst[j:])
	return fits, true
}

// unionSpans returns the canonical spans covering the buckets of a and of
// b, in new memory. Both must be valid (a canonical layout, b accepted by
// fitBuckets). It reports false if the union cannot be written as spans
// (see spanBuilder.add).
func unionSpans(a, b []histogram.Span) ([]histogram.Span, bool) {
	ac, bc := spanCursor{spans: a}, spanCursor{spans: b}
	ai, aok := ac.advance()
	bi, bok := bc.advance()
	var out spanBuilder
	for aok || bok {
		var idx int64
		switch {
		case !bok || aok && ai < bi:
			idx = ai
			ai, aok = ac.advance()
		case !aok || bi < ai:
			idx = bi
			bi, bok = bc.advance()
		default: // in both
			idx = ai
			ai, aok = ac.advance()
			bi, bok = bc.advance()
		}
		if !out.add(idx) {
			return nil, false
		}
	}
	return out.spans, true
}

// bucketPositions returns, for each bucket of from in order, its position
// in to, which must cover every bucket of from.
func bucketPositions(from, to []histogram.Span) []int {
	var pos []int
	fc, tc := spanCursor{spans: from}, spanCursor{spans: to}
	ti, tok := tc.advance()
	j := 0
	for {
		fi, ok := fc.advance()
		if !ok {
			return pos
		}
		for tok && ti < fi {
			ti, tok = tc.advance()
			j++
		}
		if !tok || ti != fi {
			panic("chunkenc: bucketPositions: layout does not cover the old one")
		}
		pos = append(pos, j)
	}
}
