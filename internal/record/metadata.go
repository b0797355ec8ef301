package record

import (
	"encoding/binary"

	"github.com/prometheus/common/model"
)

// RefMetadata is the metadata of one metric family.
type RefMetadata struct {
	MetricName string
	Type       model.MetricType
	Help, Unit string
}

// minMetadataSize: four empty length-prefixed strings.
const minMetadataSize = 4

// EncodeMetadata appends a Metadata record holding entries to dst and
// returns the extended slice: a count, then per entry its metric name,
// type, help and unit, each a uvarint length and the bytes.
func EncodeMetadata(dst []byte, entries []RefMetadata) []byte {
	dst = append(dst, byte(Metadata))
	dst = binary.AppendUvarint(dst, uint64(len(entries)))
	for _, e := range entries {
		for _, s := range [...]string{e.MetricName, string(e.Type), e.Help, e.Unit} {
			dst = binary.AppendUvarint(dst, uint64(len(s)))
			dst = append(dst, s...)
		}
	}
	return dst
}

// Metadata decodes a Metadata record, appends its entries to dst and
// returns the extended slice. The strings do not alias rec. On error it
// returns dst unchanged in length and an error wrapping ErrCorrupt.
func (d *Decoder) Metadata(rec []byte, dst []RefMetadata) ([]RefMetadata, error) {
	orig := len(dst)
	b := decbuf{b: rec}
	b.header(Metadata)
	n := b.count("metadata count", minMetadataSize)
	for i := 0; i < n && b.err == nil; i++ {
		str := func(what string) string { return string(b.bytes(what, b.uvarint(what+" length"))) }
		e := RefMetadata{MetricName: str("metric name")}
		e.Type = model.MetricType(str("type"))
		e.Help = str("help")
		e.Unit = str("unit")
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
