package record

import (
	"math"

	"github.com/klauspost/compress/zstd"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/storage"
)

// Minimum encoded sizes, used to bound counts read from a record before
// anything is allocated for them.
const (
	minSeriesSize = 2         // uvarint ref + uvarint label count
	minLabelSize  = 2         // two uvarint lengths of empty strings
	minSampleSize = 1 + 1 + 8 // varint ref delta + varint time delta + value
)

// Decoder decodes records. Its zero value is ready to use. A Decoder keeps
// scratch space between calls, so it must not be used by two goroutines at
// once; give each replay worker its own.
type Decoder struct {
	// AliasChunks makes ChunkSeries return chunk bytes that alias the
	// record rather than copies, for a caller that copies them to memory
	// of its own anyway (the head copies them into its chunk arena) and
	// so saves an allocation per series.
	AliasChunks bool

	builder labels.ScratchBuilder
	spans   []labelSpan

	zstd     *zstd.Decoder // for Decompress, made at its first call
	unzipped []byte
}

// labelSpan locates one label's name and value in a series' encoded labels,
// relative to the start of those labels.
type labelSpan struct {
	nameStart, nameEnd, valueStart, valueEnd int
}

// Series decodes a Series record, appends its series to dst and returns the
// extended slice. On error it returns dst unchanged in length and an error
// wrapping ErrCorrupt.
//
// The returned labels do not alias rec, so rec may be reused as soon as
// Series returns. Labels are returned in the order they were encoded.
func (d *Decoder) Series(rec []byte, dst []RefSeries) ([]RefSeries, error) {
	orig := len(dst)
	b := decbuf{b: rec}
	b.header(Series)
	n := b.count("series count", minSeriesSize)
	dst = growRefSeries(dst, n)
	for i := 0; i < n && b.err == nil; i++ {
		ref := b.uvarint("series ref")
		lset := d.labels(&b, rec)
		if b.err != nil {
			break
		}
		dst = append(dst, RefSeries{Ref: storage.SeriesRef(ref), Labels: lset})
	}
	if err := b.end(); err != nil {
		clear(dst[orig:])
		return dst[:orig], err
	}
	return dst, nil
}

// labels decodes a label count and that many name/value pairs at b's
// offset in rec.
func (d *Decoder) labels(b *decbuf, rec []byte) labels.Labels {
	nl := b.count("label count", minLabelSize)
	// Find every name and value first, then copy all of this series' label
	// bytes into one string (one allocation) and slice it, so the labels
	// own their memory instead of pointing into rec.
	start := b.off
	d.spans = d.spans[:0]
	for j := 0; j < nl && b.err == nil; j++ {
		var s labelSpan
		name := b.bytes("label name", b.uvarint("label name length"))
		s.nameEnd = b.off - start
		s.nameStart = s.nameEnd - len(name)
		value := b.bytes("label value", b.uvarint("label value length"))
		s.valueEnd = b.off - start
		s.valueStart = s.valueEnd - len(value)
		d.spans = append(d.spans, s)
	}
	if b.err != nil {
		return labels.EmptyLabels()
	}
	all := string(rec[start:b.off])
	d.builder.Reset()
	for _, s := range d.spans {
		d.builder.Add(all[s.nameStart:s.nameEnd], all[s.valueStart:s.valueEnd])
	}
	return d.builder.Labels()
}

// Samples decodes a Samples record, appends its samples to dst and returns
// the extended slice. It allocates only if dst lacks the capacity. On error
// it returns dst unchanged in length and an error wrapping ErrCorrupt.
func (d *Decoder) Samples(rec []byte, dst []RefSample) ([]RefSample, error) {
	orig := len(dst)
	b := decbuf{b: rec}
	b.header(Samples)
	n := b.count("sample count", minSampleSize)
	if n > 0 {
		baseRef := b.uvarint("base ref")
		baseT := b.varint("base timestamp")
		dst = growRefSample(dst, n)
		// The count was checked against the record's length, so this loop
		// is bounded even when the record is corrupt; b.err is checked
		// once, after it.
		for range n {
			dref := b.varint("ref delta")
			dt := b.varint("timestamp delta")
			v := b.uint64le("value")
			dst = append(dst, RefSample{
				Ref: storage.SeriesRef(baseRef + uint64(dref)),
				T:   baseT + dt,
				V:   math.Float64frombits(v),
			})
		}
	}
	if err := b.end(); err != nil {
		return dst[:orig], err
	}
	return dst, nil
}

func growRefSeries(s []RefSeries, n int) []RefSeries {
	if cap(s)-len(s) >= n {
		return s
	}
	return append(make([]RefSeries, 0, len(s)+n), s...)
}

func growRefSample(s []RefSample, n int) []RefSample {
	if cap(s)-len(s) >= n {
		return s
	}
	return append(make([]RefSample, 0, len(s)+n), s...)
}
