package index

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// The index file; see docs/format/index.md.
const (
	magic = 0x53544958 // "STIX"
	// version is that of an index with start times; one without any is
	// versionNoStarts, which strata before them reads too.
	version         = 2
	versionNoStarts = 1
	headerSize      = 8 // magic, version, 3 bytes of padding
	// tocSize is the fixed table of contents at the end of the file:
	// seven section offsets, the series count, the offset width, five
	// CRCs (symbols, offsets, labels, names, the TOC itself) and the
	// magic number again.
	tocSize = 7*8 + 8 + 1 + 4*4 + 4 + 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ChunkRef locates a chunk in a block's chunk segment files. The index
// stores it without knowing what it means; package block does (segment
// number in the upper 32 bits, offset in the lower 32).
type ChunkRef uint64

// ChunkMeta is a chunk of a series as the index lists it.
type ChunkMeta struct {
	Ref        ChunkRef
	MinT, MaxT int64 // of its first and last sample, inclusive, milliseconds
}

// ErrCorrupt is wrapped by every error for an index file that is not what
// the format says.
var ErrCorrupt = errors.New("corrupt index")

// CorruptionError says where an index file is damaged.
type CorruptionError struct {
	Section string // symbols, series, offsets, labels, names, postings, toc
	Offset  int64  // of the damaged part, from the start of the file
	Reason  string
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("corrupt index: %s at byte %d: %s", e.Section, e.Offset, e.Reason)
}

// Unwrap returns ErrCorrupt.
func (e *CorruptionError) Unwrap() error { return ErrCorrupt }

// toc is the table of contents: where each section starts. Each section
// ends where the next starts; postings end at the TOC.
type toc struct {
	symbols, series, offsets, postings, labels, names, end int64
	nseries                                                uint64
	offsetWidth                                            uint8
	crcSymbols, crcOffsets, crcLabels, crcNames            uint32
}

func (t *toc) append(b []byte) []byte {
	start := len(b)
	for _, off := range []int64{t.symbols, t.series, t.offsets, t.postings, t.labels, t.names, t.end} {
		b = binary.BigEndian.AppendUint64(b, uint64(off))
	}
	b = binary.BigEndian.AppendUint64(b, t.nseries)
	b = append(b, t.offsetWidth)
	for _, c := range []uint32{t.crcSymbols, t.crcOffsets, t.crcLabels, t.crcNames} {
		b = binary.BigEndian.AppendUint32(b, c)
	}
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b[start:], castagnoli))
	return binary.BigEndian.AppendUint32(b, magic)
}

// decoder reads varints from a byte slice with a sticky error: the first
// problem is kept and later reads return zero values.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errors.New("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errors.New("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.err = fmt.Errorf("%d bytes wanted, %d left", n, len(d.b))
		return nil
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}

// count reads a count of items that take at least min bytes each, and
// fails for one the remaining bytes cannot hold, so that a damaged count
// cannot make a reader allocate without bound.
func (d *decoder) count(min int) int {
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b)/min) {
		d.err = fmt.Errorf("count %d exceeds what %d bytes hold", n, len(d.b))
		return 0
	}
	return int(n)
}
