package chunkenc

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestStartAt(t *testing.T) {
	changes := []StartTime{{T: 10, ST: 1}, {T: 20, ST: 0}, {T: 30, ST: 25}}
	for _, tc := range []struct {
		t, hint int
		want    int64
	}{
		{5, -1, 0}, {10, -1, 1}, {15, -1, 1}, {20, -1, 0}, {29, 0, 0}, {30, 1, 25}, {99, 0, 25}, {12, 2, 1},
	} {
		if got, _ := StartAt(changes, int64(tc.t), tc.hint); got != tc.want {
			t.Errorf("StartAt(%d, hint %d) = %d, want %d", tc.t, tc.hint, got, tc.want)
		}
	}
}

// TestClipStarts checks that the clipped changes give every time in the
// range the start time the whole history gives it, with no change that
// repeats the one before.
func TestClipStarts(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		var changes []StartTime
		for ts := int64(rng.IntN(5)); len(changes) < rng.IntN(6); ts += 1 + int64(rng.IntN(10)) {
			changes = append(changes, StartTime{T: ts, ST: int64(rng.IntN(3)) * 7})
		}
		mint := int64(rng.IntN(40))
		maxt := mint + int64(rng.IntN(30))
		// Half the time after the changes of earlier samples.
		var before []StartTime
		if mint > 0 && rng.IntN(2) == 0 {
			before = []StartTime{{T: mint - 1 - int64(rng.IntN(int(mint))), ST: int64(rng.IntN(3)) * 7}}
		}
		clipped := ClipStarts(slices.Clone(before), changes, mint, maxt)
		if !slices.Equal(clipped[:len(before)], before) {
			t.Fatalf("ClipStarts(%v, %v, %d, %d) = %v changed what it appends to", before, changes, mint, maxt, clipped)
		}
		for i, c := range clipped[len(before):] {
			i += len(before)
			if c.T < mint || c.T > maxt || i > 0 && (c.T <= clipped[i-1].T || c.ST == clipped[i-1].ST) || i == 0 && c.ST == 0 {
				t.Fatalf("ClipStarts(%v, %v, %d, %d) = %v", before, changes, mint, maxt, clipped)
			}
		}
		for ts := mint; ts <= maxt; ts++ {
			want, _ := StartAt(changes, ts, -1)
			if got, _ := StartAt(clipped, ts, -1); got != want {
				t.Fatalf("ClipStarts(%v, %v, %d, %d) = %v: start %d at %d, want %d", before, changes, mint, maxt, clipped, got, ts, want)
			}
		}
	}
}
