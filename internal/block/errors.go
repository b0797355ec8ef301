package block

import (
	"errors"
	"fmt"
)

// ErrCorrupt is wrapped by every error for a block whose files are not
// what the format says.
var ErrCorrupt = errors.New("corrupt block")

// CorruptionError says which file of a block is damaged and how.
type CorruptionError struct {
	Path   string // relative to the block, as Files names it
	Reason string
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("corrupt block file %s: %s", e.Path, e.Reason)
}

// Unwrap returns ErrCorrupt.
func (e *CorruptionError) Unwrap() error { return ErrCorrupt }
