package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"github.com/strata-db/strata/internal/vfs"
)

// segmentName is the file name of segment n: eight digits, zero-padded, so
// that names sort in log order for anyone listing the directory.
func segmentName(n int) string { return fmt.Sprintf("%08d", n) }

// parseSegmentName returns the number in a segment file name, and false for
// any other name, so other files (a later checkpoint, an editor's backup)
// may share the directory.
func parseSegmentName(name string) (int, bool) {
	if len(name) < 8 {
		return 0, false
	}
	for _, c := range []byte(name) {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(name)
	if err != nil || segmentName(n) != name {
		return 0, false
	}
	return n, true
}

// segmentFile is a segment found on disk.
type segmentFile struct {
	num  int
	size int64
}

// listSegments returns the segments in dir in log order. A missing dir is
// returned as an error wrapping fs.ErrNotExist.
func listSegments(fsys vfs.FS, dir string) ([]segmentFile, error) {
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var segs []segmentFile
	for _, e := range entries {
		n, ok := parseSegmentName(e.Name())
		if !ok || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return nil, fmt.Errorf("stat WAL segment %d: %w", n, err)
		}
		segs = append(segs, segmentFile{num: n, size: info.Size()})
	}
	slices.SortFunc(segs, func(a, b segmentFile) int { return a.num - b.num })
	return segs, nil
}

// segment is the file the WAL is appending to.
//
// num and f are immutable. size is guarded by the WAL's mu. The rest is
// guarded by syncMu, which lets Sync fsync the file without holding the
// WAL's lock (so a slow fsync does not stall Log) while still never racing
// with the file being closed.
type segment struct {
	num int
	f   vfs.File

	// size is the length of the whole records in the file: where the next
	// write goes, and where the file is cut back to after a failed write.
	size int64

	syncMu  sync.Mutex
	closed  bool
	syncErr error // first fsync error; sticky, see the package doc
}

// createSegment creates segment n in dir and fsyncs dir, so that a segment
// Log has written to cannot vanish with the directory entry in a crash.
func createSegment(fsys vfs.FS, dir string, n int) (*segment, error) {
	path := filepath.Join(dir, segmentName(n))
	// O_EXCL: a segment is never created over an existing one, which would
	// destroy records, for example if two processes share the directory.
	f, err := fsys.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create WAL segment %d: %w", n, err)
	}
	if err := vfs.SyncDir(fsys, dir); err != nil {
		// Remove the file again so that the next attempt, which uses the
		// same number, can create it.
		f.Close()
		fsys.Remove(path)
		return nil, fmt.Errorf("create WAL segment %d: %w", n, err)
	}
	return &segment{num: n, f: f}, nil
}

// sync fsyncs the segment. Once an fsync has failed, it returns that error
// forever. After close it reports how close's fsync went, which covered
// everything written to the segment.
func (s *segment) sync() error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	return s.syncLocked()
}

func (s *segment) syncLocked() error {
	if s.syncErr != nil || s.closed {
		return s.syncErr
	}
	if err := s.f.Sync(); err != nil {
		s.syncErr = fmt.Errorf("fsync WAL segment %d: %w", s.num, err)
	}
	return s.syncErr
}

// close fsyncs and closes the file.
func (s *segment) close() error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	if s.closed {
		return s.syncErr
	}
	err := s.syncLocked()
	s.closed = true
	if cerr := s.f.Close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("close WAL segment %d: %w", s.num, cerr))
	}
	return err
}
