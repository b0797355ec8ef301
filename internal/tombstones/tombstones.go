// Package tombstones keeps the time ranges deleted from series: what
// /api/v1/admin/tsdb/delete_series marks, and queries skip until the
// samples are rewritten without them. A block keeps its own in a file
// (Encode, Decode; docs/format/block.md); the head keeps them in memory
// and logs them in its write-ahead log.
package tombstones

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"slices"

	"github.com/strata-db/strata/internal/chunkenc"
	"github.com/strata-db/strata/internal/storage"
)

// Interval is the time range [Mint, Maxt], both included.
type Interval struct{ Mint, Maxt int64 }

// Intervals are sorted, disjoint intervals, none adjacent to the next.
type Intervals []Interval

// Add returns iv with n added, joined with those it overlaps or touches.
// iv is not changed.
func (iv Intervals) Add(n Interval) Intervals {
	if n.Mint > n.Maxt {
		return iv
	}
	out := make(Intervals, 0, len(iv)+1)
	i := 0
	for ; i < len(iv) && apart(iv[i].Maxt, n.Mint); i++ {
		out = append(out, iv[i])
	}
	for ; i < len(iv) && !apart(n.Maxt, iv[i].Mint); i++ {
		n.Mint, n.Maxt = min(n.Mint, iv[i].Mint), max(n.Maxt, iv[i].Maxt)
	}
	out = append(out, n)
	return append(out, iv[i:]...)
}

// apart reports whether a time a is before b and not next to it.
func apart(a, b int64) bool { return a < b && uint64(b)-uint64(a) > 1 }

// Covers reports whether every time in [mint, maxt] is deleted.
func (iv Intervals) Covers(mint, maxt int64) bool {
	for _, d := range iv {
		if d.Mint <= mint && maxt <= d.Maxt {
			return true
		}
	}
	return false
}

// Overlaps reports whether any time in [mint, maxt] is deleted.
func (iv Intervals) Overlaps(mint, maxt int64) bool {
	for _, d := range iv {
		if d.Mint <= maxt && mint <= d.Maxt {
			return true
		}
	}
	return false
}

// Kept returns the ranges of [mint, maxt] that iv does not delete, in
// order, appended to dst.
func (iv Intervals) Kept(dst Intervals, mint, maxt int64) Intervals {
	for _, d := range iv {
		if d.Maxt < mint {
			continue
		}
		if d.Mint > maxt {
			break
		}
		if d.Mint > mint {
			dst = append(dst, Interval{mint, d.Mint - 1})
		}
		if d.Maxt >= maxt {
			return dst
		}
		mint = d.Maxt + 1
	}
	return append(dst, Interval{mint, maxt})
}

// Stones are the deleted intervals of series, by ref. A Stones value is
// not changed once shared: With returns a new one.
type Stones map[storage.SeriesRef]Intervals

// With returns a copy of s with the intervals of add added.
func (s Stones) With(add Stones) Stones {
	out := maps.Clone(s)
	if out == nil {
		out = make(Stones, len(add))
	}
	for ref, iv := range add {
		cur := out[ref]
		for _, n := range iv {
			cur = cur.Add(n)
		}
		out[ref] = cur
	}
	return out
}

// Filename is the name of a block's tombstones file.
const Filename = "tombstones"

// magic starts a tombstones file; its byte after is the format version.
const (
	magic   = "STMB"
	version = 1
)

// ErrCorrupt is wrapped by the errors of Decode.
var ErrCorrupt = errors.New("corrupt tombstones")

