//go:build !unix

package head

import "errors"

// mapBlock returns an empty slice of capacity size on the Go heap: on
// systems without mmap the arena's blocks are ordinary allocations.
func mapBlock(size int) []byte { return make([]byte, 0, size) }

// unmapBlock leaves the block to the collector.
func unmapBlock([]byte) {}

// fileBlocksSupported: without mmap, chunks stay in memory.
const fileBlocksSupported = false

type blockFile struct{}

func createBlockFile(string, int) (*blockFile, []byte, error) {
	return nil, nil, errors.ErrUnsupported
}

func (*blockFile) write([]byte, int) error { return errors.ErrUnsupported }

func (*blockFile) read([]byte, int) error { return errors.ErrUnsupported }

func (*blockFile) readUpTo([]byte, int) error { return errors.ErrUnsupported }

func unmapFileBlock(*blockFile, []byte) {}

func dropPages([]byte) {}
