package record

import (
	"encoding/binary"

	"github.com/strata-db/strata/internal/storage"
)

// RefStartTime says that from the sample at T on, the series with the
// given ref counts from ST: its start (created) time, when the counter or
// histogram last started from zero. Both are in milliseconds.
type RefStartTime struct {
	Ref storage.SeriesRef
	T   int64
	ST  int64
}

// minStartTimeSize: ref, time, start time.
const minStartTimeSize = 1 + 1 + 1

// EncodeStartTimes appends a StartTimes record holding entries to dst and
// returns the extended slice: a count, then per entry its ref (uvarint),
// its time (varint) and its start time as the difference time - start time
// (varint), small for a counter that restarted recently.
func EncodeStartTimes(dst []byte, entries []RefStartTime) []byte {
	dst = append(dst, byte(StartTimes))
	dst = binary.AppendUvarint(dst, uint64(len(entries)))
	for _, e := range entries {
		dst = binary.AppendUvarint(dst, uint64(e.Ref))
		dst = binary.AppendVarint(dst, e.T)
		// Wrapping difference, undone exactly by decoding.
		dst = binary.AppendVarint(dst, int64(uint64(e.T)-uint64(e.ST)))
	}
	return dst
}

// StartTimes decodes a StartTimes record, appends its entries to dst and
// returns the extended slice. On error it returns dst unchanged in length
// and an error wrapping ErrCorrupt.
func (d *Decoder) StartTimes(rec []byte, dst []RefStartTime) ([]RefStartTime, error) {
	orig := len(dst)
	b := decbuf{b: rec}
	b.header(StartTimes)
	n := b.count("start time count", minStartTimeSize)
	for i := 0; i < n && b.err == nil; i++ {
		e := RefStartTime{Ref: storage.SeriesRef(b.uvarint("series ref"))}
		e.T = b.varint("time")
		e.ST = int64(uint64(e.T) - uint64(b.varint("start time")))
		if b.err == nil {
			dst = append(dst, e)
		}
	}
	if err := b.end(); err != nil {
		return dst[:orig], err
	}
	return dst, nil
}
