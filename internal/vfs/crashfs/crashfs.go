// Package crashfs is an in-memory file system (a vfs.FS) that knows what
// a power loss would keep: file contents as of their last fsync, and
// directory entries (creations, renames, removals) as of the last fsync
// of their directory. Crash returns the file system as it would be found
// after such a loss, so that a test can reopen the store on it and check
// that everything it acknowledged is there.
//
// CrashAfter makes every operation that changes something fail once a
// given number have run, as if the process died at that point: a test
// walks the crash point through every step of a compaction.
//
// Directories made by MkdirAll are durable at once: strata makes its data
// directories once, and a block's temporary directory matters only
// through the rename that follows it, whose durability is tested.
package crashfs

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/strata-db/strata/internal/vfs"
)

// ErrCrashed is returned by operations after the crash point.
var ErrCrashed = errors.New("crashfs: crashed")

// FS is the file system. It is safe for concurrent use; one lock guards
// all of it.
type FS struct {
	mu      sync.Mutex
	root    *node
	ops     int // changes made since CrashAfter
	crashAt int // changes allowed, -1 for no limit
	crashed bool
	// changes counts every change made; synced holds its value at each
	// file's last fsync, by the name the file was opened with.
	changes int
	synced  map[string]int
}

// node is a file or a directory.
type node struct {
	dir bool
	// A file's content, and what of it was fsynced.
	data, synced []byte
	// A directory's entries, and those as of its last fsync.
	children, syncedChildren map[string]*node
	modTime                  time.Time
}

func newDir() *node {
	return &node{dir: true, children: map[string]*node{}, syncedChildren: map[string]*node{}}
}

// New returns an empty file system.
func New() *FS { return &FS{root: newDir(), crashAt: -1, synced: map[string]int{}} }

// CrashAfter makes every change after the next n fail with ErrCrashed.
func (f *FS) CrashAfter(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.crashAt, f.ops, f.crashed = n, 0, false
}

// Crashed reports whether an operation failed at the crash point.
func (f *FS) Crashed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.crashed
}

// Crash returns a new file system holding what a power loss would have
// left of f: every directory with its entries as of its last fsync, every
// file with its content as of its last fsync. f stays as it is.
func (f *FS) Crash() *FS {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &FS{root: durable(f.root), crashAt: -1, synced: map[string]int{}}
}

// Changes returns how many changes were made since the file system was
// made: a clock that orders what a test does against its fsyncs.
func (f *FS) Changes() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changes
}

// LastSync returns Changes as it was after the last fsync of a file in
// directory dir, -1 if there was none.
func (f *FS) LastSync(dir string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	last := -1
	for name, at := range f.synced {
		if filepath.Dir(name) == filepath.Clean(dir) {
			last = max(last, at)
		}
	}
	return last
}

func durable(n *node) *node {
	if !n.dir {
		return &node{data: slices.Clone(n.synced), synced: slices.Clone(n.synced), modTime: n.modTime}
	}
	d := newDir()
	for name, c := range n.syncedChildren {
		cc := durable(c)
		d.children[name], d.syncedChildren[name] = cc, cc
	}
	return d
}

// change counts a change, failing it past the crash point. mu must be
// held.
func (f *FS) change() error {
	if f.crashAt >= 0 && f.ops >= f.crashAt {
		f.crashed = true
		return ErrCrashed
	}
	f.ops++
	f.changes++
	return nil
}

// split returns the parts of a cleaned path.
func split(name string) []string {
	name = filepath.ToSlash(filepath.Clean(name))
	name = strings.TrimPrefix(name, "/")
	if name == "." || name == "" {
		return nil
	}
	return strings.Split(name, "/")
}

// lookup returns the node at name, or nil. mu must be held.
func (f *FS) lookup(name string) *node {
	n := f.root
	for _, p := range split(name) {
		if !n.dir {
			return nil
		}
		if n = n.children[p]; n == nil {
			return nil
		}
	}
	return n
}

