package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
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

// checkStats compares stats with want; a repair's Err need only be set.
func checkStats(t testing.TB, got, want ReplayStats) {
	t.Helper()
	gotRepairs, wantRepairs := got.Repairs, want.Repairs
	got.Repairs, want.Repairs = nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("stats %+v, want %+v", got, want)
	}
	if len(gotRepairs) != len(wantRepairs) {
		t.Fatalf("repairs %v, want %d", gotRepairs, len(wantRepairs))
	}
	for i, r := range gotRepairs {
		if r.Segment != wantRepairs[i].Segment || r.Offset != wantRepairs[i].Offset || r.Err == nil {
			t.Errorf("repair %d: %v, want segment %d at offset %d", i, &r, wantRepairs[i].Segment, wantRepairs[i].Offset)
		}
	}
}

func TestReplayNothing(t *testing.T) {
	fn := func([]byte) error { return errors.New("fn called") }
	if stats, err := Replay(t.TempDir()+"/missing", ReplayOptions{}, fn); err != nil || !reflect.DeepEqual(stats, ReplayStats{}) {
		t.Errorf("missing dir: %+v, %v", stats, err)
	}
	if stats, err := Replay(t.TempDir(), ReplayOptions{}, fn); err != nil || !reflect.DeepEqual(stats, ReplayStats{}) {
		t.Errorf("empty dir: %+v, %v", stats, err)
	}
	dir := t.TempDir()
	w, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if stats, err := Replay(dir, ReplayOptions{}, fn); err != nil || !reflect.DeepEqual(stats, ReplayStats{Segments: 1}) {
		t.Errorf("empty segment: %+v, %v", stats, err)
	}
	if _, err := Replay(dir, ReplayOptions{From: -1}, fn); err == nil {
		t.Errorf("negative From: no error")
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
			got, stats := replayStats(t, dir, ReplayOptions{Logger: logger})
			checkRecords(t, got, want[:4])
			if got := fileSize(t, segmentPath(dir, 0)); got != lastStart {
				t.Errorf("segment has %d bytes after replay, want it cut to %d", got, lastStart)
			}
			wantStats := ReplayStats{Segments: 1, Records: 4, Bytes: lastStart, DroppedBytes: cut - lastStart}
			if cut > lastStart {
				wantStats.Repairs = []CorruptionError{{Segment: 0, Offset: lastStart}}
			}
			checkStats(t, stats, wantStats)
			if cut == lastStart {
				if strings.Contains(logged.String(), "level=WARN") {
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
	got, stats := replayStats(t, dir, ReplayOptions{Logger: logger})
	checkRecords(t, got, want)
	if got := fileSize(t, path); got != size {
		t.Errorf("last segment has %d bytes after replay, want %d", got, size)
	}
	if len(stats.Repairs) != 1 || stats.Repairs[0].Segment != last || !errors.Is(stats.Repairs[0].Err, errZeroLength) || stats.DroppedBytes != 4096 {
		t.Errorf("stats %+v, want one repair of segment %d, zero length, 4096 bytes dropped", stats, last)
	}
	for _, s := range []string{fmt.Sprintf("segment=%d", last), fmt.Sprintf("offset=%d", size), "dropped_bytes=4096", "zero"} {
		if !strings.Contains(logged.String(), s) {
			t.Errorf("warning %q does not contain %q", logged, s)
		}
	}
}

// A bad record in an older segment is repaired like a torn tail: the
// segment is cut off there, the records after it in that segment are lost,
// and every later segment is replayed.
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
		{"torn header", nil, errTornHeader},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			want := testRecords(100)
			logAll(t, dir, Options{SegmentSize: 300}, want)
			_, last, err := segmentRange(dir)
			if err != nil || last < 3 {
				t.Fatalf("segments 0..%d, %v; want at least 4", last, err)
			}
			// Corrupt the second record of segment 1.
			inSeg0 := len(frameOffsets(t, segmentPath(dir, 0)))
			path := segmentPath(dir, 1)
			offs := frameOffsets(t, path)
			off := offs[1]
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if tc.corrupt != nil {
				tc.corrupt(b, off)
			} else {
				b = b[:off+headerSize/2]
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}

			logger, logged := bufferLogger()
			got, stats := replayStats(t, dir, ReplayOptions{Logger: logger})
			// Segment 0 and the first record of segment 1, then every
			// record of segments 2 and later.
			lost := len(offs) - 1
			checkRecords(t, got, slices.Concat(want[:inSeg0+1], want[inSeg0+1+lost:]))
			if len(stats.Repairs) != 1 {
				t.Fatalf("repairs %v, want one", stats.Repairs)
			}
			if r := stats.Repairs[0]; r.Segment != 1 || r.Offset != off || !errors.Is(r.Err, tc.reason) {
				t.Errorf("repair %v, want segment 1 at offset %d: %v", &r, off, tc.reason)
			}
			if stats.DroppedBytes != int64(len(b))-off {
				t.Errorf("dropped %d bytes, want %d", stats.DroppedBytes, int64(len(b))-off)
			}
			if stats.Segments != last+1 {
				t.Errorf("read %d segments, want %d", stats.Segments, last+1)
			}
			for _, s := range []string{"level=WARN", "segment=1", fmt.Sprintf("offset=%d", off), fmt.Sprintf("dropped_bytes=%d", int64(len(b))-off)} {
				if !strings.Contains(logged.String(), s) {
					t.Errorf("log %q does not contain %q", logged, s)
				}
			}
			if size := fileSize(t, path); size != off {
				t.Errorf("corrupt segment has %d bytes, want it cut to %d", size, off)
			}
			// The repair is done: the next replay is clean and the same.
			again, stats := replayStats(t, dir, ReplayOptions{})
			checkRecords(t, again, got)
			if len(stats.Repairs) != 0 || stats.DroppedBytes != 0 {
				t.Errorf("second replay repaired again: %+v", stats)
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
	// A torn tail elsewhere is not repaired either: Replay changes
	// nothing once it knows the log is incomplete.
	size := fileSize(t, segmentPath(dir, 4))
	if err := os.Truncate(segmentPath(dir, 4), size-1); err != nil {
		t.Fatal(err)
	}
	calls := 0
	stats, err := Replay(dir, ReplayOptions{}, func([]byte) error { calls++; return nil })
	var cerr *CorruptionError
	if !errors.As(err, &cerr) || cerr.Segment != 2 || cerr.Offset != 0 || !errors.Is(err, errMissingSegment) {
		t.Fatalf("err = %v, want a *CorruptionError for missing segment 2", err)
	}
	if calls != 0 || !reflect.DeepEqual(stats, ReplayStats{}) {
		t.Errorf("fn called %d times, stats %+v; want nothing read", calls, stats)
	}
	if got := fileSize(t, segmentPath(dir, 4)); got != size-1 {
		t.Errorf("segment 4 changed from %d to %d bytes", size-1, got)
	}
}

// ReplayOptions.From skips the segments below it, and a gap between From
// and the first segment above it is corruption exactly when a segment below
// From shows the log once reached into the gap.
func TestReplayFrom(t *testing.T) {
	cases := []struct {
		name    string
		present []int // segments on disk, each holding one record, its number
		from    int
		want    []int // records replayed
		missing int   // missing segment reported, or -1
	}{
		{"from 0", []int{0, 1, 2}, 0, []int{0, 1, 2}, -1},
		{"from the middle", []int{0, 1, 2, 3}, 2, []int{2, 3}, -1},
		{"from the first", []int{2, 3}, 2, []int{2, 3}, -1},
		{"log starts after from", []int{5, 6}, 2, []int{5, 6}, -1},
		{"past the end", []int{0, 1}, 5, nil, -1},
		{"gaps below from are ignored", []int{0, 2, 4, 5}, 4, []int{4, 5}, -1},
		{"from missing", []int{0, 1, 3, 4}, 2, nil, 2},
		{"from missing, older segment not adjacent", []int{0, 3, 4}, 2, nil, 2},
		{"gap after from", []int{2, 3, 5}, 2, nil, 4},
		{"gap after from, older segments", []int{0, 1, 2, 4}, 1, nil, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, n := range tc.present {
				if err := os.WriteFile(segmentPath(dir, n), appendFrame(nil, []byte{byte(n)}), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var got []int
			stats, err := Replay(dir, ReplayOptions{From: tc.from}, func(rec []byte) error {
				got = append(got, int(rec[0]))
				return nil
			})
			if tc.missing >= 0 {
				var cerr *CorruptionError
				if !errors.As(err, &cerr) || cerr.Segment != tc.missing || !errors.Is(err, errMissingSegment) {
					t.Fatalf("err = %v, want missing segment %d", err, tc.missing)
				}
				if len(got) > 0 {
					t.Errorf("replayed %v before reporting the missing segment", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("replayed %v, want %v", got, tc.want)
			}
			if stats.Segments != len(tc.want) || stats.Records != int64(len(tc.want)) || stats.Bytes != int64(len(tc.want))*(headerSize+1) {
				t.Errorf("stats %+v, want %d segments of one 1-byte record", stats, len(tc.want))
			}
		})
	}
}

// Replay logs each segment at Info, with how much it held.
func TestReplayLogsProgress(t *testing.T) {
	dir := t.TempDir()
	logAll(t, dir, Options{}, testRecords(3))
	logAll(t, dir, Options{}, nil)
	logger, logged := bufferLogger()
	replayAll(t, dir, logger)
	lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("logged %d lines, want one per segment: %s", len(lines), logged)
	}
	size := fileSize(t, segmentPath(dir, 0))
	for i, want := range [][]string{
		{"level=INFO", "segment=0", fmt.Sprintf("bytes=%d", size), "records=3", "elapsed="},
		{"level=INFO", "segment=1", "bytes=0", "records=0", "elapsed="},
	} {
		for _, s := range want {
			if !strings.Contains(lines[i], s) {
				t.Errorf("line %q does not contain %q", lines[i], s)
			}
		}
	}
}

// A bad record in the middle of a segment cannot be told from a torn tail:
// Replay cuts the segment there and warns, and the good records after it
// are lost. This test pins that behaviour down.
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
	got, stats := replayStats(t, dir, ReplayOptions{Logger: logger})
	checkRecords(t, got, want[:2])
	checkStats(t, stats, ReplayStats{Segments: 1, Records: 2, Bytes: off, DroppedBytes: size - off,
		Repairs: []CorruptionError{{Segment: 0, Offset: off}}})
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
	stats, err := Replay(dir, ReplayOptions{}, func(rec []byte) error {
		if calls++; calls == 4 {
			return stop
		}
		return nil
	})
	if err != stop {
		t.Fatalf("err = %v, want the error fn returned, as it is", err)
	}
	if calls != 4 {
		t.Errorf("fn called %d times, want 4", calls)
	}
	off := frameOffsets(t, segmentPath(dir, 0))[3]
	checkStats(t, stats, ReplayStats{Records: 3, Bytes: off})
	if got, size := fileSize(t, segmentPath(dir, 0)), int64(len(segmentBytes(want))); got != size {
		t.Errorf("segment cut to %d bytes, want it untouched at %d", got, size)
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
			if _, err := Replay(dir, ReplayOptions{}, fn); err != nil {
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
		_, err = Replay(dir, ReplayOptions{}, func(rec []byte) error {
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
