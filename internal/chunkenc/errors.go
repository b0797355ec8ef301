package chunkenc

import (
	"errors"
	"fmt"
)

// ErrCorruptChunk is wrapped by every error an iterator returns for encoded
// bytes that are malformed. Callers branch on it with errors.Is.
var ErrCorruptChunk = errors.New("corrupt chunk")

// CorruptChunkError says where and why decoding a chunk failed.
type CorruptChunkError struct {
	// Encoding is the format of the chunk.
	Encoding Encoding
	// Offset is the byte offset in the chunk, counted from its first header
	// byte, of the bit at which decoding stopped.
	Offset int
	// Sample is the index of the sample that was being decoded, or the
	// header's sample count if the damage is after the last sample.
	Sample int
	// Reason says what was wrong.
	Reason string
}

func (e *CorruptChunkError) Error() string {
	return fmt.Sprintf("chunkenc: corrupt %s chunk at byte %d, sample %d: %s", e.Encoding, e.Offset, e.Sample, e.Reason)
}

// Unwrap returns ErrCorruptChunk.
func (e *CorruptChunkError) Unwrap() error { return ErrCorruptChunk }
