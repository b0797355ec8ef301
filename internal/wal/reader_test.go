package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"
)

// frameOffsets returns the offset of every frame in a well-formed segment.
func frameOffsets(t testing.TB, path string) []int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	for off := 0; off < len(b); off += headerSize + int(binary.LittleEndian.Uint32(b[off:])) {
		offs = append(offs, int64(off))
	}
	return offs
}

func TestReplayNothing(t *testing.T) {
	fn := func([]byte) error { return errors.New("fn called") }
	if err := Replay(t.TempDir()+"/missing", nil, fn); err != nil {
		t.Errorf("missing dir: %v", err)
	}
	if err := Replay(t.TempDir(), nil, fn); err != nil {
		t.Errorf("empty dir: %v", err)
	}
	dir := t.TempDir()
	w, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := Replay(dir, nil, fn); err != nil {
		t.Errorf("empty segment: %v", err)
	}
}

// Cutting the last segment anywhere inside its last record, as a crash
// during the write would, loses that record and nothing else, and the log
// stays usable.
func TestTornTail(t *testing.T) {
	src := t.TempDir()
	want := testRecords(5)
	logAll(t, src, Options{}, want)
	full := fileSize(t, segmentPath(src, 0))
	lastStart := full - int64(headerSize+len(want[4]))

	for cut := lastStart; cut < full; cut++ {
		t.Run(fmt.Sprintf("cut=%d", cut), func(t *testing.T) {
			dir := copyDir(t, src)
			if err := os.Truncate(segmentPath(dir, 0), cut); err != nil {
				t.Fatal(err)
			}
			logger, logged := bufferLogger()
			checkRecords(t, replayAll(t, dir, logger), want[:4])
			if got := fileSize(t, segmentPath(dir, 0)); got != lastStart {
				t.Errorf("segment has %d bytes after replay, want it cut to %d", got, lastStart)
			}
			if cut == lastStart {
				if logged.Len() > 0 {
					t.Errorf("warned about a log that ends cleanly: %s", logged)
				}
			} else {
				for _, s := range []string{"level=WARN", "segment=0", fmt.Sprintf("offset=%d", lastStart), fmt.Sprintf("dropped_bytes=%d", cut-lastStart)} {
					if !strings.Contains(logged.String(), s) {
						t.Errorf("warning %q does not contain %q", logged, s)
					}
				}
			}

			logAll(t, dir, Options{}, [][]byte{[]byte("after")})
			checkRecords(t, replayAll(t, dir, nil), append(want[:4:4], []byte("after")))
		})
	}
}

// Open repairs a torn tail itself, so a torn tail never ends up in front
// of newer segments even if nobody replayed the log first.
func TestOpenRepairsTornTail(t *testing.T) {
	dir := t.TempDir()
	want := testRecords(5)
	logAll(t, dir, Options{}, want)
	// Open was followed by a crash before anything was logged: an empty
	// segment follows the torn one.
	logAll(t, dir, Options{}, nil)
	if err := os.Truncate(segmentPath(dir, 0), fileSize(t, segmentPath(dir, 0))-3); err != nil {
		t.Fatal(err)
	}

	logger, logged := bufferLogger()
	logAll(t, dir, Options{Logger: logger}, [][]byte{[]byte("after")})
	if !strings.Contains(logged.String(), "segment=0") {
		t.Errorf("Open did not warn about the torn tail of segment 0: %q", logged)
	}
	checkRecords(t, replayAll(t, dir, nil), append(want[:4:4], []byte("after")))
}

