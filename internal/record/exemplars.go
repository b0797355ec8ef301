package record

import (
	"encoding/binary"
	"math"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/storage"
)

// RefExemplar is an exemplar of the series with the given ref.
type RefExemplar struct {
	Ref    storage.SeriesRef
	T      int64 // milliseconds
	V      float64
	HasTs  bool // the sender gave the exemplar a timestamp of its own
	Labels labels.Labels
}

// minExemplarSize: ref, timestamp, flags, value, label count.
const minExemplarSize = 1 + 1 + 1 + 8 + 1

// EncodeExemplars appends an Exemplars record holding exemplars to dst and
// returns the extended slice: a count, then per exemplar its ref
// (uvarint), timestamp (varint), a flags byte (1: has its own timestamp),
// the value's 8 bytes and its labels as in a Series record.
func EncodeExemplars(dst []byte, exemplars []RefExemplar) []byte {
	dst = append(dst, byte(Exemplars))
	dst = binary.AppendUvarint(dst, uint64(len(exemplars)))
	for i := range exemplars {
		e := &exemplars[i]
		dst = binary.AppendUvarint(dst, uint64(e.Ref))
		dst = binary.AppendVarint(dst, e.T)
		var flags byte
		if e.HasTs {
			flags = 1
		}
		dst = append(dst, flags)
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(e.V))
		dst = appendLabels(dst, e.Labels)
	}
	return dst
}

// Exemplars decodes an Exemplars record, appends its exemplars to dst and
// returns the extended slice. Labels do not alias rec. On error it returns
// dst unchanged in length and an error wrapping ErrCorrupt.
func (d *Decoder) Exemplars(rec []byte, dst []RefExemplar) ([]RefExemplar, error) {
	orig := len(dst)
	b := decbuf{b: rec}
	b.header(Exemplars)
	n := b.count("exemplar count", minExemplarSize)
	for i := 0; i < n && b.err == nil; i++ {
		e := RefExemplar{Ref: storage.SeriesRef(b.uvarint("series ref"))}
		e.T = b.varint("timestamp")
		flags := b.byte("flags")
		if flags > 1 {
			b.fail("flags", "unknown flag bits")
		}
		e.HasTs = flags == 1
		e.V = math.Float64frombits(b.uint64le("value"))
		e.Labels = d.labels(&b, rec)
		if b.err == nil {
			dst = append(dst, e)
		}
	}
	if err := b.end(); err != nil {
		clear(dst[orig:])
		return dst[:orig], err
	}
	return dst, nil
}
