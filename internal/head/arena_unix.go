//go:build unix

package head

import "golang.org/x/sys/unix"

// mapBlock returns size bytes of zeroed anonymous memory outside the Go
// heap, as an empty slice of that capacity, or heap memory if the system
// refuses. The kernel backs pages only once they are written, so a
// block's unused tail costs address space, not memory.
func mapBlock(size int) []byte {
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return make([]byte, 0, size)
	}
	return b[:0]
}

// unmapBlock returns a block of mapBlock to the system. A block that came
// from the Go heap (mapBlock's fallback) is left to the collector: Munmap
// refuses memory it did not map.
func unmapBlock(b []byte) {
	_ = unix.Munmap(b[:cap(b)])
}
