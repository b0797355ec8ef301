package record

import (
	"encoding/binary"
	"math"

	"github.com/prometheus/prometheus/model/labels"
)

// EncodeSeries appends a Series record holding series to dst and returns
// the extended slice. Labels are written in the order Labels.Range yields
// them; the decoder neither sorts nor validates them, so the caller must log
// only label sets it has validated.
func EncodeSeries(dst []byte, series []RefSeries) []byte {
	dst = append(dst, byte(Series))
	dst = binary.AppendUvarint(dst, uint64(len(series)))
	for i := range series {
		s := &series[i]
		dst = binary.AppendUvarint(dst, uint64(s.Ref))
		dst = appendLabels(dst, s.Labels)
	}
	return dst
}

// appendLabels appends a label count and the labels' names and values,
// each as a uvarint length and its bytes.
func appendLabels(dst []byte, lset labels.Labels) []byte {
	dst = binary.AppendUvarint(dst, uint64(lset.Len()))
	lset.Range(func(l labels.Label) {
		dst = binary.AppendUvarint(dst, uint64(len(l.Name)))
		dst = append(dst, l.Name...)
		dst = binary.AppendUvarint(dst, uint64(len(l.Value)))
		dst = append(dst, l.Value...)
	})
	return dst
}

// EncodeSamples appends a Samples record holding samples to dst and returns
// the extended slice.
//
// The first sample's ref and timestamp are the record's base; every sample,
// the first included, stores its ref and timestamp as signed deltas from
// the base, and its value as the 8 bytes of its IEEE 754 bits, so values
// come back bit for bit (NaN payloads included). Samples of one commit tend
// to have nearby refs and equal timestamps, so deltas are mostly 1-2 bytes.
func EncodeSamples(dst []byte, samples []RefSample) []byte {
	dst = append(dst, byte(Samples))
	dst = binary.AppendUvarint(dst, uint64(len(samples)))
	if len(samples) == 0 {
		return dst
	}
	baseRef, baseT := uint64(samples[0].Ref), samples[0].T
	dst = binary.AppendUvarint(dst, baseRef)
	dst = binary.AppendVarint(dst, baseT)
	for i := range samples {
		s := &samples[i]
		// Both differences wrap on overflow; the decoder adds them back
		// with the same wrapping, so every uint64/int64 round-trips.
		dst = binary.AppendVarint(dst, int64(uint64(s.Ref)-baseRef))
		dst = binary.AppendVarint(dst, s.T-baseT)
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(s.V))
	}
	return dst
}
