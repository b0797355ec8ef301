package wal

import (
	"io"
	"io/fs"
	"os"
)

// FS is the part of the file system the WAL uses. Options.FS and
// ReplayOptions.FS take one; nil means the operating system's (OSFS).
// Tests put a fault-injecting FS (package walfault) in its place.
//
// Names are paths as package os takes them. Implementations must be safe
// for concurrent use, and so must the Files they return, as far as
// *os.File is: the WAL may fsync a file while it writes to it.
type FS interface {
	// OpenFile opens a file as os.OpenFile does. The WAL opens segments
	// with O_RDONLY to read them, O_WRONLY to cut them back,
	// O_WRONLY|O_CREATE|O_EXCL to create them, and directories with
	// O_RDONLY to fsync them.
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	// Remove removes a file as os.Remove does.
	Remove(name string) error
	// ReadDir lists a directory as os.ReadDir does, sorted by name.
	ReadDir(name string) ([]fs.DirEntry, error)
	// MkdirAll creates a directory and its parents as os.MkdirAll does.
	MkdirAll(name string, perm fs.FileMode) error
}

// File is an open file of an FS. *os.File implements it.
type File interface {
	// Read reads from the file offset, for reading a segment from start
	// to end.
	io.Reader
	// WriteAt writes at an offset (pwrite), which never depends on where
	// an earlier failed write left the file offset.
	io.WriterAt
	io.Closer
	Truncate(size int64) error
	Sync() error
	Stat() (fs.FileInfo, error)
}

// OSFS is the operating system's file system.
type OSFS struct{}

func (OSFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		// Not f: a nil *os.File in a File interface is not a nil File.
		return nil, err
	}
	return f, nil
}

func (OSFS) Remove(name string) error                     { return os.Remove(name) }
func (OSFS) ReadDir(name string) ([]fs.DirEntry, error)   { return os.ReadDir(name) }
func (OSFS) MkdirAll(name string, perm fs.FileMode) error { return os.MkdirAll(name, perm) }

// orOS returns fsys, or OSFS if it is nil.
func orOS(fsys FS) FS {
	if fsys == nil {
		return OSFS{}
	}
	return fsys
}

// syncDir fsyncs directory dir, making the creation or removal of the
// files in it durable.
func syncDir(fsys FS, dir string) error {
	d, err := fsys.OpenFile(dir, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
