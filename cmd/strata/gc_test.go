package main

import "testing"

func TestGCPercentFor(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, maxGCPercent},
		{1 << 10, maxGCPercent},        // a tiny heap: bounded
		{10 << 20, 160},                // 16 MiB over 10 MiB live
		{minGCHeadroom * 100 / 30, 30}, // where 30% is the headroom
		{1 << 30, 30},                  // a large heap keeps its percentage
	} {
		if got := gcPercentFor(c.live, minGCHeadroom, 30); got != c.want {
			t.Errorf("gcPercentFor(%d) = %d, want %d", c.live, got, c.want)
		}
	}
}