// The newest non-empty segment may be followed by empty ones; its tail is
// still the tail of the log.
func TestTornTailBeforeEmptySegments(t *testing.T) {
	dir := t.TempDir()
	want := testRecords(5)
	logAll(t, dir, Options{}, want)
	if err := os.Truncate(segmentPath(dir, 0), fileSize(t, segmentPath(dir, 0))-3); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 2} {
		if err := os.WriteFile(segmentPath(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	checkRecords(t, replayAll(t, dir, nil), want[:4])
}

func TestZeroFilledTail(t *testing.T) {
	dir := t.TempDir()
	want := testRecords(100)
	logAll(t, dir, Options{SegmentSize: 300}, want)
	_, last, err := segmentRange(dir)
	if err != nil {
		t.Fatal(err)
	}
	path := segmentPath(dir, last)
	size := fileSize(t, path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, 4096)); err != nil {
		t.Fatal(err)
	}
	f.Close()

	logger, logged := bufferLogger()
	checkRecords(t, replayAll(t, dir, logger), want)
	if got := fileSize(t, path); got != size {
		t.Errorf("last segment has %d bytes after replay, want %d", got, size)
	}
	for _, s := range []string{fmt.Sprintf("segment=%d", last), fmt.Sprintf("offset=%d", size), "dropped_bytes=4096", "zero"} {
		if !strings.Contains(logged.String(), s) {
			t.Errorf("warning %q does not contain %q", logged, s)
		}
	}
}

func TestCorruptionInOlderSegment(t *testing.T) {
	cases := []struct {
		name    string
		corrupt func(b []byte, off int64) // b is the segment, off the frame's offset
		reason  error
	}{
		{"checksum", func(b []byte, off int64) { b[off+4] ^= 0x01 }, errChecksum},
		{"payload", func(b []byte, off int64) { b[off+headerSize+2] ^= 0x80 }, errChecksum},
		{"zero length", func(b []byte, off int64) { clear(b[off : off+4]) }, errZeroLength},
		{"length past end", func(b []byte, off int64) { binary.LittleEndian.PutUint32(b[off:], 1<<30) }, errTornPayload},
		{"zeroed frame", func(b []byte, off int64) { clear(b[off:]) }, errZeroLength},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			want := testRecords(100)
			logAll(t, dir, Options{SegmentSize: 300}, want)
			if _, last, _ := segmentRange(dir); last < 3 {
				t.Fatalf("only %d segments", last+1)
			}
			// Corrupt the second record of segment 1.
			inSeg0 := len(frameOffsets(t, segmentPath(dir, 0)))
			path := segmentPath(dir, 1)
			off := frameOffsets(t, path)[1]
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			tc.corrupt(b, off)
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}

			var got [][]byte
			err = Replay(dir, nil, func(rec []byte) error {
				got = append(got, bytes.Clone(rec))
				return nil
			})
			var cerr *CorruptionError
			if !errors.As(err, &cerr) {
				t.Fatalf("err = %v, want a *CorruptionError", err)
			}
			if cerr.Segment != 1 || cerr.Offset != off {
				t.Errorf("corruption reported in segment %d at offset %d, want segment 1 at offset %d", cerr.Segment, cerr.Offset, off)
			}
			if !errors.Is(err, tc.reason) {
				t.Errorf("err = %v, want it to wrap %v", err, tc.reason)
			}
			if prefix := fmt.Sprintf("corrupt WAL record in segment 1 at offset %d: ", off); !strings.HasPrefix(err.Error(), prefix) {
				t.Errorf("error %q does not start %q", err, prefix)
			}
			// Every record before the bad one was replayed.
			checkRecords(t, got, want[:inSeg0+1])
			// An older segment is never truncated.
			if size := fileSize(t, path); size != int64(len(b)) {
				t.Errorf("corrupt segment was changed from %d to %d bytes", len(b), size)
			}
		})
	}
}

func TestMissingSegment(t *testing.T) {
	dir := t.TempDir()
	logAll(t, dir, Options{SegmentSize: 300}, testRecords(100))
	if err := os.Remove(segmentPath(dir, 2)); err != nil {
		t.Fatal(err)
	}
	err := Replay(dir, nil, func([]byte) error { return nil })
	var cerr *CorruptionError
	if !errors.As(err, &cerr) || cerr.Segment != 2 || cerr.Offset != 0 || !errors.Is(err, errMissingSegment) {
		t.Fatalf("err = %v, want a *CorruptionError for missing segment 2", err)
	}
}

