package wal

import (
	"errors"
	"os"
	"syscall"
	"testing"
)

// faultyFile fails the next calls of each kind it is told to fail. A failed
// WriteAt first writes the first partial bytes, as a write cut short by a
// full disk does.
type faultyFile struct {
	*os.File
	failWrites, failTruncates, failSyncs int
	partial                              int
}

func (f *faultyFile) WriteAt(p []byte, off int64) (int, error) {
	if f.failWrites == 0 {
		return f.File.WriteAt(p, off)
	}
	f.failWrites--
	n, err := f.File.WriteAt(p[:min(f.partial, len(p))], off)
	if err != nil {
		return n, err
	}
	return n, syscall.ENOSPC
}

func (f *faultyFile) Truncate(size int64) error {
	if f.failTruncates == 0 {
		return f.File.Truncate(size)
	}
	f.failTruncates--
	return syscall.EIO
}

func (f *faultyFile) Sync() error {
	if f.failSyncs == 0 {
		return f.File.Sync()
	}
	f.failSyncs--
	return syscall.EIO
}

// inject makes the current segment of w fail as ff says.
func inject(w *WAL, ff *faultyFile) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ff.File = w.seg.f.(*os.File)
	w.seg.f = ff
}

func TestWriteErrorLeavesNoPartialRecord(t *testing.T) {
	cases := []struct {
		name            string
		failTruncates   int
		failedLogs      int // Log calls that fail after the first
		wantBytesBefore int64
	}{
		{"truncate works", 0, 1, 0},
		// The first cut-off fails: the next Log must cut it off before
		// writing, and fail if it cannot.
		{"truncate fails once", 1, 1, 0},
		{"truncate fails twice", 2, 2, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			w, err := Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			a := []byte("aaaa")
			if err := w.Log(a); err != nil {
				t.Fatal(err)
			}
			before := w.BytesWritten()
			inject(w, &faultyFile{failWrites: 1, partial: 11, failTruncates: tc.failTruncates})

			if err := w.Log([]byte("bbbbbbbb"), []byte("cccccccc")); !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("err = %v, want ENOSPC", err)
			}
			for i := 1; i < tc.failedLogs; i++ {
				if err := w.Log([]byte("never")); !errors.Is(err, syscall.EIO) {
					t.Fatalf("Log %d after the failed write: err = %v, want the EIO of the cut-off", i, err)
				}
			}
			d := []byte("dddd")
			if err := w.Log(d); err != nil {
				t.Fatalf("Log once the disk works again: %v", err)
			}
			if got, want := w.BytesWritten(), before+headerSize+int64(len(d)); got != want {
				t.Errorf("BytesWritten = %d, want %d (failed writes not counted)", got, want)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			checkRecords(t, replayAll(t, dir, nil), [][]byte{a, d})
		})
	}
}

func TestSyncErrorIsSticky(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(dir, Options{SegmentSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Log([]byte("a")); err != nil {
		t.Fatal(err)
	}
	inject(w, &faultyFile{failSyncs: 1})
	if err := w.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Sync: err = %v, want EIO", err)
	}
	// The file would sync now, but the data that failed may be gone.
	if err := w.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("second Sync: err = %v, want the first EIO again", err)
	}
	// Records that fit still go to the segment (Log promises write(2), not
	// fsync), but the log cannot rotate past the unsynced segment.
	if err := w.Log([]byte("b")); err != nil {
		t.Fatalf("Log into the current segment: %v", err)
	}
	if err := w.Log(make([]byte, 200)); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Log that needs a new segment: err = %v, want EIO", err)
	}
	if err := w.Close(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Close: err = %v, want EIO", err)
	}
}
