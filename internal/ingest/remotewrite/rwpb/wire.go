package rwpb

import (
	"encoding/binary"
	"math"
	"strconv"
	"unsafe"
)

// Wire types (https://protobuf.dev/programming-guides/encoding/#structure).
const (
	wireVarint     = 0
	wireFixed64    = 1
	wireBytes      = 2
	wireStartGroup = 3
	wireEndGroup   = 4
	wireFixed32    = 5
)

// maxFieldNumber is the largest field number protobuf allows; no conforming
// encoder writes a larger one.
const maxFieldNumber = 1<<29 - 1

// Negative offsets varint returns instead of the offset after the varint.
const (
	varintTruncated = -1
	varintTooLong   = -2
	varintOverflow  = -3
)

// varint decodes the unsigned varint at b[i:] and returns it with the
// offset just after it, or a negative offset (varintTruncated, ...) if it
// is malformed. It is small enough to inline, which matters: it decodes
// every tag and length.
func varint(b []byte, i int) (uint64, int) {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if uint(i) >= uint(len(b)) {
			return 0, varintTruncated
		}
		c := b[i]
		i++
		if shift == 63 && c > 1 {
			// The tenth byte holds bit 63 only.
			if c >= 0x80 {
				return 0, varintTooLong
			}
			return 0, varintOverflow
		}
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, i
		}
	}
}

// fixed64 decodes the little-endian 64-bit value at b[i:].
func fixed64(b []byte, i int, field string) (uint64, int, error) {
	if i < 0 || len(b)-i < 8 {
		return 0, i, fail(kindTruncated, i, field, "input ends inside a 64-bit value")
	}
	return binary.LittleEndian.Uint64(b[i:]), i + 8, nil
}

// double decodes the double at b[i:].
func double(b []byte, i int, field string) (float64, int, error) {
	v, i, err := fixed64(b, i, field)
	return math.Float64frombits(v), i, err
}

// uvarint decodes the varint at b[i:] and returns an error if it is
// malformed.
func uvarint(b []byte, i int, field string) (uint64, int, error) {
	v, j := varint(b, i)
	if j < 0 {
		return 0, i, varintErr(j, i, field)
	}
	return v, j, nil
}

// zigzag32 and zigzag64 decode sint32 and sint64 values. A sint32 is the
// low 32 bits of its varint, as protobuf's decoders take it.
func zigzag32(v uint64) int32 { return int32(uint32(v)>>1) ^ -int32(uint32(v)&1) }
func zigzag64(v uint64) int64 { return int64(v>>1) ^ -int64(v&1) }

// length decodes the length prefix of a length-delimited field at b[i:]
// and returns the offsets of the field's first byte and of the byte after
// its last, which is within b.
func length(b []byte, i int, field string) (start, end int, err error) {
	// Most lengths are one byte; test for that before the loop.
	if uint(i) < uint(len(b)) && b[i] < 0x80 {
		if end = i + 1 + int(b[i]); end <= len(b) {
			return i + 1, end, nil
		}
	}
	n, j := varint(b, i)
	if j < 0 {
		return 0, 0, varintErr(j, i, field)
	}
	if n > uint64(len(b)-j) {
		return 0, 0, lengthErr(n, len(b)-j, i, field)
	}
	return j, j + int(n), nil
}

func lengthErr(n uint64, left, off int, field string) error {
	return fail(kindLength, off, field,
		"length "+strconv.FormatUint(n, 10)+" runs past the end of the message ("+strconv.Itoa(left)+" bytes left)")
}

// str decodes the string field at b[i:] without copying: the string
// aliases b.
func str(b []byte, i int, field string) (string, int, error) {
	start, end, err := length(b, i, field)
	if err != nil {
		return "", i, err
	}
	return alias(b, start, end), end, nil
}

// alias returns b[start:end] as a string that shares b's memory.
func alias(b []byte, start, end int) string {
	if start >= end {
		return ""
	}
	return unsafe.String(&b[start], end-start)
}

// tagErr returns the error for the malformed tag at b[i:], given the
// negative offset varint returned.
func tagErr(code, i int) error {
	return varintErr(code, i, "")
}

// wrongWireType returns the error for a known field with an impossible
// wire type. tag is the field's tag and i the offset of the tag.
func wrongWireType(tag uint64, i int, field string) error {
	return fail(kindWireType, i, field, "wire type "+strconv.Itoa(int(tag&7))+" for field "+strconv.FormatUint(tag>>3, 10))
}

// skip skips the unknown field whose tag is at b[i:] and whose value starts
// at b[j:], and returns the offset after it.
//
// Groups (wire types 3 and 4) are rejected: proto3 messages cannot have
// them and no remote-write sender writes them.
func skip(b []byte, i, j int, tag uint64) (int, error) {
	num := tag >> 3
	switch {
	case num == 0:
		return 0, fail(kindFieldZero, i, "", "field number 0")
	case num > maxFieldNumber:
		return 0, fail(kindFieldRange, i, "", "field number "+strconv.FormatUint(num, 10)+" above 2^29-1")
	}
	switch tag & 7 {
	case wireVarint:
		_, k := varint(b, j)
		if k < 0 {
			return 0, varintErr(k, j, unknownField(num))
		}
		return k, nil
	case wireFixed64:
		if len(b)-j < 8 {
			return 0, fail(kindTruncated, j, unknownField(num), "input ends inside a 64-bit value")
		}
		return j + 8, nil
	case wireBytes:
		_, end, err := length(b, j, "")
		if err != nil {
			return 0, within(err, unknownField(num), -1)
		}
		return end, nil
	case wireFixed32:
		if len(b)-j < 4 {
			return 0, fail(kindTruncated, j, unknownField(num), "input ends inside a 32-bit value")
		}
		return j + 4, nil
	case wireStartGroup, wireEndGroup:
		return 0, fail(kindGroup, i, unknownField(num), "group wire type "+strconv.Itoa(int(tag&7))+" (groups are not supported)")
	default:
		return 0, fail(kindBadWireType, i, unknownField(num), "invalid wire type "+strconv.Itoa(int(tag&7)))
	}
}

func unknownField(num uint64) string {
	return "field " + strconv.FormatUint(num, 10)
}