// Encode returns the file holding s: the magic and version, the number of
// series, then for each in ref order the ref's difference to the one
// before, the number of intervals and each interval as its Mint's
// difference to the Maxt before (the first one's as it is, zigzag) and
// its length, all varints, the differences unsigned; last the CRC32 (Castagnoli) of all before it,
// big-endian.
func Encode(s Stones) []byte {
	refs := slices.Sorted(maps.Keys(s))
	refs = slices.DeleteFunc(refs, func(ref storage.SeriesRef) bool { return len(s[ref]) == 0 })
	b := append([]byte(magic), version)
	b = binary.AppendUvarint(b, uint64(len(refs)))
	prev := storage.SeriesRef(0)
	for _, ref := range refs {
		iv := s[ref]
		b = binary.AppendUvarint(b, uint64(ref-prev))
		b = binary.AppendUvarint(b, uint64(len(iv)))
		for i, d := range iv {
			// Differences as unsigned: that from the start to the end of
			// time takes 64 bits.
			if i == 0 {
				b = binary.AppendVarint(b, d.Mint)
			} else {
				b = binary.AppendUvarint(b, uint64(d.Mint)-uint64(iv[i-1].Maxt))
			}
			b = binary.AppendUvarint(b, uint64(d.Maxt)-uint64(d.Mint))
		}
		prev = ref
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Decode reads a file Encode wrote. Any damage is an error wrapping
// ErrCorrupt.
func Decode(b []byte) (Stones, error) {
	if len(b) < len(magic)+1+4 || string(b[:len(magic)]) != magic {
		return nil, fmt.Errorf("%w: no tombstones header", ErrCorrupt)
	}
	if v := b[len(magic)]; v != version {
		return nil, fmt.Errorf("%w: unknown version %d", ErrCorrupt, v)
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(b[len(b)-4:]) {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	d := decoder{b: body[len(magic)+1:]}
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		return nil, fmt.Errorf("%w: %d series in %d bytes", ErrCorrupt, n, len(d.b))
	}
	s := make(Stones, n)
	ref := storage.SeriesRef(0)
	for i := uint64(0); i < n && d.err == nil; i++ {
		delta := d.uvarint()
		if i > 0 && delta == 0 {
			d.fail("series refs out of order")
		}
		ref += storage.SeriesRef(delta)
		k := d.uvarint()
		if k == 0 || k > uint64(len(d.b)) {
			d.fail(fmt.Sprintf("%d intervals", k))
			break
		}
		iv := make(Intervals, 0, k)
		for j := uint64(0); j < k && d.err == nil; j++ {
			var mint int64
			if j == 0 {
				mint = d.varint()
			} else {
				// A sum that wraps ends before where it started.
				prev := iv[j-1].Maxt
				if mint = int64(uint64(prev) + d.uvarint()); mint <= prev || !apart(prev, mint) {
					d.fail("intervals out of order")
				}
			}
			maxt := int64(uint64(mint) + d.uvarint())
			if maxt < mint {
				d.fail("interval past the end of time")
			}
			iv = append(iv, Interval{mint, maxt})
		}
		s[ref] = iv
	}
	if d.err == nil && len(d.b) > 0 {
		d.fail(fmt.Sprintf("%d bytes after the last series", len(d.b)))
	}
	if d.err != nil {
		return nil, d.err
	}
	return s, nil
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(msg string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrCorrupt, msg)
	}
}

func (d *decoder) uvarint() uint64 { return next(d, binary.Uvarint) }

func (d *decoder) varint() int64 { return next(d, binary.Varint) }

// next reads a varint with read.
func next[T uint64 | int64](d *decoder, read func([]byte) (T, int)) T {
	v, n := read(d.b)
	if n <= 0 {
		d.fail("truncated")
		d.b = nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

// Apply returns a series' chunks without the samples iv deletes: a chunk
// iv does not overlap as it is, one it covers dropped, and one it
// overlaps encoded anew from the samples it keeps (chunkenc.Clip). The
// chunks are returned as they are if iv is empty.
func (iv Intervals) Apply(chunks []chunkenc.Meta) ([]chunkenc.Meta, error) {
	if len(iv) == 0 {
		return chunks, nil
	}
	var (
		out  = make([]chunkenc.Meta, 0, len(chunks))
		kept Intervals
	)
	for _, c := range chunks {
		if !iv.Overlaps(c.MinT, c.MaxT) {
			out = append(out, c)
			continue
		}
		kept = iv.Kept(kept[:0], c.MinT, c.MaxT)
		for _, k := range kept {
			parts, err := chunkenc.Clip(c, k.Mint, k.Maxt)
			if err != nil {
				return nil, err
			}
			out = append(out, parts...)
		}
	}
	return out, nil
}

// ApplyIn is Apply for chunks a query reads in [mint, maxt]: it returns
// those of the chunks left that overlap the range.
func (iv Intervals) ApplyIn(chunks []chunkenc.Meta, mint, maxt int64) ([]chunkenc.Meta, error) {
	if len(iv) == 0 {
		return chunks, nil
	}
	chunks, err := iv.Apply(chunks)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(chunks, func(c chunkenc.Meta) bool { return c.MaxT < mint || c.MinT > maxt }), nil
}
