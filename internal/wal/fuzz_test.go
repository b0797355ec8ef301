package wal

import (
	"errors"
	"os"
	"testing"
)

// FuzzReplay replays arbitrary bytes as a segment. As the last segment they
// must replay without error (a bad tail is cut off) and, once cut, replay
// the same again; as an older segment they must replay cleanly or fail with
// a *CorruptionError at the offset where the cut would have been.
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
		count := func() (int, error) {
			n := 0
			err := Replay(dir, nil, func([]byte) error { n++; return nil })
			return n, err
		}
		n1, err := count()
		if err != nil {
			t.Fatalf("Replay of a lone segment: %v", err)
		}
		cut := fileSize(t, segmentPath(dir, 0))
		if cut > int64(len(data)) {
			t.Fatalf("segment grew from %d to %d bytes", len(data), cut)
		}
		n2, err := count()
		if err != nil || n2 != n1 || fileSize(t, segmentPath(dir, 0)) != cut {
			t.Fatalf("second Replay: %d records, err %v, size %d; want %d records, no error, size %d",
				n2, err, fileSize(t, segmentPath(dir, 0)), n1, cut)
		}

		// The same bytes followed by a good segment.
		dir = t.TempDir()
		if err := os.WriteFile(segmentPath(dir, 0), data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(segmentPath(dir, 1), good, 0o644); err != nil {
			t.Fatal(err)
		}
		n3, err := count()
		var cerr *CorruptionError
		switch {
		case err == nil:
			if cut != int64(len(data)) || n3 != n1+5 {
				t.Fatalf("clean replay of %d records, but the lone segment was cut from %d to %d bytes with %d records", n3, len(data), cut, n1)
			}
		case errors.As(err, &cerr):
			if cerr.Segment != 0 || cerr.Offset != cut || n3 != n1 {
				t.Fatalf("%v after %d records, want corruption in segment 0 at offset %d after %d records", err, n3, cut, n1)
			}
		default:
			t.Fatalf("Replay: %v", err)
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
