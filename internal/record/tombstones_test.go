package record

import (
	"errors"
	"math"
	"slices"
	"testing"
)

func TestTombstonesRoundTrip(t *testing.T) {
	entries := []RefTombstone{
		{Ref: 1, Mint: 1_700_000_000_000, Maxt: 1_700_000_015_000},
		{Ref: math.MaxUint64, Mint: math.MinInt64, Maxt: math.MaxInt64},
		{Ref: 0, Mint: -5, Maxt: -5},
	}
	rec := EncodeTombstones(nil, entries)
	if Kind(rec) != Tombstones {
		t.Fatalf("kind %v", Kind(rec))
	}
	var d Decoder
	got, err := d.Tombstones(rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, entries) {
		t.Fatalf("got %v, want %v", got, entries)
	}
	for n := range len(rec) {
		if _, err := d.Tombstones(rec[:n], nil); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d bytes: got %v", n, err)
		}
	}
	if _, err := d.Tombstones(append(slices.Clone(rec), 0), nil); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("trailing byte: got %v", err)
	}
	// Maxt before Mint: a length that wraps past the end of time.
	bad := EncodeTombstones(nil, []RefTombstone{{Ref: 1, Mint: 10, Maxt: 5}})
	if _, err := d.Tombstones(bad, nil); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("interval past the end of time: got %v", err)
	}
}

func FuzzDecodeTombstones(f *testing.F) {
	f.Add(EncodeTombstones(nil, []RefTombstone{{Ref: 3, Mint: 1, Maxt: 9}, {Ref: 4, Mint: -9, Maxt: 9}}))
	f.Fuzz(func(t *testing.T, rec []byte) {
		var d Decoder
		got, err := d.Tombstones(rec, nil)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		for _, e := range got {
			if e.Maxt < e.Mint {
				t.Fatalf("decoded %v", e)
			}
		}
		again, err := d.Tombstones(EncodeTombstones(nil, got), nil)
		if err != nil || !slices.Equal(again, got) {
			t.Fatalf("re-encoded tombstones decode as %v, %v", again, err)
		}
	})
}
