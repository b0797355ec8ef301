package record

import (
	"encoding/binary"
	"math"
	"slices"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/chunkenc"
	"github.com/strata-db/strata/internal/storage"
)

// RefChunkSeries is a series as a checkpoint holds it.
type RefChunkSeries struct {
	Ref    storage.SeriesRef
	Labels labels.Labels
	// LastV is the value of the newest sample, so that duplicate checks
	// after a restart need not decode the last chunk. Meaningless when
	// there are no chunks.
	LastV  float64
	Chunks []chunkenc.Meta // oldest first, not overlapping
}

// Minimum encoded sizes of a chunk series and a chunk.
const (
	minChunkSeriesSize = 1 + 1 + 8 + 1 // ref, label count, last value, chunk count
	minChunkSize       = 1 + 1 + 1 + 1 // encoding, min time, time span, length
)

// ChunkSeriesEncoder builds a ChunkSeries record, a series at a time.
// Per series the record holds: ref, labels as in a Series record, the
// last value's 8 bytes, a chunk count and per chunk its encoding byte,
// min time (varint), max time minus min time (uvarint), and its
// length-prefixed bytes.
//
// What a series' entry is made of (its labels, copies of its chunks)
// need only last until Add returns, so that a checkpoint of a million
// series builds one series' worth at a time and reuses it. Its zero
// value is ready to use.
type ChunkSeriesEncoder struct {
	body []byte
	n    int
}

// Add appends s to the record.
func (e *ChunkSeriesEncoder) Add(s *RefChunkSeries) {
	e.body = binary.AppendUvarint(e.body, uint64(s.Ref))
	e.body = appendLabels(e.body, s.Labels)
	e.body = binary.LittleEndian.AppendUint64(e.body, math.Float64bits(s.LastV))
	e.body = binary.AppendUvarint(e.body, uint64(len(s.Chunks)))
	for _, c := range s.Chunks {
		e.body = append(e.body, byte(c.Enc))
		e.body = binary.AppendVarint(e.body, c.MinT)
		e.body = binary.AppendUvarint(e.body, uint64(c.MaxT-c.MinT))
		e.body = binary.AppendUvarint(e.body, uint64(len(c.Data)))
		e.body = append(e.body, c.Data...)
	}
	e.n++
}

// Grow makes room for n more bytes of series, so that a record cut at a
// size is built without growing its buffer.
func (e *ChunkSeriesEncoder) Grow(n int) { e.body = slices.Grow(e.body, n) }

// Len returns the bytes of the series added since the last Record.
func (e *ChunkSeriesEncoder) Len() int { return len(e.body) }

// Record appends to dst the record of the series added since the last
// Record, and starts a new one.
func (e *ChunkSeriesEncoder) Record(dst []byte) []byte {
	dst = append(dst, byte(ChunkSeries))
	dst = binary.AppendUvarint(dst, uint64(e.n))
	dst = append(dst, e.body...)
	e.body, e.n = e.body[:0], 0
	return dst
}

// ChunkSeries decodes a ChunkSeries record, appends its series to dst and
// returns the extended slice. On error it returns dst unchanged in length
// and an error wrapping ErrCorrupt.
//
// Unless d.AliasChunks is set, nothing returned aliases rec, and the chunk
// bytes of one series share one allocation. With it set, chunk bytes are
// slices of rec (labels never are), valid as long as rec is. The Chunks
// arrays of entries past the end of dst are reused.
func (d *Decoder) ChunkSeries(rec []byte, dst []RefChunkSeries) ([]RefChunkSeries, error) {
	orig := len(dst)
	b := decbuf{b: rec}
	b.header(ChunkSeries)
	n := b.count("series count", minChunkSeriesSize)
	for i := 0; i < n && b.err == nil; i++ {
		s := RefChunkSeries{Ref: storage.SeriesRef(b.uvarint("series ref"))}
		s.Labels = d.labels(&b, rec)
		s.LastV = math.Float64frombits(b.uint64le("last value"))
		nc := b.count("chunk count", minChunkSize)
		if b.err != nil {
			break
		}
		// Reuse the chunk list of the entry this one overwrites.
		if len(dst) < cap(dst) {
			s.Chunks = dst[: len(dst)+1 : len(dst)+1][len(dst)].Chunks[:0]
		}
		s.Chunks = slices.Grow(s.Chunks, nc)
		// Slice each chunk's bytes from rec first, then copy them all into
		// one allocation.
		size := 0
		for j := 0; j < nc && b.err == nil; j++ {
			c := chunkenc.Meta{Enc: chunkenc.Encoding(b.byte("chunk encoding"))}
			c.MinT = b.varint("chunk min time")
			c.MaxT = c.MinT + int64(b.uvarint("chunk time span"))
			c.Data = b.bytes("chunk data", b.uvarint("chunk length"))
			size += len(c.Data)
			s.Chunks = append(s.Chunks, c)
		}
		if b.err != nil {
			break
		}
		if size > 0 && !d.AliasChunks {
			slab := make([]byte, 0, size)
			for j := range s.Chunks {
				from := len(slab)
				slab = append(slab, s.Chunks[j].Data...)
				s.Chunks[j].Data = slab[from:len(slab):len(slab)]
			}
		}
		dst = append(dst, s)
	}
	if err := b.end(); err != nil {
		clear(dst[orig:])
		return dst[:orig], err
	}
	return dst, nil
}
