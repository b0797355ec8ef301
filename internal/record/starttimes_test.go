package record

import (
	"errors"
	"math"
	"slices"
	"testing"
)

func TestStartTimesRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries []RefStartTime
	}{
		{"empty", nil},
		{"one", []RefStartTime{{Ref: 1, T: 1_700_000_015_000, ST: 1_700_000_000_000}}},
		{"extremes", []RefStartTime{
			{Ref: math.MaxUint64, T: math.MaxInt64, ST: math.MinInt64},
			{Ref: 0, T: math.MinInt64, ST: math.MaxInt64},
			{Ref: 7, T: -5, ST: -5},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := EncodeStartTimes(nil, tc.entries)
			if Kind(rec) != StartTimes {
				t.Fatalf("kind %v", Kind(rec))
			}
			var d Decoder
			got, err := d.StartTimes(rec, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.entries) {
				t.Fatalf("got %v, want %v", got, tc.entries)
			}
		})
	}
}

func TestStartTimesRejects(t *testing.T) {
	rec := EncodeStartTimes(nil, []RefStartTime{{Ref: 1, T: 2, ST: 1}, {Ref: 300, T: 4000, ST: 3000}})
	var d Decoder
	for n := range len(rec) {
		if _, err := d.StartTimes(rec[:n], nil); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d bytes: got %v", n, err)
		}
	}
	if _, err := d.StartTimes(append(slices.Clone(rec), 0), nil); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("trailing byte: got %v", err)
	}
	huge := []byte{byte(StartTimes), 0xff, 0xff, 0xff, 0xff, 0x0f, 1, 2, 3}
	if _, err := d.StartTimes(huge, nil); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("huge count: got %v", err)
	}
	dst := []RefStartTime{{Ref: 9}}
	if got, err := d.StartTimes(rec[:len(rec)-1], dst); err == nil || len(got) != 1 {
		t.Fatalf("on error dst must keep its length: %v, %v", got, err)
	}
}

func FuzzDecodeStartTimes(f *testing.F) {
	f.Add(EncodeStartTimes(nil, []RefStartTime{{Ref: 1, T: 2, ST: 1}, {Ref: 2, T: 5, ST: 0}}))
	f.Fuzz(func(t *testing.T, rec []byte) {
		var d Decoder
		got, err := d.StartTimes(rec, nil)
		if err != nil {
			return
		}
		again, err := d.StartTimes(EncodeStartTimes(nil, got), nil)
		if err != nil || !slices.Equal(again, got) {
			t.Fatalf("round trip: %v, %v != %v", err, again, got)
		}
	})
}
