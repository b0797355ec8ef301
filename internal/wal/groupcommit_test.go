package wal_test

import (
	"encoding/binary"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/vfs"
	"github.com/strata-db/strata/internal/vfs/faultfs"
	"github.com/strata-db/strata/internal/wal"
)

// clockFS records, on one logical clock, when each record was written and
// when each fsync of a segment started and ended, so a test can tell which
// fsyncs could have made a record durable. Records must be 8-byte
// big-endian ids; one Log call writes one record.
type clockFS struct {
	vfs.FS
	clock atomic.Int64

	mu      sync.Mutex
	written map[uint64]int64 // record id -> time its write returned
	syncs   []span           // fsyncs of segments
	// failures counts checkCovered's failures, to report only the first.
	failures int
	// allWritten is closed once want records have been written.
	want       int
	allWritten chan struct{}
}

type span struct{ start, end int64 }

func newClockFS(base vfs.FS, want int) *clockFS {
	return &clockFS{FS: base, written: map[uint64]int64{}, want: want, allWritten: make(chan struct{})}
}

func (c *clockFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := c.FS.OpenFile(name, flag, perm)
	if err != nil || flag&os.O_WRONLY == 0 {
		return f, err // directories are opened read-only
	}
	return &clockFile{File: f, c: c}, nil
}

type clockFile struct {
	vfs.File
	c *clockFS
}

func (f *clockFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	if err != nil {
		return n, err
	}
	now := f.c.clock.Add(1)
	f.c.mu.Lock()
	defer f.c.mu.Unlock()
	for len(p) > 0 { // whole frames
		size := int(binary.LittleEndian.Uint32(p))
		f.c.written[binary.BigEndian.Uint64(p[wal.HeaderSize:])] = now
		p = p[wal.HeaderSize+size:]
	}
	if len(f.c.written) == f.c.want {
		close(f.c.allWritten)
	}
	return n, nil
}

func (f *clockFile) Sync() error {
	start := f.c.clock.Add(1)
	err := f.File.Sync()
	end := f.c.clock.Add(1)
	f.c.mu.Lock()
	f.c.syncs = append(f.c.syncs, span{start, end})
	f.c.mu.Unlock()
	return err
}

// checkCovered checks that the Log of record id, which returned at time
// returned, returned after an fsync that started after the record was
// written had ended.
func (c *clockFS) checkCovered(t *testing.T, id uint64, returned int64) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	written, ok := c.written[id]
	if !ok {
		t.Errorf("record %d: Log returned, but it was never written", id)
		return
	}
	last := span{-1, -1} // the last fsync that ended before Log returned
	for _, s := range c.syncs {
		if s.start > written && s.end < returned {
			return
		}
		if s.end < returned {
			last = s
		}
	}
	if c.failures++; c.failures <= 3 {
		t.Errorf("record %d written at %d, Log returned at %d; the last fsync before that ran from %d to %d",
			id, written, returned, last.start, last.end)
	}
}

func idRecord(id uint64) []byte { return binary.BigEndian.AppendUint64(nil, id) }

// Concurrent SyncAlways loggers share fsyncs. The first fsync is held up
// until every logger has written its record, which they can do only if the
// fsync does not hold the WAL's write lock; that fsync cannot cover the
// writes that came after it started, and one more fsync covers them all.
func TestGroupCommit(t *testing.T) {
	const loggers = 8
	dir := t.TempDir()
	fault := faultfs.New(nil)
	cfs := newClockFS(fault, loggers)
	w, err := wal.Open(dir, wal.Options{Sync: wal.SyncAlways, FS: cfs})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	var once sync.Once
	fault.SetSyncHook(func(name string) {
		if name == dir {
			return
		}
		once.Do(func() {
			select {
			case <-cfs.allWritten:
			case <-time.After(10 * time.Second):
				t.Error("Log calls could not write while an fsync was under way")
			}
		})
	})
	syncsBefore := fault.Syncs()

	var wg sync.WaitGroup
	for id := range uint64(loggers) {
		wg.Go(func() {
			if err := w.Log(idRecord(id)); err != nil {
				t.Error(err)
				return
			}
			cfs.checkCovered(t, id, cfs.clock.Add(1))
		})
	}
	wg.Wait()
	// The held-up fsync, then (unless it happened to start after every
	// write) one for everyone it did not cover.
	if syncs := fault.Syncs() - syncsBefore; syncs < 1 || syncs > 2 {
		t.Errorf("%d Log calls took %d fsyncs, want 1 or 2", loggers, syncs)
	}
}

// Many loggers and real fsyncs: every Log still returns only after an
// fsync that started after its write, also across new segments.
func TestGroupCommitStress(t *testing.T) {
	const loggers, calls = 8, 100
	dir := t.TempDir()
	fault := faultfs.New(nil)
	cfs := newClockFS(fault, loggers*calls)
	// Segments of 40 records, so that the log moves on several times.
	w, err := wal.Open(dir, wal.Options{Sync: wal.SyncAlways, FS: cfs, SegmentSize: 40 * (wal.HeaderSize + 8)})
	if err != nil {
		t.Fatal(err)
	}
	syncsBefore := fault.Syncs()
	var wg sync.WaitGroup
	for g := range uint64(loggers) {
		wg.Go(func() {
			for i := range uint64(calls) {
				id := g*calls + i
				if err := w.Log(idRecord(id)); err != nil {
					t.Error(err)
					return
				}
				cfs.checkCovered(t, id, cfs.clock.Add(1))
			}
		})
	}
	wg.Wait()
	syncs := fault.Syncs() - syncsBefore
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, _ := replayRecords(t, dir)
	if len(got) != loggers*calls {
		t.Errorf("replayed %d records, want %d", len(got), loggers*calls)
	}
	t.Logf("%d Log calls, %d fsyncs (directory fsyncs for new segments included)", loggers*calls, syncs)
}

// Sync shares the group commit too: with nothing written since the last
// fsync, it has nothing to do.
func TestSyncAfterSyncAlwaysLog(t *testing.T) {
	fault := faultfs.New(nil)
	w, err := wal.Open(t.TempDir(), wal.Options{Sync: wal.SyncAlways, FS: fault})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Log([]byte("a")); err != nil {
		t.Fatal(err)
	}
	before := fault.Syncs()
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if n := fault.Syncs() - before; n != 0 {
		t.Errorf("Sync with nothing new to sync did %d fsyncs", n)
	}
	for i := range 3 {
		if err := w.Log(fmt.Appendf(nil, "%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := fault.Syncs() - before; n != 3 {
		t.Errorf("3 Log calls one after another did %d fsyncs, want 3", n)
	}
}
