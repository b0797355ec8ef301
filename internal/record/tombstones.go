package record

import (
	"encoding/binary"

	"github.com/strata-db/strata/internal/storage"
)

// RefTombstone says that the samples of the series with the given ref in
// [Mint, Maxt] (milliseconds, both included) are deleted.
type RefTombstone struct {
	Ref        storage.SeriesRef
	Mint, Maxt int64
}

// minTombstoneSize: ref, mint, length.
const minTombstoneSize = 1 + 1 + 1

// EncodeTombstones appends a Tombstones record holding entries to dst and
// returns the extended slice: a count, then per entry its ref (uvarint),
// its Mint (varint) and Maxt - Mint (uvarint, wrapping).
func EncodeTombstones(dst []byte, entries []RefTombstone) []byte {
	dst = append(dst, byte(Tombstones))
	dst = binary.AppendUvarint(dst, uint64(len(entries)))
	for _, e := range entries {
		dst = binary.AppendUvarint(dst, uint64(e.Ref))
		dst = binary.AppendVarint(dst, e.Mint)
		dst = binary.AppendUvarint(dst, uint64(e.Maxt)-uint64(e.Mint))
	}
	return dst
}

// Tombstones decodes a Tombstones record, appends its entries to dst and
// returns the extended slice. On error it returns dst unchanged in length
// and an error wrapping ErrCorrupt.
func (d *Decoder) Tombstones(rec []byte, dst []RefTombstone) ([]RefTombstone, error) {
	orig := len(dst)
	b := decbuf{b: rec}
	b.header(Tombstones)
	n := b.count("tombstone count", minTombstoneSize)
	for i := 0; i < n && b.err == nil; i++ {
		e := RefTombstone{Ref: storage.SeriesRef(b.uvarint("series ref"))}
		e.Mint = b.varint("mint")
		e.Maxt = int64(uint64(e.Mint) + b.uvarint("interval length"))
		if b.err == nil && e.Maxt < e.Mint {
			b.fail("interval", "past the end of time")
		}
		if b.err == nil {
			dst = append(dst, e)
		}
	}
	if err := b.end(); err != nil {
		return dst[:orig], err
	}
	return dst, nil
}
