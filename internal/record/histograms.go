package record

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/prometheus/prometheus/model/histogram"

	"github.com/strata-db/strata/internal/storage"
)

// RefHistogramSample is one integer native histogram sample of the series
// with the given ref.
type RefHistogramSample struct {
	Ref storage.SeriesRef
	T   int64 // milliseconds since the epoch
	H   *histogram.Histogram
}

// RefFloatHistogramSample is one float native histogram sample of the
// series with the given ref.
type RefFloatHistogramSample struct {
	Ref storage.SeriesRef
	T   int64 // milliseconds since the epoch
	FH  *histogram.FloatHistogram
}

// Minimum encoded sizes of one histogram sample, used to bound the sample
// count before anything is allocated: ref delta, time delta, hint, schema,
// zero threshold, zero count, count, sum, and the five element counts
// (positive and negative spans, positive and negative buckets, custom
// values). Integer histograms have varint counts, float ones 8-byte counts.
const (
	minHistogramSampleSize      = 1 + 1 + 1 + 1 + 8 + 1 + 1 + 8 + 5
	minFloatHistogramSampleSize = 1 + 1 + 1 + 1 + 8 + 8 + 8 + 8 + 5
	minSpanSize                 = 1 + 1 // varint offset + uvarint length
)

// EncodeHistogramSamples appends a HistogramSamples record holding hs to
// dst and returns the extended slice. Every H must be non-nil.
//
// Refs and timestamps are stored as deltas from the first sample's, as in
// a Samples record. Every field of each histogram is stored, whatever its
// schema, so it comes back exactly as it went in; floats (zero threshold,
// sum, custom values) as the 8 bytes of their IEEE 754 bits, so NaN
// payloads such as the stale marker survive.
func EncodeHistogramSamples(dst []byte, hs []RefHistogramSample) []byte {
	dst = append(dst, byte(HistogramSamples))
	dst = binary.AppendUvarint(dst, uint64(len(hs)))
	if len(hs) == 0 {
		return dst
	}
	baseRef, baseT := uint64(hs[0].Ref), hs[0].T
	dst = binary.AppendUvarint(dst, baseRef)
	dst = binary.AppendVarint(dst, baseT)
	for i := range hs {
		s := &hs[i]
		// Wrapping differences, as in EncodeSamples.
		dst = binary.AppendVarint(dst, int64(uint64(s.Ref)-baseRef))
		dst = binary.AppendVarint(dst, s.T-baseT)
		h := s.H
		dst = append(dst, byte(h.CounterResetHint))
		dst = binary.AppendVarint(dst, int64(h.Schema))
		dst = appendFloat(dst, h.ZeroThreshold)
		dst = binary.AppendUvarint(dst, h.ZeroCount)
		dst = binary.AppendUvarint(dst, h.Count)
		dst = appendFloat(dst, h.Sum)
		dst = appendSpans(dst, h.PositiveSpans)
		dst = appendSpans(dst, h.NegativeSpans)
		dst = appendVarints(dst, h.PositiveBuckets)
		dst = appendVarints(dst, h.NegativeBuckets)
		dst = appendFloats(dst, h.CustomValues)
	}
	return dst
}

// EncodeFloatHistogramSamples appends a FloatHistogramSamples record
// holding hs to dst and returns the extended slice. Every FH must be
// non-nil. The layout is that of EncodeHistogramSamples, except that the
// zero count, count and buckets are floats, stored as 8 bytes each.
func EncodeFloatHistogramSamples(dst []byte, hs []RefFloatHistogramSample) []byte {
	dst = append(dst, byte(FloatHistogramSamples))
	dst = binary.AppendUvarint(dst, uint64(len(hs)))
	if len(hs) == 0 {
		return dst
	}
	baseRef, baseT := uint64(hs[0].Ref), hs[0].T
	dst = binary.AppendUvarint(dst, baseRef)
	dst = binary.AppendVarint(dst, baseT)
	for i := range hs {
		s := &hs[i]
		dst = binary.AppendVarint(dst, int64(uint64(s.Ref)-baseRef))
		dst = binary.AppendVarint(dst, s.T-baseT)
		h := s.FH
		dst = append(dst, byte(h.CounterResetHint))
		dst = binary.AppendVarint(dst, int64(h.Schema))
		dst = appendFloat(dst, h.ZeroThreshold)
		dst = appendFloat(dst, h.ZeroCount)
		dst = appendFloat(dst, h.Count)
		dst = appendFloat(dst, h.Sum)
		dst = appendSpans(dst, h.PositiveSpans)
		dst = appendSpans(dst, h.NegativeSpans)
		dst = appendFloats(dst, h.PositiveBuckets)
		dst = appendFloats(dst, h.NegativeBuckets)
		dst = appendFloats(dst, h.CustomValues)
	}
	return dst
}

