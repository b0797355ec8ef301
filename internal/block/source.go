package block

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/strata-db/strata/internal/vfs"
	"golang.org/x/sys/unix"
)

// Source is one of a block's files to read from: a local file mapped into
// memory, or an object in remote storage. Readers ask for byte ranges; a
// Source that also has Bytes (a mapped file) lets them slice instead of
// copy. It is safe for concurrent use.
type Source interface {
	io.ReaderAt
	Size() int64
	io.Closer
}

// Files is where a block's files are read from: a local directory, or,
// for blocks in object storage, a bucket prefix. Names are slash-separated
// and relative to the block: "meta.json", "index", "chunks/000001".
type Files interface {
	// Open opens the file name.
	Open(name string) (Source, error)
	// List returns the names of the files in directory dir, sorted.
	List(dir string) ([]string, error)
}

// LocalFiles reads a block from the local directory it names, mapping
// its files into memory: reads are slices of the mapping, without copies.
// The pages a query touches count in the process' resident memory until
// the block is closed (the kernel may drop them under pressure).
type LocalFiles string

func (d LocalFiles) Open(name string) (Source, error) {
	return openMapped(filepath.Join(string(d), filepath.FromSlash(name)))
}

func (d LocalFiles) List(dir string) ([]string, error) {
	return FSFiles{Dir: string(d)}.List(dir)
}

// mappedFile is a local file mapped read-only into memory. Its bytes stay
// valid until Close.
type mappedFile struct {
	b []byte
}

// openMapped maps the file at path. An empty file maps to no memory.
func openMapped(path string) (*mappedFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	if size == 0 {
		return &mappedFile{}, nil
	}
	if int64(int(size)) != size {
		return nil, fmt.Errorf("%s: %d bytes is too large to map", path, size)
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", path, err)
	}
	return &mappedFile{b: b}, nil
}

// MapFile maps the local file at path read-only into memory and returns
// its bytes, valid until close is called; an empty file maps to none.
func MapFile(path string) (b []byte, close func() error, err error) {
	m, err := openMapped(path)
	if err != nil {
		return nil, nil, err
	}
	return m.b, m.Close, nil
}

func (m *mappedFile) Bytes() []byte { return m.b }
func (m *mappedFile) Size() int64   { return int64(len(m.b)) }

func (m *mappedFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > int64(len(m.b)) {
		return 0, fmt.Errorf("read at %d of %d bytes", off, len(m.b))
	}
	n := copy(p, m.b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Close unmaps the file. No slice of Bytes may be read after it.
func (m *mappedFile) Close() error {
	if m.b == nil {
		return nil
	}
	err := unix.Munmap(m.b)
	m.b = nil
	return err
}

// FSFiles reads a block from directory Dir of file system FS with
// pread(2) (ReadAt), copying what it reads. On the operating system's
// file system it suits reading a whole block once, as a merge does, where
// mapping would make every page of the block count in the process'
// resident memory although the pages stay in the kernel's page cache
// anyway; on any other, it is how blocks are read.
type FSFiles struct {
	FS  vfs.FS
	Dir string
}

func (d FSFiles) Open(name string) (Source, error) {
	fsys := vfs.Or(d.FS)
	f, err := fsys.OpenFile(filepath.Join(d.Dir, filepath.FromSlash(name)), os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &fileSource{File: f, size: st.Size()}, nil
}

func (d FSFiles) List(dir string) ([]string, error) {
	entries, err := vfs.Or(d.FS).ReadDir(filepath.Join(d.Dir, filepath.FromSlash(dir)))
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names, nil
}

// fileSource is an open file read with ReadAt.
type fileSource struct {
	vfs.File
	size int64
}

func (f *fileSource) Size() int64 { return f.size }
