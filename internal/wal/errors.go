package wal

import (
	"errors"
	"fmt"
)

// Errors callers branch on.
var (
	// ErrClosed is returned by every method of a WAL that has been closed.
	ErrClosed = errors.New("WAL is closed")
	// ErrEmptyRecord: Log was given a record of length 0. The format uses
	// a zero length to recognise zero-filled tails, so no record is empty.
	ErrEmptyRecord = errors.New("empty WAL record")
	// ErrRecordTooLarge: Log was given a record whose length does not fit
	// the 32-bit length field of a frame.
	ErrRecordTooLarge = errors.New("WAL record too large")
)

// Reasons a record is bad, and errMissingSegment. They are the Err of a
// CorruptionError.
var (
	errTornHeader     = errors.New("segment ends inside a record header")
	errZeroLength     = errors.New("zero length (zero-filled tail)")
	errTornPayload    = errors.New("record extends past the end of the segment")
	errChecksum       = errors.New("checksum mismatch")
	errMissingSegment = errors.New("segment file missing")
)

// CorruptionError says where the log is damaged and how. Replay returns
// one, as a *CorruptionError, for a segment missing from the sequence
// (Offset is 0), and lists one in ReplayStats.Repairs for each bad record
// it cut off.
type CorruptionError struct {
	Segment int   // segment number
	Offset  int64 // byte offset of the bad record's frame in the segment
	Err     error // what is wrong with it
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("corrupt WAL record in segment %d at offset %d: %v", e.Segment, e.Offset, e.Err)
}

func (e *CorruptionError) Unwrap() error { return e.Err }
