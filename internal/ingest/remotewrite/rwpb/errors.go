package rwpb

import (
	"errors"
	"fmt"
	"strconv"
)

// ErrInvalid is wrapped by every error Unmarshal returns: the bytes are not
// a well-formed protobuf encoding of the request message. A receiver
// answers it with 400; a retry cannot help.
var ErrInvalid = errors.New("invalid remote-write protobuf")

// DecodeError says where and why decoding a request failed.
type DecodeError struct {
	// Request is "remote-write 1.0 request" or "remote-write 2.0 request".
	Request string
	// Offset is the byte offset, in the buffer passed to Unmarshal, of the
	// tag, length or value at which decoding stopped.
	Offset int
	// Field is the path of the field being decoded, outermost first, with
	// the index of each repeated message, e.g.
	// "timeseries[3].histograms[0].positive_deltas". It is empty when the
	// damage is in a tag of the request message itself.
	Field string
	// Reason says what was wrong.
	Reason string

	kind errKind
	path []string // innermost first while the error unwinds
}

func (e *DecodeError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("rwpb: invalid %s at byte %d: %s", e.Request, e.Offset, e.Reason)
	}
	return fmt.Sprintf("rwpb: invalid %s at byte %d (%s): %s", e.Request, e.Offset, e.Field, e.Reason)
}

// Unwrap returns ErrInvalid.
func (e *DecodeError) Unwrap() error { return ErrInvalid }

// errKind classifies a DecodeError. The tests use it to tell the few
// inputs gogo's generated decoder accepts and this package rejects (see
// the package documentation) from real disagreements.
type errKind uint8

const (
	kindTruncated      errKind = iota + 1 // input ends inside a tag, varint or fixed-size value
	kindVarintTooLong                     // a varint longer than 10 bytes
	kindVarintOverflow                    // a 10-byte varint whose value needs more than 64 bits
	kindLength                            // a length that runs past the end of the enclosing message
	kindWireType                          // a known field with a wire type its type cannot have
	kindGroup                             // wire type 3 or 4 (deprecated groups)
	kindBadWireType                       // wire type 6 or 7, which do not exist
	kindFieldZero                         // field number 0
	kindFieldRange                        // field number above 2^29-1
	kindPacked                            // a packed field whose bytes are not a whole number of elements
)

// fail returns the error for a problem of the given kind at offset off while
// decoding field (a proto field name, or "" for a tag).
func fail(kind errKind, off int, field, reason string) error {
	e := &DecodeError{Offset: off, Reason: reason, kind: kind}
	if field != "" {
		e.path = append(e.path, field)
	}
	return e
}

// varintErr turns the negative offset varint returns into an error.
func varintErr(code, off int, field string) error {
	switch code {
	case varintTooLong:
		return fail(kindVarintTooLong, off, field, "varint longer than 10 bytes")
	case varintOverflow:
		return fail(kindVarintOverflow, off, field, "varint overflows 64 bits")
	default:
		return fail(kindTruncated, off, field, "input ends inside a varint")
	}
}

// within records that err happened inside element idx of the repeated
// message field, or inside the singular message field if idx < 0.
func within(err error, field string, idx int) error {
	e, ok := err.(*DecodeError)
	if !ok {
		return err
	}
	if idx >= 0 {
		field += "[" + strconv.Itoa(idx) + "]"
	}
	e.path = append(e.path, field)
	return e
}

// finish completes err as returned from a request's Unmarshal.
func finish(err error, request string) error {
	e, ok := err.(*DecodeError)
	if !ok {
		return err
	}
	e.Request = request
	n := 0
	for _, p := range e.path {
		n += len(p) + 1
	}
	b := make([]byte, 0, n)
	for i := len(e.path) - 1; i >= 0; i-- {
		b = append(b, e.path[i]...)
		if i > 0 {
			b = append(b, '.')
		}
	}
	e.Field = string(b)
	e.path = nil
	return e
}
