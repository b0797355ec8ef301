package wal_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/strata-db/strata/internal/vfs/faultfs"
	"github.com/strata-db/strata/internal/wal"
)

// replayRecords replays dir and returns copies of its records.
func replayRecords(t testing.TB, dir string) ([][]byte, wal.ReplayStats) {
	t.Helper()
	var got [][]byte
	stats, err := wal.Replay(dir, wal.ReplayOptions{}, func(rec []byte) error {
		got = append(got, bytes.Clone(rec))
		return nil
	})
	if err != nil {
		t.Fatalf("Replay: %v", err)
	}
	return got, stats
}

func checkRecords(t testing.TB, got, want [][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("record %d: got %q, want %q", i, got[i], want[i])
		}
	}
}

// crashCopy copies the files of dir as they are now, as a crash (kill -9)
// would leave them, into a new directory.
func crashCopy(t testing.TB, dir string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// With the disk full, Log fails with ENOSPC and leaves nothing of its
// records behind, whether the write failed outright or part-way, and
// whether the records needed a new segment, which cannot be created
// either. Once there is space again, Log works and the log holds exactly
// the records of the calls that succeeded.
func TestDiskFull(t *testing.T) {
	for _, partial := range []bool{false, true} {
		for _, policy := range []wal.SyncPolicy{wal.SyncNever, wal.SyncAlways} {
			t.Run(fmt.Sprintf("partial=%t/sync=%s", partial, policy), func(t *testing.T) {
				dir := t.TempDir()
				fsys := faultfs.New(nil)
				// Small segments, so that some failing calls need a new one.
				w, err := wal.Open(dir, wal.Options{SegmentSize: 200, Sync: policy, FS: fsys})
				if err != nil {
					t.Fatal(err)
				}
				var want [][]byte
				logOK := func(recs ...[]byte) {
					t.Helper()
					if err := w.Log(recs...); err != nil {
						t.Fatalf("Log: %v", err)
					}
					want = append(want, recs...)
				}
				rec := func(i int) []byte { return fmt.Appendf(nil, "record %d %s", i, bytes.Repeat([]byte("x"), i%30)) }
				for i := range 10 {
					logOK(rec(i))
				}

				if partial {
					fsys.FailWritesPartially(syscall.ENOSPC)
				} else {
					fsys.FailWrites(syscall.ENOSPC)
				}
				for i := 10; i < 30; i++ {
					// Single records and batches of two.
					recs := [][]byte{rec(i)}
					if i%2 == 0 {
						recs = append(recs, rec(1000+i))
					}
					if err := w.Log(recs...); !errors.Is(err, syscall.ENOSPC) {
						t.Fatalf("Log %d on a full disk: err = %v, want ENOSPC", i, err)
					}
				}
				// A crash now finds exactly the records logged, with
				// nothing to repair.
				got, stats := replayRecords(t, crashCopy(t, dir))
				checkRecords(t, got, want)
				if len(stats.Repairs) != 0 {
					t.Errorf("crash on a full disk left bad records: %v", stats.Repairs)
				}

				fsys.Heal()
				for i := 30; i < 50; i++ {
					logOK(rec(i), rec(1000+i))
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				got, stats = replayRecords(t, dir)
				checkRecords(t, got, want)
				if len(stats.Repairs) != 0 {
					t.Errorf("repairs %v, want none", stats.Repairs)
				}
			})
		}
	}
}

// When the partial write cannot be cut off either, the next Log cuts it
// off before writing, and fails without writing if it still cannot.
func TestWriteErrorCutOffFails(t *testing.T) {
	cases := []struct {
		name string
		// failedLogs is the number of Log calls after the first failing
		// one that fail because the cut-off still fails.
		failTruncates bool
		failedLogs    int
	}{
		{"cut-off works", false, 0},
		{"cut-off fails once", true, 0},
		{"cut-off fails twice", true, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			fsys := faultfs.New(nil)
			w, err := wal.Open(dir, wal.Options{FS: fsys})
			if err != nil {
				t.Fatal(err)
			}
			a := []byte("aaaa")
			if err := w.Log(a); err != nil {
				t.Fatal(err)
			}
			before := w.BytesWritten()
			fsys.FailWritesPartially(syscall.ENOSPC)
			if tc.failTruncates {
				fsys.FailTruncates(syscall.EIO)
			}

			// Half the batch (20 bytes) ends inside the first record.
			if err := w.Log([]byte("bbbbbbbbbbbbbbbb"), []byte("cccccccc")); !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("err = %v, want ENOSPC", err)
			}
			if tc.failTruncates {
				// A crash now finds half a batch after a: replay cuts
				// it off.
				got, stats := replayRecords(t, crashCopy(t, dir))
				checkRecords(t, got, [][]byte{a})
				if len(stats.Repairs) != 1 || stats.DroppedBytes != 20 {
					t.Errorf("stats %+v, want one repair dropping half the batch", stats)
				}
			}
			fsys.FailWrites(nil) // there is space again
			for i := range tc.failedLogs {
				if err := w.Log([]byte("never")); !errors.Is(err, syscall.EIO) {
					t.Fatalf("Log %d after the failed write: err = %v, want the EIO of the cut-off", i, err)
				}
			}
			fsys.Heal()
			d := []byte("dddd")
			if err := w.Log(d); err != nil {
				t.Fatalf("Log once the disk works again: %v", err)
			}
			if got, want := w.BytesWritten(), before+wal.HeaderSize+int64(len(d)); got != want {
				t.Errorf("BytesWritten = %d, want %d (failed writes not counted)", got, want)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			got, stats := replayRecords(t, dir)
			checkRecords(t, got, [][]byte{a, d})
			if len(stats.Repairs) != 0 {
				t.Errorf("repairs %v, want none", stats.Repairs)
			}
		})
	}
}

// After a failed fsync the segment is never trusted again, even once the
// disk works: every fsync of it fails, so Sync and Log with SyncAlways
// fail, and the log cannot move on to a new segment.
func TestSyncErrorIsSticky(t *testing.T) {
	for _, policy := range []wal.SyncPolicy{wal.SyncNever, wal.SyncAlways} {
		t.Run("sync="+policy.String(), func(t *testing.T) {
			fsys := faultfs.New(nil)
			w, err := wal.Open(t.TempDir(), wal.Options{SegmentSize: 100, Sync: policy, FS: fsys})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Log([]byte("a")); err != nil {
				t.Fatal(err)
			}
			fsys.FailSyncs(syscall.EIO)
			err = w.Log([]byte("a2"))
			if policy == wal.SyncNever && err != nil {
				t.Fatalf("Log: %v", err)
			}
			if policy == wal.SyncAlways && !errors.Is(err, syscall.EIO) {
				t.Fatalf("Log with SyncAlways: err = %v, want EIO", err)
			}
			if err := w.Sync(); !errors.Is(err, syscall.EIO) {
				t.Fatalf("Sync: err = %v, want EIO", err)
			}
			fsys.Heal()
			// The file would sync now, but the data that failed may be gone.
			if err := w.Sync(); !errors.Is(err, syscall.EIO) {
				t.Fatalf("second Sync: err = %v, want the first EIO again", err)
			}
			// Records that fit still go to the segment, but with
			// SyncAlways, Log cannot make them durable.
			err = w.Log([]byte("b"))
			if policy == wal.SyncNever && err != nil {
				t.Fatalf("Log into the current segment: %v", err)
			}
			if policy == wal.SyncAlways && !errors.Is(err, syscall.EIO) {
				t.Fatalf("Log with SyncAlways: err = %v, want EIO", err)
			}
			if err := w.Log(make([]byte, 200)); !errors.Is(err, syscall.EIO) {
				t.Fatalf("Log that needs a new segment: err = %v, want EIO", err)
			}
			if _, err := w.NextSegment(); !errors.Is(err, syscall.EIO) {
				t.Fatalf("NextSegment: err = %v, want EIO", err)
			}
			if err := w.Close(); !errors.Is(err, syscall.EIO) {
				t.Fatalf("Close: err = %v, want EIO", err)
			}
		})
	}
}

// A repair that cannot be written fails Replay with the I/O error; the
// next Replay, once the disk works, repairs it.
func TestReplayRepairFails(t *testing.T) {
	dir := t.TempDir()
	w, err := wal.Open(dir, wal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"one", "two"} {
		if err := w.Log([]byte(r)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "00000000")
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, info.Size()-1); err != nil {
		t.Fatal(err)
	}
	fsys := faultfs.New(nil)
	fsys.FailTruncates(syscall.EIO)
	_, err = wal.Replay(dir, wal.ReplayOptions{FS: fsys}, func([]byte) error { return nil })
	var cerr *wal.CorruptionError
	if !errors.Is(err, syscall.EIO) || errors.As(err, &cerr) {
		t.Fatalf("err = %v, want the EIO of the repair", err)
	}
	fsys.Heal()
	got, stats := replayRecords(t, dir)
	checkRecords(t, got, [][]byte{[]byte("one")})
	if len(stats.Repairs) != 1 {
		t.Errorf("repairs %v, want one", stats.Repairs)
	}
}
