package record

import (
	"encoding/binary"
	"fmt"
)

// decbuf reads the fields of one record. The first failure is kept in err
// and every later read returns a zero value, so a decoder reads a whole
// record and checks err once at the end. Reads never panic, whatever the
// input.
type decbuf struct {
	b   []byte // the unread rest of the record
	off int    // offset of b[0] in the record, for error messages
	err error
}

func (d *decbuf) fail(what, why string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s at offset %d: %s", ErrCorrupt, what, d.off, why)
	}
	d.b = nil
}

func (d *decbuf) advance(n int) {
	d.b = d.b[n:]
	d.off += n
}

func (d *decbuf) byte(what string) byte {
	if len(d.b) < 1 {
		d.fail(what, "truncated")
		return 0
	}
	c := d.b[0]
	d.advance(1)
	return c
}

func (d *decbuf) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	switch {
	case n == 0:
		d.fail(what, "truncated varint")
		return 0
	case n < 0:
		d.fail(what, "varint overflows 64 bits")
		return 0
	}
	d.advance(n)
	return v
}

func (d *decbuf) varint(what string) int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	switch {
	case n == 0:
		d.fail(what, "truncated varint")
		return 0
	case n < 0:
		d.fail(what, "varint overflows 64 bits")
		return 0
	}
	d.advance(n)
	return v
}

func (d *decbuf) uint64le(what string) uint64 {
	if len(d.b) < 8 {
		d.fail(what, "truncated")
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b)
	d.advance(8)
	return v
}

// count reads an element count and checks that the rest of the record can
// hold that many elements of at least minSize bytes each, so that a corrupt
// count can neither make the caller allocate a huge slice nor loop long.
func (d *decbuf) count(what string, minSize int) int {
	n := d.uvarint(what)
	if d.err != nil {
		return 0
	}
	if n > uint64(len(d.b)/minSize) {
		d.fail(what, fmt.Sprintf("count %d does not fit in the %d bytes left", n, len(d.b)))
		return 0
	}
	return int(n)
}

// bytes returns the next n bytes. The slice aliases the record; its
// capacity is its length, so appending to it cannot overwrite what follows.
func (d *decbuf) bytes(what string, n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail(what, fmt.Sprintf("length %d exceeds the %d bytes left", n, len(d.b)))
		return nil
	}
	b := d.b[:n:n]
	d.advance(int(n))
	return b
}

// header checks the type byte.
func (d *decbuf) header(want Type) {
	if t := Type(d.byte("type")); d.err == nil && t != want {
		d.err = fmt.Errorf("%w: record type is %v, want %v", ErrCorrupt, t, want)
		d.b = nil
	}
}

// end reports trailing bytes as corruption and returns the sticky error.
func (d *decbuf) end() error {
	if d.err == nil && len(d.b) > 0 {
		d.fail("end of record", fmt.Sprintf("%d trailing bytes", len(d.b)))
	}
	return d.err
}
