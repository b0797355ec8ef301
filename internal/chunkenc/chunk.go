package chunkenc

import (
	"encoding/binary"
	"fmt"
)

// Encoding says how a chunk's bytes are encoded. Its values are part of
// the on-disk formats that store chunks (WAL checkpoints, block chunk
// files): never renumber them.
type Encoding uint8

const (
	// EncNone is no encoding: the zero value, never stored.
	EncNone Encoding = iota
	// EncXOR is the XOR float chunk.
	EncXOR
	// EncHistogram is the integer histogram chunk.
	EncHistogram
	// EncFloatHistogram is the float histogram chunk.
	EncFloatHistogram
	// EncDecimal is the decimal float chunk, written in blocks in place
	// of an XOR chunk where it is smaller (see Densifier).
	EncDecimal
)

func (e Encoding) String() string {
	switch e {
	case EncNone:
		return "none"
	case EncXOR:
		return "XOR"
	case EncHistogram:
		return "histogram"
	case EncFloatHistogram:
		return "float histogram"
	case EncDecimal:
		return "decimal"
	}
	return fmt.Sprintf("Encoding(%d)", uint8(e))
}

// Valid reports whether e is an encoding this package reads.
func (e Encoding) Valid() bool { return e >= EncXOR && e <= EncDecimal }

// Chunk is an encoded chunk of one series, whichever its encoding.
// *XORChunk, *HistogramChunk and *FloatHistogramChunk implement it, and
// FromData wraps stored bytes in one.
type Chunk interface {
	// Bytes returns the encoded chunk. See the concrete types for how
	// long the result stays valid while the chunk is appended to.
	Bytes() []byte
	// Encoding returns the chunk's encoding.
	Encoding() Encoding
	// NumSamples returns the number of samples in the chunk.
	NumSamples() int
}

// FromData returns the chunk of encoding enc held in b, for reading. It
// retains b, which must not change while the chunk is used. It fails for
// an unknown encoding or bytes too short to hold a sample count; anything
// else wrong with b is reported by the iterators.
func FromData(enc Encoding, b []byte) (Chunk, error) {
	if !enc.Valid() {
		return nil, &CorruptChunkError{Encoding: enc, Reason: "unknown encoding"}
	}
	if len(b) < xorChunkHeaderSize {
		return nil, &CorruptChunkError{Encoding: enc, Reason: "shorter than its sample count"}
	}
	return storedChunk{enc: enc, data: b}, nil
}

// storedChunk is a chunk read back from storage.
type storedChunk struct {
	enc  Encoding
	data []byte
}

func (c storedChunk) Bytes() []byte      { return c.data }
func (c storedChunk) Encoding() Encoding { return c.enc }

// NumSamples reads the count every encoding starts with.
func (c storedChunk) NumSamples() int { return int(binary.BigEndian.Uint16(c.data)) }

// Encoding implements Chunk.
func (c *XORChunk) Encoding() Encoding { return EncXOR }

// Encoding implements Chunk.
func (c *HistogramChunk) Encoding() Encoding { return EncHistogram }

// Encoding implements Chunk.
func (c *FloatHistogramChunk) Encoding() Encoding { return EncFloatHistogram }

// Meta is a chunk of a series with the time range of its samples, as the
// head and the blocks list a series' chunks. Data is the encoded chunk;
// who owns it, and for how long it stays valid, is up to whoever hands out
// the Meta.
type Meta struct {
	Data       []byte
	MinT, MaxT int64 // of the first and last sample, inclusive, milliseconds
	Enc        Encoding
}

// NumSamples reads the sample count every encoding starts with, 0 if
// Data is too short to hold it.
func (m Meta) NumSamples() int {
	if len(m.Data) < xorChunkHeaderSize {
		return 0
	}
	return int(binary.BigEndian.Uint16(m.Data))
}
