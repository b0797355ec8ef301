package wal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func TestLogReplayAcrossSegments(t *testing.T) {
	dir := t.TempDir()
	const segmentSize = 200
	want := testRecords(300)
	logAll(t, dir, Options{SegmentSize: segmentSize}, want)

	first, last, err := segmentRange(dir)
	if err != nil {
		t.Fatal(err)
	}
	if first != 0 || last < 10 {
		t.Fatalf("segments %d..%d, want 0..(at least 10)", first, last)
	}
	for n := first; n <= last; n++ {
		if size := fileSize(t, segmentPath(dir, n)); size > segmentSize {
			t.Errorf("segment %d has %d bytes, more than the segment size %d", n, size, segmentSize)
		}
	}
	checkRecords(t, replayAll(t, dir, nil), want)
}

// segmentRange is WAL.Segments without an open WAL, for tests.
func segmentRange(dir string) (first, last int, err error) {
	return (&WAL{dir: dir}).Segments()
}

func TestLogBatchGoesToOneSegment(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(dir, Options{SegmentSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	a := bytes.Repeat([]byte("a"), 50)
	if err := w.Log(a); err != nil {
		t.Fatal(err)
	}
	// 58 bytes in segment 0; the batch of three 10-byte records (54 bytes
	// framed) would overflow it, so all three start segment 1.
	b, c, d := []byte("bbbbbbbbbb"), []byte("cccccccccc"), []byte("dddddddddd")
	if err := w.Log(b, c, d); err != nil {
		t.Fatal(err)
	}
	if got, want := fileSize(t, segmentPath(dir, 0)), int64(headerSize+50); got != want {
		t.Errorf("segment 0 has %d bytes, want %d", got, want)
	}
	if got, want := fileSize(t, segmentPath(dir, 1)), int64(3*(headerSize+10)); got != want {
		t.Errorf("segment 1 has %d bytes, want %d", got, want)
	}
	if got, want := w.BytesWritten(), int64(headerSize+50+3*(headerSize+10)); got != want {
		t.Errorf("BytesWritten = %d, want %d", got, want)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checkRecords(t, replayAll(t, dir, nil), [][]byte{a, b, c, d})
}

func TestLogRecordLargerThanSegment(t *testing.T) {
	dir := t.TempDir()
	small1, big, small2 := []byte("small1"), bytes.Repeat([]byte("B"), 500), []byte("small2")
	w, err := Open(dir, Options{SegmentSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range [][]byte{small1, big, small2} {
		if err := w.Log(r); err != nil {
			t.Fatal(err)
		}
	}
	// A batch bigger than a segment is split, the oversized record alone.
	if err := w.Log(small1, big, small2); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// The second batch's first record still fits after small2.
	wantSizes := []int64{headerSize + 6, headerSize + 500, 2 * (headerSize + 6), headerSize + 500, headerSize + 6}
	for n, want := range wantSizes {
		if got := fileSize(t, segmentPath(dir, n)); got != want {
			t.Errorf("segment %d has %d bytes, want %d", n, got, want)
		}
	}
	checkRecords(t, replayAll(t, dir, nil), [][]byte{small1, big, small2, small1, big, small2})
}

func TestOpenAppendsInNewSegment(t *testing.T) {
	dir := t.TempDir()
	logAll(t, dir, Options{}, [][]byte{[]byte("first")})
	logAll(t, dir, Options{}, [][]byte{[]byte("second")})
	first, last, err := segmentRange(dir)
	if err != nil {
		t.Fatal(err)
	}
	if first != 0 || last != 1 {
		t.Fatalf("segments %d..%d, want 0..1", first, last)
	}
	for n, rec := range []string{"first", "second"} {
		if got := fileSize(t, segmentPath(dir, n)); got != int64(headerSize+len(rec)) {
			t.Errorf("segment %d has %d bytes, want only %q", n, got, rec)
		}
	}
	checkRecords(t, replayAll(t, dir, nil), [][]byte{[]byte("first"), []byte("second")})
}

func TestOpenCreatesDir(t *testing.T) {
	dir := t.TempDir() + "/a/b/wal"
	w, err := Open(dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.Dir() != dir {
		t.Errorf("Dir() = %q, want %q", w.Dir(), dir)
	}
	if first, last, err := w.Segments(); err != nil || first != 0 || last != 0 {
		t.Errorf("Segments() = %d, %d, %v; want 0, 0, nil", first, last, err)
	}
}

func TestConcurrentLog(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(dir, Options{SegmentSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	const writers, calls = 8, 200
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range calls {
				// One to three records per call.
				var recs [][]byte
				for j := range i%3 + 1 {
					recs = append(recs, fmt.Appendf(nil, "%d/%d/%d", g, i, j))
				}
				if err := w.Log(recs...); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	seen := make(map[string]bool)
	next := make([]int, writers) // next call number expected from each writer
	nextRec := make([]int, writers)
	_, err = Replay(dir, ReplayOptions{}, func(rec []byte) error {
		var g, i, j int
		if _, err := fmt.Sscanf(string(rec), "%d/%d/%d", &g, &i, &j); err != nil {
			return fmt.Errorf("record %q: %v", rec, err)
		}
		if seen[string(rec)] {
			return fmt.Errorf("record %q replayed twice", rec)
		}
		seen[string(rec)] = true
		// Each writer's calls, and the records within a call, come back
		// in the order it logged them.
		if i != next[g] || j != nextRec[g] {
			return fmt.Errorf("record %q out of order: want %d/%d/%d", rec, g, next[g], nextRec[g])
		}
		nextRec[g]++
		if nextRec[g] == i%3+1 {
			next[g]++
			nextRec[g] = 0
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for g := range writers {
		if next[g] != calls {
			t.Errorf("writer %d: %d calls replayed, want %d", g, next[g], calls)
		}
	}
}

func TestClosed(t *testing.T) {
	w, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Log([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Log([]byte("y")); !errors.Is(err, ErrClosed) {
		t.Errorf("Log after Close: err = %v, want ErrClosed", err)
	}
	if err := w.Sync(); !errors.Is(err, ErrClosed) {
		t.Errorf("Sync after Close: err = %v, want ErrClosed", err)
	}
	if _, err := w.NextSegment(); !errors.Is(err, ErrClosed) {
		t.Errorf("NextSegment after Close: err = %v, want ErrClosed", err)
	}
	if err := w.Truncate(1); !errors.Is(err, ErrClosed) {
		t.Errorf("Truncate after Close: err = %v, want ErrClosed", err)
	}
	if err := w.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close: err = %v, want ErrClosed", err)
	}
	checkRecords(t, replayAll(t, w.Dir(), nil), [][]byte{[]byte("x")})
}

func TestLogRejectsEmptyRecord(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Log([]byte("ok"), nil); !errors.Is(err, ErrEmptyRecord) {
		t.Fatalf("err = %v, want ErrEmptyRecord", err)
	}
	// Nothing of the batch was written, not even its good record.
	if got := fileSize(t, segmentPath(dir, 0)); got != 0 {
		t.Errorf("segment holds %d bytes after a rejected batch, want 0", got)
	}
	if err := w.Log(); err != nil {
		t.Errorf("Log with no records: %v", err)
	}
}

func TestSync(t *testing.T) {
	w, err := Open(t.TempDir(), Options{SegmentSize: 50})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := range 20 {
		if err := w.Log(testRecord(i)); err != nil {
			t.Fatal(err)
		}
		if err := w.Sync(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOpenRejectsNegativeSegmentSize(t *testing.T) {
	if _, err := Open(t.TempDir(), Options{SegmentSize: -1}); err == nil {
		t.Fatal("Open with a negative segment size succeeded")
	}
}

func TestSegmentsIgnoresOtherFiles(t *testing.T) {
	dir := t.TempDir()
	logAll(t, dir, Options{}, [][]byte{[]byte("a")})
	for _, name := range []string{"checkpoint.00000001", "0000001", "00000002.tmp", "x00000003"} {
		if err := os.WriteFile(dir+"/"+name, []byte("junk"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(dir+"/00000009", 0o755); err != nil {
		t.Fatal(err)
	}
	if first, last, err := segmentRange(dir); err != nil || first != 0 || last != 0 {
		t.Fatalf("Segments = %d, %d, %v; want 0, 0, nil", first, last, err)
	}
	checkRecords(t, replayAll(t, dir, nil), [][]byte{[]byte("a")})
}

func TestOpenRejectsUnknownSyncPolicy(t *testing.T) {
	if _, err := Open(t.TempDir(), Options{Sync: SyncAlways + 1}); err == nil {
		t.Fatal("Open with an unknown sync policy succeeded")
	}
}

func TestParseSyncPolicy(t *testing.T) {
	for _, p := range []SyncPolicy{SyncNever, SyncAlways} {
		got, err := ParseSyncPolicy(p.String())
		if err != nil || got != p {
			t.Errorf("ParseSyncPolicy(%q) = %v, %v; want %v", p.String(), got, err, p)
		}
	}
	if SyncNever.String() != "never" || SyncAlways.String() != "always" || SyncPolicy(7).String() != "SyncPolicy(7)" {
		t.Errorf("String() = %q, %q, %q", SyncNever, SyncAlways, SyncPolicy(7))
	}
	for _, s := range []string{"", "Always", "sometimes"} {
		if _, err := ParseSyncPolicy(s); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", s)) {
			t.Errorf("ParseSyncPolicy(%q): err = %v, want one naming the value", s, err)
		}
	}
}

// SyncAlways logs the same records as SyncNever, across segments and from
// concurrent callers. (Its fsyncs are counted in groupcommit_test.go.)
func TestSyncAlwaysLogs(t *testing.T) {
	dir := t.TempDir()
	want := testRecords(50)
	logAll(t, dir, Options{Sync: SyncAlways, SegmentSize: 300}, want)
	checkRecords(t, replayAll(t, dir, nil), want)
}

func TestNextSegment(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// The current segment is empty: it is the next one already.
	if n, err := w.NextSegment(); err != nil || n != 0 {
		t.Fatalf("NextSegment on an empty segment = %d, %v; want 0", n, err)
	}
	recs := testRecords(6)
	var bounds []int // bounds[i]: NextSegment after record i
	for i, r := range recs {
		if err := w.Log(r); err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			n, err := w.NextSegment()
			if err != nil {
				t.Fatal(err)
			}
			bounds = append(bounds, n)
		}
	}
	if !slices.Equal(bounds, []int{1, 2, 3}) {
		t.Fatalf("NextSegment returned %v, want [1 2 3]", bounds)
	}
	if first, last, err := w.Segments(); err != nil || first != 0 || last != 3 {
		t.Fatalf("Segments() = %d, %d, %v; want 0, 3", first, last, err)
	}
	if err := w.Log([]byte("in 3")); err != nil {
		t.Fatal(err)
	}
	// Replaying from each bound gives the records logged after it, which
	// is what a checkpoint at that bound must be completed with.
	for i, n := range bounds {
		got, _ := replayStats(t, copyDir(t, dir), ReplayOptions{From: n})
		checkRecords(t, got, append(slices.Clone(recs[2*(i+1):]), []byte("in 3")))
	}
}

func TestTruncate(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := range 4 {
		if err := w.Log(testRecord(i)); err != nil {
			t.Fatal(err)
		}
		if _, err := w.NextSegment(); err != nil {
			t.Fatal(err)
		}
	}
	// Segments 0..3 hold a record each; 4 is being written.
	check := func(wantFirst int) {
		t.Helper()
		if first, last, err := w.Segments(); err != nil || first != wantFirst || last != 4 {
			t.Fatalf("Segments() = %d, %d, %v; want %d, 4", first, last, err, wantFirst)
		}
		got, _ := replayStats(t, copyDir(t, dir), ReplayOptions{From: wantFirst})
		checkRecords(t, got, testRecords(4)[wantFirst:])
	}
	if err := w.Truncate(0); err != nil {
		t.Fatal(err)
	}
	check(0)
	if err := w.Truncate(2); err != nil {
		t.Fatal(err)
	}
	check(2)
	if err := w.Truncate(2); err != nil {
		t.Fatalf("Truncate again: %v", err)
	}
	check(2)
	// Never the segment being written, however far before reaches.
	if err := w.Truncate(100); err != nil {
		t.Fatal(err)
	}
	check(4)
	if err := w.Log([]byte("still writing")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checkRecords(t, replayAll(t, dir, nil), [][]byte{[]byte("still writing")})
}

// NextSegment keeps its promise while other goroutines log: every record
// of a Log call that returned before NextSegment was called is below the
// segment it returns.
func TestNextSegmentConcurrentLog(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	const writers, calls = 4, 300
	// returned[g] is the number of calls writer g has seen return.
	var returned [writers]atomic.Int64
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range calls {
				if err := w.Log(fmt.Appendf(nil, "%d/%d", g, i)); err != nil {
					t.Error(err)
					return
				}
				returned[g].Add(1)
			}
		})
	}
	type bound struct {
		seg      int
		returned [writers]int64
	}
	var bounds []bound
	for range 20 {
		var b bound
		for g := range writers {
			b.returned[g] = returned[g].Load()
		}
		if b.seg, err = w.NextSegment(); err != nil {
			t.Fatal(err)
		}
		bounds = append(bounds, b)
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// segOf[g][i] is the segment that holds call i of writer g.
	var segOf [writers][calls]int
	for n := 0; ; n++ {
		if _, err := os.Stat(segmentPath(dir, n)); err != nil {
			break
		}
		_, err := Replay(dir, ReplayOptions{From: n}, func(rec []byte) error {
			var g, i int
			if _, err := fmt.Sscanf(string(rec), "%d/%d", &g, &i); err != nil {
				return err
			}
			segOf[g][i] = n // the highest From that still sees it is its segment
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range bounds {
		for g := range writers {
			for i := range b.returned[g] {
				if segOf[g][i] >= b.seg {
					t.Fatalf("call %d of writer %d returned before NextSegment returned %d, but is in segment %d", i, g, b.seg, segOf[g][i])
				}
			}
		}
	}
}
