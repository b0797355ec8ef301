package chunkenc

import "testing"

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