// parent returns the directory holding name and name's last part. mu
// must be held.
func (f *FS) parent(op, name string) (*node, string, error) {
	parts := split(name)
	if len(parts) == 0 {
		return nil, "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	d := f.lookup(path.Join(parts[:len(parts)-1]...))
	if d == nil || !d.dir {
		return nil, "", &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	return d, parts[len(parts)-1], nil
}

func (f *FS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.lookup(name)
	writes := flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC) != 0
	switch {
	case n != nil && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrExist}
	case n == nil && flag&os.O_CREATE == 0:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	case n != nil && n.dir && writes:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if writes {
		if err := f.change(); err != nil {
			return nil, err
		}
	}
	if n == nil {
		d, base, err := f.parent("open", name)
		if err != nil {
			return nil, err
		}
		n = &node{modTime: time.Now()}
		d.children[base] = n
	}
	if flag&os.O_TRUNC != 0 {
		n.data = nil
	}
	h := &handle{fs: f, n: n, name: name}
	if flag&os.O_APPEND != 0 {
		h.off = int64(len(n.data))
	}
	return h, nil
}

func (f *FS) Remove(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, base, err := f.parent("remove", name)
	if err != nil {
		return err
	}
	n := d.children[base]
	if n == nil {
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
	}
	if n.dir && len(n.children) > 0 {
		return &fs.PathError{Op: "remove", Path: name, Err: errors.New("directory not empty")}
	}
	if err := f.change(); err != nil {
		return err
	}
	delete(d.children, base)
	return nil
}

func (f *FS) RemoveAll(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, base, err := f.parent("removeall", name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if d.children[base] == nil {
		return nil
	}
	if err := f.change(); err != nil {
		return err
	}
	delete(d.children, base)
	return nil
}

func (f *FS) Rename(oldname, newname string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	od, obase, err := f.parent("rename", oldname)
	if err != nil {
		return err
	}
	n := od.children[obase]
	if n == nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: fs.ErrNotExist}
	}
	nd, nbase, err := f.parent("rename", newname)
	if err != nil {
		return err
	}
	if old := nd.children[nbase]; old != nil && old.dir && len(old.children) > 0 {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: errors.New("directory not empty")}
	}
	if err := f.change(); err != nil {
		return err
	}
	delete(od.children, obase)
	nd.children[nbase] = n
	return nil
}

func (f *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d := f.lookup(name)
	if d == nil || !d.dir {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	out := make([]fs.DirEntry, 0, len(d.children))
	for n, c := range d.children {
		out = append(out, fs.FileInfoToDirEntry(newInfo(n, c)))
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

// MkdirAll makes the directory and its parents, durable at once (see the
// package documentation).
func (f *FS) MkdirAll(name string, perm fs.FileMode) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.root
	for _, p := range split(name) {
		c := n.children[p]
		if c == nil {
			if err := f.change(); err != nil {
				return err
			}
			c = newDir()
			n.children[p], n.syncedChildren[p] = c, c
		}
		if !c.dir {
			return &fs.PathError{Op: "mkdir", Path: name, Err: fs.ErrExist}
		}
		n = c
	}
	return nil
}

func (f *FS) Stat(name string) (fs.FileInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.lookup(name)
	if n == nil {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	return newInfo(path.Base(filepath.ToSlash(name)), n), nil
}

// info describes a node as it was when it was made: newInfo runs under
// the file system's lock.
type info struct {
	name    string
	dir     bool
	size    int64
	modTime time.Time
}

func newInfo(name string, n *node) info {
	return info{name: name, dir: n.dir, size: int64(len(n.data)), modTime: n.modTime}
}

func (i info) Name() string { return i.name }
func (i info) Size() int64  { return i.size }
func (i info) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o777
	}
	return 0o666
}
func (i info) ModTime() time.Time { return i.modTime }
func (i info) IsDir() bool        { return i.dir }
func (i info) Sys() any           { return nil }

// handle is an open file or directory.
type handle struct {
	fs   *FS
	n    *node
	name string
	off  int64
}

func (h *handle) Read(p []byte) (int, error) {
	n, err := h.ReadAt(p, h.off)
	h.off += int64(n)
	return n, err
}

func (h *handle) ReadAt(p []byte, off int64) (int, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if h.n.dir {
		return 0, &fs.PathError{Op: "read", Path: h.name, Err: fs.ErrInvalid}
	}
	if off >= int64(len(h.n.data)) {
		return 0, io.EOF
	}
	n := copy(p, h.n.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (h *handle) Write(p []byte) (int, error) {
	n, err := h.WriteAt(p, h.off)
	h.off += int64(n)
	return n, err
}

func (h *handle) WriteAt(p []byte, off int64) (int, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.fs.change(); err != nil {
		return 0, err
	}
	if end := off + int64(len(p)); end > int64(len(h.n.data)) {
		h.n.data = append(h.n.data, make([]byte, end-int64(len(h.n.data)))...)
	}
	copy(h.n.data[off:], p)
	return len(p), nil
}

func (h *handle) Truncate(size int64) error {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.fs.change(); err != nil {
		return err
	}
	if size <= int64(len(h.n.data)) {
		h.n.data = h.n.data[:size:size]
	} else {
		h.n.data = append(h.n.data, make([]byte, size-int64(len(h.n.data)))...)
	}
	return nil
}

// Sync makes a file's content, or a directory's entries, durable.
func (h *handle) Sync() error {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.fs.change(); err != nil {
		return err
	}
	if h.n.dir {
		h.n.syncedChildren = make(map[string]*node, len(h.n.children))
		for k, v := range h.n.children {
			h.n.syncedChildren[k] = v
		}
		return nil
	}
	h.n.synced = bytes.Clone(h.n.data)
	h.fs.synced[filepath.Clean(h.name)] = h.fs.changes
	return nil
}

func (h *handle) Stat() (fs.FileInfo, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	return newInfo(path.Base(filepath.ToSlash(h.name)), h.n), nil
}

func (h *handle) Close() error { return nil }
