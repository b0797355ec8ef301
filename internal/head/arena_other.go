//go:build !unix

package head

// mapBlock returns an empty slice of capacity size on the Go heap: on
// systems without mmap the arena's blocks are ordinary allocations.
func mapBlock(size int) []byte { return make([]byte, 0, size) }

// unmapBlock leaves the block to the collector.
func unmapBlock([]byte) {}