func appendFloat(dst []byte, v float64) []byte {
	return binary.LittleEndian.AppendUint64(dst, math.Float64bits(v))
}

// appendSpans appends a span count and per span its offset (varint) and
// length (uvarint).
func appendSpans(dst []byte, spans []histogram.Span) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(spans)))
	for _, s := range spans {
		dst = binary.AppendVarint(dst, int64(s.Offset))
		dst = binary.AppendUvarint(dst, uint64(s.Length))
	}
	return dst
}

// appendVarints appends a count and the values as varints.
func appendVarints(dst []byte, vs []int64) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(vs)))
	for _, v := range vs {
		dst = binary.AppendVarint(dst, v)
	}
	return dst
}

// appendFloats appends a count and the values' 8 bytes each.
func appendFloats(dst []byte, vs []float64) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(vs)))
	for _, v := range vs {
		dst = appendFloat(dst, v)
	}
	return dst
}

// HistogramSamples decodes a HistogramSamples record, appends its samples
// to dst and returns the extended slice. On error it returns dst unchanged
// in length and an error wrapping ErrCorrupt. Nothing returned aliases rec.
//
// Histograms are reused: where an entry of dst's spare capacity,
// dst[len(dst):cap(dst)], points to a histogram, that histogram and its
// span and bucket slices are overwritten with a decoded sample instead of
// allocating new ones. Decoding into hs[:0] therefore overwrites the
// histograms the previous call returned in hs: the histograms a call
// returns are the caller's until the next call with the same dst (or a
// slice of its array), and one kept longer must be copied
// (Histogram.Copy). The histograms in the spare capacity must be distinct
// and nothing else may refer to them or their spans and buckets. When dst
// must grow, the spare histograms move to the new array.
//
// CustomValues are never written in place, because histograms share them
// by reference (Histogram.Copy does not copy them): a reused histogram keeps
// its CustomValues if the record holds the same values, bit for bit, and
// gets a new slice otherwise. So decoding histograms of the same shape as
// the last call's, custom buckets included, allocates nothing.
//
// The decoder checks that the record is well formed, not that each
// histogram is valid (Histogram.Validate): histograms are validated before
// they are logged.
func (d *Decoder) HistogramSamples(rec []byte, dst []RefHistogramSample) ([]RefHistogramSample, error) {
	orig := len(dst)
	b := decbuf{b: rec}
	b.header(HistogramSamples)
	n := b.count("histogram sample count", minHistogramSampleSize)
	if n > 0 {
		baseRef := b.uvarint("base ref")
		baseT := b.varint("base timestamp")
		dst = growKeepingSpare(dst, n)
		for i := 0; i < n && b.err == nil; i++ {
			dref := b.varint("ref delta")
			dt := b.varint("timestamp delta")
			dst = dst[:len(dst)+1]
			s := &dst[len(dst)-1]
			h := s.H
			if h == nil {
				h = new(histogram.Histogram)
			}
			*s = RefHistogramSample{Ref: storage.SeriesRef(baseRef + uint64(dref)), T: baseT + dt, H: h}
			h.CounterResetHint = readHint(&b)
			h.Schema = readSchema(&b)
			h.ZeroThreshold = math.Float64frombits(b.uint64le("zero threshold"))
			h.ZeroCount = b.uvarint("zero count")
			h.Count = b.uvarint("count")
			h.Sum = math.Float64frombits(b.uint64le("sum"))
			h.PositiveSpans = readSpans(&b, h.PositiveSpans, "positive span count")
			h.NegativeSpans = readSpans(&b, h.NegativeSpans, "negative span count")
			h.PositiveBuckets = readVarints(&b, h.PositiveBuckets, "positive bucket count")
			h.NegativeBuckets = readVarints(&b, h.NegativeBuckets, "negative bucket count")
			h.CustomValues = readCustomValues(&b, h.CustomValues)
		}
	}
	if err := b.end(); err != nil {
		// The histograms stay in the spare capacity, for the next call.
		return dst[:orig], err
	}
	return dst, nil
}

