// Package vfs is the file system seam of the store: the WAL, checkpoints,
// block writing, compaction and retention do all their file operations
// through an FS, so that tests can put one in its place that fails on
// demand (package faultfs) or that forgets what was not fsynced when it
// "crashes" (package crashfs), and prove what survives rather than argue
// it.
package vfs

import (
	"io"
	"io/fs"
	"os"
)

// FS is the part of the file system the store uses. Names are paths as
// package os takes them. Implementations must be safe for concurrent use,
// and so must the Files they return, as far as *os.File is: the WAL may
// fsync a file while it writes to it.
type FS interface {
	// OpenFile opens a file as os.OpenFile does; directories are opened
	// with O_RDONLY, to fsync them.
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	// Remove removes a file or an empty directory, as os.Remove does.
	Remove(name string) error
	// RemoveAll removes a path and what it holds, as os.RemoveAll does.
	RemoveAll(name string) error
	// Rename renames a file or directory, as os.Rename does: atomically,
	// and replacing a file (not a non-empty directory) at newname.
	Rename(oldname, newname string) error
	// ReadDir lists a directory as os.ReadDir does, sorted by name.
	ReadDir(name string) ([]fs.DirEntry, error)
	// MkdirAll creates a directory and its parents as os.MkdirAll does.
	MkdirAll(name string, perm fs.FileMode) error
	// Stat describes a file as os.Stat does.
	Stat(name string) (fs.FileInfo, error)
}

// File is an open file of an FS. *os.File implements it.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	// WriteAt writes at an offset (pwrite), which never depends on where
	// an earlier failed write left the file offset.
	io.WriterAt
	io.Closer
	Truncate(size int64) error
	Sync() error
	Stat() (fs.FileInfo, error)
}

// OS is the operating system's file system.
type OS struct{}

func (OS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		// Not f: a nil *os.File in a File interface is not a nil File.
		return nil, err
	}
	return f, nil
}

func (OS) Remove(name string) error                     { return os.Remove(name) }
func (OS) RemoveAll(name string) error                  { return os.RemoveAll(name) }
func (OS) Rename(oldname, newname string) error         { return os.Rename(oldname, newname) }
func (OS) ReadDir(name string) ([]fs.DirEntry, error)   { return os.ReadDir(name) }
func (OS) MkdirAll(name string, perm fs.FileMode) error { return os.MkdirAll(name, perm) }
func (OS) Stat(name string) (fs.FileInfo, error)        { return os.Stat(name) }

// Or returns fsys, or OS if it is nil.
func Or(fsys FS) FS {
	if fsys == nil {
		return OS{}
	}
	return fsys
}

// SyncDir fsyncs directory dir, making the creation, renaming or removal
// of the entries in it durable.
func SyncDir(fsys FS, dir string) error {
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
