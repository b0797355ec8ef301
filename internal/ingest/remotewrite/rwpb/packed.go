package rwpb

import (
	"encoding/binary"
	"math"
	"slices"
)

// Repeated scalar fields come packed (one length-delimited field holding
// the values back to back) or unpacked (one field per value); proto3
// encoders write packed, but a decoder must take both, and a field may
// come in several pieces of either kind, which concatenate. The functions
// here decode one packed piece; the message decoders handle unpacked
// values inline.
//
// A packed piece must hold whole values: a varint that runs past its end,
// or a length of doubles that is not a multiple of 8, is an error.

// packedUint32s appends the uint32 varints of the packed field whose
// length prefix is at b[i:] and returns the offset after the field. As
// protobuf's decoders do, a uint32 is the low 32 bits of its varint.
func packedUint32s(dst []uint32, b []byte, i int, field string) ([]uint32, int, error) {
	start, end, err := length(b, i, field)
	if err != nil {
		return dst, i, err
	}
	p := b[:end]
	for j := start; j < len(p); {
		// Refs into a symbol table of up to 16384 symbols take one or two
		// bytes; decode those without the general loop.
		if c := p[j]; c < 0x80 {
			dst = append(dst, uint32(c))
			j++
			continue
		} else if j+1 < len(p) && p[j+1] < 0x80 {
			dst = append(dst, uint32(c&0x7f)|uint32(p[j+1])<<7)
			j += 2
			continue
		}
		v, k := varint(p, j)
		if k < 0 {
			return dst, i, packedVarintErr(k, j, field)
		}
		dst = append(dst, uint32(v))
		j = k
	}
	return dst, end, nil
}

// packedSint64s is packedUint32s for sint64 (zig-zag) values.
func packedSint64s(dst []int64, b []byte, i int, field string) ([]int64, int, error) {
	start, end, err := length(b, i, field)
	if err != nil {
		return dst, i, err
	}
	p := b[:end]
	for j := start; j < end; {
		v, k := varint(p, j)
		if k < 0 {
			return dst, i, packedVarintErr(k, j, field)
		}
		dst = append(dst, zigzag64(v))
		j = k
	}
	return dst, end, nil
}

func packedVarintErr(code, off int, field string) error {
	if code == varintTruncated {
		return fail(kindPacked, off, field, "varint runs past the end of the packed field")
	}
	return varintErr(code, off, field)
}

// packedDoubles appends the doubles of the packed field whose length
// prefix is at b[i:] and returns the offset after the field.
func packedDoubles(dst []float64, b []byte, i int, field string) ([]float64, int, error) {
	start, end, err := length(b, i, field)
	if err != nil {
		return dst, i, err
	}
	if (end-start)%8 != 0 {
		return dst, i, fail(kindPacked, i, field, "packed doubles are not a multiple of 8 bytes long")
	}
	dst = slices.Grow(dst, (end-start)/8)
	for p := b[start:end]; len(p) >= 8; p = p[8:] {
		dst = append(dst, math.Float64frombits(binary.LittleEndian.Uint64(p)))
	}
	return dst, end, nil
}