// FloatHistogramSamples decodes a FloatHistogramSamples record, appends its
// samples to dst and returns the extended slice. On error it returns dst
// unchanged in length and an error wrapping ErrCorrupt. Nothing returned
// aliases rec.
//
// It reuses the float histograms in dst's spare capacity exactly as
// HistogramSamples reuses histograms, and the same ownership rule holds:
// the histograms a call returns are the caller's until the next call with
// the same dst, and one kept longer must be copied (FloatHistogram.Copy).
func (d *Decoder) FloatHistogramSamples(rec []byte, dst []RefFloatHistogramSample) ([]RefFloatHistogramSample, error) {
	orig := len(dst)
	b := decbuf{b: rec}
	b.header(FloatHistogramSamples)
	n := b.count("histogram sample count", minFloatHistogramSampleSize)
	if n > 0 {
		baseRef := b.uvarint("base ref")
		baseT := b.varint("base timestamp")
		dst = growKeepingSpare(dst, n)
		for i := 0; i < n && b.err == nil; i++ {
			dref := b.varint("ref delta")
			dt := b.varint("timestamp delta")
			dst = dst[:len(dst)+1]
			s := &dst[len(dst)-1]
			h := s.FH
			if h == nil {
				h = new(histogram.FloatHistogram)
			}
			*s = RefFloatHistogramSample{Ref: storage.SeriesRef(baseRef + uint64(dref)), T: baseT + dt, FH: h}
			h.CounterResetHint = readHint(&b)
			h.Schema = readSchema(&b)
			h.ZeroThreshold = math.Float64frombits(b.uint64le("zero threshold"))
			h.ZeroCount = math.Float64frombits(b.uint64le("zero count"))
			h.Count = math.Float64frombits(b.uint64le("count"))
			h.Sum = math.Float64frombits(b.uint64le("sum"))
			h.PositiveSpans = readSpans(&b, h.PositiveSpans, "positive span count")
			h.NegativeSpans = readSpans(&b, h.NegativeSpans, "negative span count")
			h.PositiveBuckets = readFloats(&b, h.PositiveBuckets, "positive bucket count")
			h.NegativeBuckets = readFloats(&b, h.NegativeBuckets, "negative bucket count")
			h.CustomValues = readCustomValues(&b, h.CustomValues)
		}
	}
	if err := b.end(); err != nil {
		return dst[:orig], err
	}
	return dst, nil
}

// growKeepingSpare returns s with room for n more elements. Unlike a plain
// append it carries s's spare capacity, s[len(s):cap(s)], over to the new
// array, so that the histograms there can still be reused.
func growKeepingSpare[T any](s []T, n int) []T {
	if cap(s)-len(s) >= n {
		return s
	}
	g := make([]T, len(s), len(s)+n)
	copy(g[:cap(s)], s[:cap(s)])
	return g
}

// resize returns s with length n, reusing its array if it is large enough.
// It returns nil for a nil s and n 0, so empty fields stay nil.
func resize[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n)
}

func readHint(b *decbuf) histogram.CounterResetHint {
	h := b.byte("counter reset hint")
	// GaugeType is the last hint there is; a new one needs a new record
	// type, since older code would misread it.
	if h > byte(histogram.GaugeType) {
		b.fail("counter reset hint", fmt.Sprintf("unknown hint %d", h))
	}
	return histogram.CounterResetHint(h)
}

func readSchema(b *decbuf) int32 {
	v := b.varint("schema")
	if v < math.MinInt32 || v > math.MaxInt32 {
		b.fail("schema", fmt.Sprintf("%d overflows int32", v))
	}
	return int32(v)
}

// readSpans reads a span count and the spans into reuse's array if it is
// large enough.
func readSpans(b *decbuf, reuse []histogram.Span, what string) []histogram.Span {
	spans := resize(reuse, b.count(what, minSpanSize))
	for i := range spans {
		off := b.varint("span offset")
		n := b.uvarint("span length")
		if off < math.MinInt32 || off > math.MaxInt32 {
			b.fail("span offset", fmt.Sprintf("%d overflows int32", off))
		}
		if n > math.MaxUint32 {
			b.fail("span length", fmt.Sprintf("%d overflows uint32", n))
		}
		spans[i] = histogram.Span{Offset: int32(off), Length: uint32(n)}
	}
	return spans
}

// readVarints reads a count and that many varints into reuse's array if it
// is large enough.
func readVarints(b *decbuf, reuse []int64, what string) []int64 {
	vs := resize(reuse, b.count(what, 1))
	for i := range vs {
		vs[i] = b.varint("bucket")
	}
	return vs
}

// readFloats reads a count and that many 8-byte floats into reuse's array
// if it is large enough.
func readFloats(b *decbuf, reuse []float64, what string) []float64 {
	vs := resize(reuse, b.count(what, 8))
	for i := range vs {
		vs[i] = math.Float64frombits(b.uint64le("bucket"))
	}
	return vs
}

// readCustomValues reads a count and that many 8-byte floats. It returns
// cur if it holds exactly those values and a new slice otherwise, and never
// writes to cur: custom values are shared between histograms.
func readCustomValues(b *decbuf, cur []float64) []float64 {
	n := b.count("custom value count", 8)
	raw := b.bytes("custom values", uint64(n)*8)
	if b.err != nil || n == 0 {
		return nil
	}
	same := len(cur) == n
	for i := 0; same && i < n; i++ {
		same = math.Float64bits(cur[i]) == binary.LittleEndian.Uint64(raw[8*i:])
	}
	if same {
		return cur
	}
	vs := make([]float64, n)
	for i := range vs {
		vs[i] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:]))
	}
	return vs
}
