//go:build unix

package head

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

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

// fileBlocksSupported: chunks can be kept in mapped files.
const fileBlocksSupported = true

// blockFile is the file of a file block, open for writing.
type blockFile struct {
	fd   int
	path string
}

// createBlockFile creates the file of a block of size bytes at path and
// maps it read-only, returning the mapping as an empty slice of capacity
// size. The file grows as chunks are written; the mapping is made at its
// full size at once, and only bytes already written are ever read, so no
// read reaches past the file's end.
func createBlockFile(path string, size int) (*blockFile, []byte, error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o666)
	if err != nil {
		return nil, nil, &os.PathError{Op: "create", Path: path, Err: err}
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		_ = unix.Close(fd)
		_ = unix.Unlink(path)
		return nil, nil, &os.PathError{Op: "mmap", Path: path, Err: err}
	}
	return &blockFile{fd: fd, path: path}, mem[:0], nil
}

// write writes b at offset off of the file.
func (f *blockFile) write(b []byte, off int) error {
	return f.full("write", unix.Pwrite, b, off)
}

// read reads len(b) bytes at offset off of the file into b.
func (f *blockFile) read(b []byte, off int) error {
	return f.full("read", unix.Pread, b, off)
}

// readUpTo reads the bytes at offset off of the file into b, those past
// the file's end, which nothing wrote yet, as zeros.
func (f *blockFile) readUpTo(b []byte, off int) error {
	for len(b) > 0 {
		n, err := unix.Pread(f.fd, b, int64(off))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "read", Path: f.path, Err: err}
		}
		if n == 0 {
			clear(b)
			return nil
		}
		b, off = b[n:], off+n
	}
	return nil
}

// full calls io (pread or pwrite) until all of b is done, retrying
// after interruptions.
func (f *blockFile) full(op string, io func(fd int, b []byte, off int64) (int, error), b []byte, off int) error {
	for len(b) > 0 {
		n, err := io(f.fd, b, int64(off))
		if err == unix.EINTR {
			continue
		}
		if err == nil && n == 0 {
			err = errShortIO
		}
		if err != nil {
			return &os.PathError{Op: op, Path: f.path, Err: err}
		}
		b, off = b[n:], off+n
	}
	return nil
}

// errShortIO is a read past the end of a block file, or a write that
// wrote nothing.
var errShortIO = errors.New("no bytes transferred")

// unmapFileBlock unmaps mem, closes the file and deletes it. Nothing in
// it is needed: the WAL holds what the head holds.
func unmapFileBlock(f *blockFile, mem []byte) {
	_ = unix.Munmap(mem[:cap(mem)])
	_ = unix.Close(f.fd)
	_ = unix.Unlink(f.path)
}

// dropPages removes the pages of a file mapping from the process' memory;
// the page cache keeps them, and the next read maps them again.
func dropPages(mem []byte) {
	if len(mem) > 0 {
		_ = unix.Madvise(mem[:cap(mem)], unix.MADV_DONTNEED)
	}
}
