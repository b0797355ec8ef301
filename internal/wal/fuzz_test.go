package wal

import (
	"os"
	"testing"
)

// FuzzReplay replays arbitrary bytes as a segment. They must replay
// without error, a bad record and everything after it cut off, and once
// cut, replay the same again with nothing to repair. Followed by a good
// segment they must be cut the same way, and the good segment replayed in
// full after them.
func FuzzReplay(f *testing.F) {
	good := segmentBytes(testRecords(5))
	f.Add(good)
	f.Add(good[:len(good)-3])
	f.Add(append(good[:len(good):len(good)], make([]byte, 20)...))
	f.Add(make([]byte, 16))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4, 5})
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(segmentPath(dir, 0), data, 0o644); err != nil {
			t.Fatal(err)
		}
		replay := func(from int) (int, ReplayStats) {
			n := 0
			stats, err := Replay(dir, ReplayOptions{From: from}, func([]byte) error { n++; return nil })
			if err != nil {
				t.Fatalf("Replay: %v", err)
			}
			return n, stats
		}
		n1, stats := replay(0)
		cut := fileSize(t, segmentPath(dir, 0))
		if cut > int64(len(data)) {
			t.Fatalf("segment grew from %d to %d bytes", len(data), cut)
		}
		repairs := 0
		if cut < int64(len(data)) {
			repairs = 1
		}
		if len(stats.Repairs) != repairs || stats.Bytes != cut || stats.DroppedBytes != int64(len(data))-cut ||
			stats.Records != int64(n1) || stats.Segments != 1 {
			t.Fatalf("stats %+v after cutting %d bytes to %d with %d records", stats, len(data), cut, n1)
		}
		if repairs == 1 && stats.Repairs[0].Offset != cut {
			t.Fatalf("repair at offset %d, segment cut at %d", stats.Repairs[0].Offset, cut)
		}
		n2, stats := replay(0)
		if n2 != n1 || len(stats.Repairs) != 0 || fileSize(t, segmentPath(dir, 0)) != cut {
			t.Fatalf("second Replay: %d records, stats %+v, size %d; want %d records, no repairs, size %d",
				n2, stats, fileSize(t, segmentPath(dir, 0)), n1, cut)
		}

		// The same bytes followed by a good segment.
		dir = t.TempDir()
		if err := os.WriteFile(segmentPath(dir, 0), data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(segmentPath(dir, 1), good, 0o644); err != nil {
			t.Fatal(err)
		}
		// From 1, they are not even read.
		if n, _ := replay(1); n != 5 || fileSize(t, segmentPath(dir, 0)) != int64(len(data)) {
			t.Fatalf("Replay from 1: %d records, segment 0 has %d bytes; want 5 and %d untouched",
				n, fileSize(t, segmentPath(dir, 0)), len(data))
		}
		n3, stats := replay(0)
		if n3 != n1+5 || len(stats.Repairs) != repairs || fileSize(t, segmentPath(dir, 0)) != cut {
			t.Fatalf("%d records, stats %+v, segment 0 cut to %d; want %d records, %d repairs, cut to %d",
				n3, stats, fileSize(t, segmentPath(dir, 0)), n1+5, repairs, cut)
		}
	})
}

// segmentBytes returns the bytes of a segment holding recs.
func segmentBytes(recs [][]byte) []byte {
	var b []byte
	for _, r := range recs {
		b = appendFrame(b, r)
	}
	return b
}
