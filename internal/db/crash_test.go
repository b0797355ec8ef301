package db

import (
	"math"
	"syscall"
	"testing"

	"github.com/strata-db/strata/internal/vfs/crashfs"
	"github.com/strata-db/strata/internal/vfs/faultfs"
	"github.com/strata-db/strata/internal/wal"
)

// TestCrashDuringCompaction walks a power loss through every step of a
// compaction: writing the head's oldest ranges to blocks, truncating and
// checkpointing the head, merging blocks and deleting their sources. At
// each step it keeps only what was fsynced, reopens the store on that and
// checks that every acknowledged sample is there, once, and that the next
// compaction finishes. With --wal.sync=always an acknowledged sample is
// fsynced, so nothing acknowledged may be lost whatever else is.
func TestCrashDuringCompaction(t *testing.T) {
	crashAtEachStep(t, func(o *Options) { o.MaxBlockDuration = 0 }, func(db *DB, want map[string][]string) {
		writeData(t, db, 0, 4*testRange, 4*testRange, want)
	})
}

// crashAtEachStep opens a store with tweak and --wal.sync=always on a
// crash-simulating file system, has write fill it, and crashes the next
// compaction after its first, second, ... file system change until one
// completes. After each crash it reopens the store on what was fsynced
// and checks that every sample write acknowledged is there, once, and
// that the next compaction finishes.
func crashAtEachStep(t *testing.T, tweak func(*Options), write func(db *DB, want map[string][]string)) {
	t.Helper()
	durable := func(o *Options) {
		tweak(o)
		o.Head.WAL.Sync = wal.SyncAlways
		o.Head.CheckpointOnClose = false
	}
	for step := 0; ; step++ {
		fsys := crashfs.New()
		db := openTestDB(t, "data", func(o *Options) { durable(o); o.FS = fsys })
		want := map[string][]string{}
		write(db, want)

		fsys.CrashAfter(step)
		err := db.Compact()
		crashed := fsys.Crashed()
		if !crashed && err != nil {
			t.Fatalf("step %d: compaction failed without a crash: %v", step, err)
		}
		after := fsys.Crash()
		db.Close() // errors expected: the file system is gone

		db = openTestDB(t, "data", func(o *Options) { durable(o); o.FS = after })
		assertSame(t, readAll(t, db, math.MinInt64, math.MaxInt64), want)
		if t.Failed() {
			t.Fatalf("step %d: samples lost or doubled after a crash", step)
		}
		if err := db.Compact(); err != nil {
			t.Fatalf("step %d: compaction after the crash: %v", step, err)
		}
		assertSame(t, readAll(t, db, math.MinInt64, math.MaxInt64), want)
		if n := len(db.Blocks()); n == 0 {
			t.Fatalf("step %d: no blocks after compacting again", step)
		}
		assertDisjoint(t, db)
		db.Close()
		if !crashed {
			t.Logf("compaction took %d file system changes; a crash after each kept every sample", step)
			if step < 10 {
				t.Fatalf("only %d steps: the crash points did not reach the compaction", step)
			}
			return
		}
	}
}

// TestCompactionFaults fails writes (a full disk) and renames during a
// compaction: it fails, the head keeps the data, queries answer as
// before, and it succeeds once the disk has room again.
func TestCompactionFaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail func(*faultfs.FS)
	}{
		{"ENOSPC", func(f *faultfs.FS) { f.FailWrites(syscall.ENOSPC) }},
		{"ENOSPC partial", func(f *faultfs.FS) { f.FailWritesPartially(syscall.ENOSPC) }},
		{"rename", func(f *faultfs.FS) { f.FailRenames(syscall.EIO) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := faultfs.New(nil)
			dir := t.TempDir()
			db := openTestDB(t, dir, func(o *Options) { o.FS = fsys })
			defer db.Close()
			want := map[string][]string{}
			writeData(t, db, 0, 3*testRange, 3*testRange, want)
			tc.fail(fsys)
			if err := db.Compact(); err == nil {
				t.Fatal("compaction succeeded on a failing disk")
			}
			if n := len(db.Blocks()); n != 0 {
				t.Errorf("%d blocks after a failed compaction", n)
			}
			if dirs := blockDirs(t, dir); len(dirs) != 0 {
				t.Errorf("directories left by a failed compaction: %v", dirs)
			}
			assertSame(t, readAll(t, db, math.MinInt64, math.MaxInt64), want)
			fsys.Heal()
			if err := db.Compact(); err != nil {
				t.Fatal(err)
			}
			if n := len(db.Blocks()); n != 2 {
				t.Errorf("%d blocks after the disk healed, want 2", n)
			}
			assertSame(t, readAll(t, db, math.MinInt64, math.MaxInt64), want)
			if db.Stats().CompactionFailures != 1 {
				t.Errorf("%d compaction failures counted, want 1", db.Stats().CompactionFailures)
			}
		})
	}
}