// A bad record in the middle of the last segment cannot be told from a
// torn tail: Replay cuts the segment there and warns, and the good records
// after it are lost. This test pins that behaviour down.
func TestCorruptionInMiddleOfLastSegment(t *testing.T) {
	dir := t.TempDir()
	want := testRecords(6)
	logAll(t, dir, Options{}, want)
	path := segmentPath(dir, 0)
	size := fileSize(t, path)
	off := frameOffsets(t, path)[2]
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[off+headerSize] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}

	logger, logged := bufferLogger()
	checkRecords(t, replayAll(t, dir, logger), want[:2])
	if got := fileSize(t, path); got != off {
		t.Errorf("segment has %d bytes, want it cut at the bad record, %d", got, off)
	}
	for _, s := range []string{"level=WARN", fmt.Sprintf("offset=%d", off), fmt.Sprintf("dropped_bytes=%d", size-off), "checksum mismatch"} {
		if !strings.Contains(logged.String(), s) {
			t.Errorf("warning %q does not contain %q", logged, s)
		}
	}
}

func TestReplayReturnsFnError(t *testing.T) {
	dir := t.TempDir()
	want := testRecords(10)
	logAll(t, dir, Options{}, want)
	stop := errors.New("stop")
	calls := 0
	err := Replay(dir, nil, func(rec []byte) error {
		if calls++; calls == 4 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Fatalf("err = %v, want it to wrap the error fn returned", err)
	}
	var cerr *CorruptionError
	if errors.As(err, &cerr) {
		t.Errorf("fn's error reported as corruption: %v", err)
	}
	if off := frameOffsets(t, segmentPath(dir, 0))[3]; !strings.Contains(err.Error(), fmt.Sprintf("segment 0 at offset %d", off)) {
		t.Errorf("error %q does not say segment 0 at offset %d", err, off)
	}
	if calls != 4 {
		t.Errorf("fn called %d times, want 4", calls)
	}
}

// Replay must hand out records in a reused buffer, not allocate per record.
func TestReplayReusesBuffer(t *testing.T) {
	replayAllocs := func(n int) float64 {
		dir := t.TempDir()
		w, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		rec := bytes.Repeat([]byte("r"), 100)
		for range n {
			if err := w.Log(rec); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		count := 0
		fn := func([]byte) error { count++; return nil }
		allocs := testing.AllocsPerRun(5, func() {
			if err := Replay(dir, nil, fn); err != nil {
				t.Fatal(err)
			}
		})
		if count != 6*n { // AllocsPerRun adds a warm-up run
			t.Fatalf("replayed %d records, want %d", count, 6*n)
		}
		return allocs
	}
	// A few allocations of slack: a garbage collection during the run
	// (the larger log makes one likelier) allocates on its own account.
	// Without reuse the difference would be thousands.
	few, many := replayAllocs(10), replayAllocs(5000)
	if many > few+5 {
		t.Errorf("replaying 5000 records allocated %.0f times, 10 records %.0f times: records are not read into a reused buffer", many, few)
	}

	t.Run("records larger than the read buffer", func(t *testing.T) {
		dir := t.TempDir()
		w, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if err := w.Log(bytes.Repeat([]byte{byte('a' + i)}, readBufferSize+1000)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		var ptrs []*byte
		err = Replay(dir, nil, func(rec []byte) error {
			ptrs = append(ptrs, unsafe.SliceData(rec))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(ptrs) != 3 || ptrs[1] != ptrs[0] || ptrs[2] != ptrs[0] {
			t.Errorf("record buffers %p, want the same buffer three times", ptrs)
		}
	})
}
