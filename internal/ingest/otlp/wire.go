package otlp

import (
	"encoding/binary"
	"errors"
)

// Protocol buffers wire format, as much of it as the fast path reads:
// fields are walked in place, and the bytes of strings and embedded
// messages alias the request body.

const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

var errWire = errors.New("malformed protobuf")

// wireField is one field of a message: its number and wire type, and its
// value: v for a varint or fixed-size one, b for a length-delimited one.
type wireField struct {
	num int
	typ int
	v   uint64
	b   []byte
}

// nextField reads the field at the start of msg and returns it and the
// rest of msg.
func nextField(msg []byte) (wireField, []byte, error) {
	num, typ, v, lo, next := field(msg, 0)
	if next < 0 {
		return wireField{}, nil, errWire
	}
	f := wireField{num: num, typ: typ, v: v}
	if typ == wireBytes {
		f.b = msg[lo:next]
	}
	return f, msg[next:], nil
}

// field reads the field at msg[i:]: its number and wire type, v for a
// varint or fixed-size value, msg[lo:next] the bytes of a
// length-delimited one. next is where the field after it starts, or -1
// if msg is malformed at i. It returns integers only, which the
// register ABI passes in registers: a walk over a point's dozen fields
// is mostly this function.
func field(msg []byte, i int) (num, typ int, v uint64, lo, next int) {
	if i >= len(msg) {
		return 0, 0, 0, 0, -1
	}
	key, n := uint64(msg[i]), 1
	if key >= 0x80 {
		if key, n = binary.Uvarint(msg[i:]); n <= 0 {
			return 0, 0, 0, 0, -1
		}
	}
	if key>>3 == 0 || key>>3 > 1<<29-1 {
		return 0, 0, 0, 0, -1
	}
	num, typ, i = int(key>>3), int(key&7), i+n
	switch typ {
	case wireVarint:
		if v, n = uvarint(msg[i:]); n <= 0 {
			return 0, 0, 0, 0, -1
		}
		return num, typ, v, i, i + n
	case wireFixed64:
		if len(msg)-i < 8 {
			return 0, 0, 0, 0, -1
		}
		return num, typ, binary.LittleEndian.Uint64(msg[i:]), i, i + 8
	case wireFixed32:
		if len(msg)-i < 4 {
			return 0, 0, 0, 0, -1
		}
		return num, typ, uint64(binary.LittleEndian.Uint32(msg[i:])), i, i + 4
	case wireBytes:
		l, n := uvarint(msg[i:])
		if n <= 0 || l > uint64(len(msg)-i-n) {
			return 0, 0, 0, 0, -1
		}
		return num, typ, 0, i + n, i + n + int(l)
	}
	return 0, 0, 0, 0, -1
}

// uvarint decodes a varint from b, returning the number of bytes read, or
// 0 or less if b does not start with one.
func uvarint(b []byte) (uint64, int) {
	if len(b) > 0 && b[0] < 0x80 {
		return uint64(b[0]), 1
	}
	return binary.Uvarint(b)
}

// appendBytesField appends field num holding b, length-delimited.
func appendBytesField(dst []byte, num int, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(num)<<3|wireBytes)
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

// appendVarintField appends field num holding v as a varint.
func appendVarintField(dst []byte, num int, v uint64) []byte {
	dst = binary.AppendUvarint(dst, uint64(num)<<3|wireVarint)
	return binary.AppendUvarint(dst, v)
}

// eachField calls fn for each field of msg, stopping at the first error.
func eachField(msg []byte, fn func(wireField) error) error {
	for len(msg) > 0 {
		fld, rest, err := nextField(msg)
		if err != nil {
			return err
		}
		msg = rest
		if err := fn(fld); err != nil {
			return err
		}
	}
	return nil
}

// eachBytes calls fn with the bytes of each field num of msg, which must
// be length-delimited, stopping at the first error.
func eachBytes(msg []byte, num int, fn func([]byte) error) error {
	return eachField(msg, func(fld wireField) error {
		switch {
		case fld.num != num:
			return nil
		case fld.typ != wireBytes:
			return errWire
		}
		return fn(fld.b)
	})
}
