package wal

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testRecord returns record i: its number followed by filler, of a length
// that varies with i so records straddle segment boundaries in every way.
func testRecord(i int) []byte {
	r := fmt.Appendf(nil, "record-%06d:", i)
	return append(r, strings.Repeat("x", i%37)...)
}

func testRecords(n int) [][]byte {
	recs := make([][]byte, n)
	for i := range recs {
		recs[i] = testRecord(i)
	}
	return recs
}

// replayAll replays dir and returns copies of its records.
func replayAll(t testing.TB, dir string, logger *slog.Logger) [][]byte {
	t.Helper()
	got, _ := replayStats(t, dir, ReplayOptions{Logger: logger})
	return got
}

// replayStats replays dir and returns copies of its records and the stats.
func replayStats(t testing.TB, dir string, opts ReplayOptions) ([][]byte, ReplayStats) {
	t.Helper()
	var got [][]byte
	stats, err := Replay(dir, opts, func(rec []byte) error {
		got = append(got, bytes.Clone(rec))
		return nil
	})
	if err != nil {
		t.Fatalf("Replay: %v", err)
	}
	if stats.Records != int64(len(got)) {
		t.Errorf("stats count %d records, fn saw %d", stats.Records, len(got))
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

// logAll opens a WAL in dir, logs recs one per call and closes it.
func logAll(t testing.TB, dir string, opts Options, recs [][]byte) {
	t.Helper()
	w, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Log(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func segmentPath(dir string, n int) string { return filepath.Join(dir, segmentName(n)) }

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Size()
}

// bufferLogger returns a logger that writes text to the returned buffer.
func bufferLogger() (*slog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	return slog.New(slog.NewTextHandler(&buf, nil)), &buf
}

// copyDir copies the regular files of src into a new temporary directory.
func copyDir(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}
