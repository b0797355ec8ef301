// Package faultfs is a file system (a vfs.FS) that fails on demand, for
// tests of the WAL, checkpoints, block writing and compaction: writes can
// fail with ENOSPC, fsyncs, truncations and renames with EIO, and a test
// can count fsyncs and hold them up.
//
//	fsys := faultfs.New(nil)
//	w, err := wal.Open(dir, wal.Options{FS: fsys})
//	...
//	fsys.FailWrites(syscall.ENOSPC) // the disk is full
//	err = w.Log(rec)                // errors.Is(err, syscall.ENOSPC)
//	fsys.Heal()                     // space is back
package faultfs

import (
	"io/fs"
	"os"
	"sync"
	"sync/atomic"

	"github.com/strata-db/strata/internal/vfs"
)

// FS wraps another vfs.FS and fails the operations it is told to fail.
// Failures apply to every file of the FS, open or opened later, until Heal.
// Its methods are safe for concurrent use, also with the file operations.
type FS struct {
	base  vfs.FS // immutable
	syncs atomic.Int64

	mu        sync.Mutex // guards the fields below
	writeErr  error
	partial   bool // a failing write writes the first half of its bytes
	syncErr   error
	truncErr  error
	renameErr error
	syncHook  func(name string)
}

// New returns an FS that passes everything to base (nil means the
// operating system's) until told to fail.
func New(base vfs.FS) *FS {
	if base == nil {
		base = vfs.OS{}
	}
	return &FS{base: base}
}

// FailWrites makes every later write fail with err, writing nothing, as a
// full disk (syscall.ENOSPC) does: WriteAt, Truncate to a larger size, and
// OpenFile that may create a file (O_CREATE). A nil err stops write
// failures. Fsyncs go on working: see FailSyncs.
func (f *FS) FailWrites(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writeErr, f.partial = err, false
}

// FailWritesPartially is FailWrites, except that a failing WriteAt first
// writes the first half of its bytes (rounded down), as a write cut short
// when the disk fills up does, and returns that count with err.
func (f *FS) FailWritesPartially(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writeErr, f.partial = err, err != nil
}

// FailSyncs makes every later Sync, of files and of directories, fail with
// err without syncing. A nil err stops fsync failures. Note that the WAL,
// as Linux advises, never trusts a segment again once its fsync has failed,
// so Heal does not bring such a segment back.
func (f *FS) FailSyncs(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.syncErr = err
}

// FailTruncates makes every later Truncate fail with err, such as the one
// with which the WAL cuts off a partial write. A nil err stops truncate
// failures.
func (f *FS) FailTruncates(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.truncErr = err
}

// FailRenames makes every later Rename fail with err, renaming nothing,
// as a block or checkpoint is moved into place. A nil err stops rename
// failures.
func (f *FS) FailRenames(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.renameErr = err
}

// Heal stops every failure: later operations pass through to the base FS.
// A sync hook stays set.
func (f *FS) Heal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writeErr, f.partial, f.syncErr, f.truncErr, f.renameErr = nil, false, nil, nil, nil
}

// Syncs returns the number of Sync calls made on files and directories of
// the FS so far, failed ones included. The WAL fsyncs its directory when
// it creates or deletes segments, so count across a stretch with no new
// segments to count only fsyncs of records.
func (f *FS) Syncs() int { return int(f.syncs.Load()) }

// SetSyncHook makes every later Sync call hook, with the file's name,
// before it syncs (or fails). The hook runs on the goroutine that called
// Sync, with no lock of the FS held, so it can block to hold up the fsync
// until a test lets it go on, or record what happened before it. nil
// removes the hook.
func (f *FS) SetSyncHook(hook func(name string)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.syncHook = hook
}

// OpenFile opens a file of the base FS. While writes fail, opening with
// O_CREATE fails too: creating a file takes space.
func (f *FS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	if flag&os.O_CREATE != 0 {
		if err := f.failure(&f.writeErr); err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
	}
	file, err := f.base.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f, name: name}, nil
}

func (f *FS) Remove(name string) error                   { return f.base.Remove(name) }
func (f *FS) RemoveAll(name string) error                { return f.base.RemoveAll(name) }
func (f *FS) ReadDir(name string) ([]fs.DirEntry, error) { return f.base.ReadDir(name) }
func (f *FS) Stat(name string) (fs.FileInfo, error)      { return f.base.Stat(name) }

// MkdirAll fails while writes fail: a directory takes space.
func (f *FS) MkdirAll(name string, perm fs.FileMode) error {
	if err := f.failure(&f.writeErr); err != nil {
		return &fs.PathError{Op: "mkdir", Path: name, Err: err}
	}
	return f.base.MkdirAll(name, perm)
}

// Rename fails while renames fail.
func (f *FS) Rename(oldname, newname string) error {
	if err := f.failure(&f.renameErr); err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	return f.base.Rename(oldname, newname)
}

// failure returns the error *p says an operation fails with, if any.
func (f *FS) failure(p *error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return *p
}

// faultFile is a file of an FS.
type faultFile struct {
	vfs.File
	fs   *FS
	name string
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	err, partial := f.fs.writeErr, f.fs.partial
	f.fs.mu.Unlock()
	if err == nil {
		return f.File.WriteAt(p, off)
	}
	n := 0
	if partial {
		var werr error
		if n, werr = f.File.WriteAt(p[:len(p)/2], off); werr != nil {
			return n, werr
		}
	}
	return n, &fs.PathError{Op: "write", Path: f.name, Err: err}
}

// Write fails as WriteAt does, at the file offset.
func (f *faultFile) Write(p []byte) (int, error) {
	f.fs.mu.Lock()
	err, partial := f.fs.writeErr, f.fs.partial
	f.fs.mu.Unlock()
	if err == nil {
		return f.File.Write(p)
	}
	n := 0
	if partial {
		var werr error
		if n, werr = f.File.Write(p[:len(p)/2]); werr != nil {
			return n, werr
		}
	}
	return n, &fs.PathError{Op: "write", Path: f.name, Err: err}
}

func (f *faultFile) Truncate(size int64) error {
	if err := f.fs.failure(&f.fs.truncErr); err != nil {
		return &fs.PathError{Op: "truncate", Path: f.name, Err: err}
	}
	if err := f.fs.failure(&f.fs.writeErr); err != nil {
		info, serr := f.File.Stat()
		if serr != nil {
			return serr
		}
		if size > info.Size() {
			return &fs.PathError{Op: "truncate", Path: f.name, Err: err}
		}
	}
	return f.File.Truncate(size)
}

func (f *faultFile) Sync() error {
	f.fs.syncs.Add(1)
	f.fs.mu.Lock()
	hook := f.fs.syncHook
	f.fs.mu.Unlock()
	if hook != nil {
		hook(f.name)
	}
	if err := f.fs.failure(&f.fs.syncErr); err != nil {
		return &fs.PathError{Op: "sync", Path: f.name, Err: err}
	}
	return f.File.Sync()
}
