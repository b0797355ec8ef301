package block

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

func TestBlockRanges(t *testing.T) {
	h := time.Hour.Milliseconds()
	for _, tc := range []struct {
		maxDuration, retention time.Duration
		want                   []int64
	}{
		// 15 days of retention: blocks up to 36h.
		{0, 15 * 24 * time.Hour, []int64{2 * h, 6 * h, 18 * h}},
		// No retention: up to 31 days.
		{0, 0, []int64{2 * h, 6 * h, 18 * h, 54 * h, 162 * h, 486 * h}},
		{2 * time.Hour, 0, []int64{2 * h}},
	} {
		if got := Ranges(2*h, tc.maxDuration, tc.retention); !slices.Equal(got, tc.want) {
			t.Errorf("Ranges(2h, %s, %s) = %v, want %v", tc.maxDuration, tc.retention, got, tc.want)
		}
	}
}

func TestPlanMerge(t *testing.T) {
	metas := func(ranges ...[2]int64) []Meta {
		var out []Meta
		for _, r := range ranges {
			out = append(out, Meta{MinTime: r[0], MaxTime: r[1]})
		}
		return out
	}
	ranges := []int64{10, 30, 90}
	for _, tc := range []struct {
		blocks []Meta
		want   string
	}{
		{metas([2]int64{0, 9}, [2]int64{10, 19}), "[]"},
		// The 30-window [0, 29] is full.
		{metas([2]int64{0, 9}, [2]int64{10, 19}, [2]int64{20, 29}, [2]int64{30, 39}), "[0-9 10-19 20-29]"},
		// The newest block is never merged; the two before it are, as in
		// Prometheus, and [0, 19] joins [20, 29] once a newer one comes.
		{metas([2]int64{0, 9}, [2]int64{10, 19}, [2]int64{20, 29}), "[0-9 10-19]"},
		// A gap: [30, 59] holds two blocks before the newest.
		{metas([2]int64{0, 29}, [2]int64{30, 39}, [2]int64{40, 49}, [2]int64{70, 79}), "[30-39 40-49]"},
		// Next level: three 30-blocks in [0, 89] before the newest.
		{metas([2]int64{0, 29}, [2]int64{30, 59}, [2]int64{60, 89}, [2]int64{90, 99}), "[0-29 30-59 60-89]"},
	} {
		var got []string
		for _, m := range PlanMerge(tc.blocks, ranges) {
			got = append(got, fmt.Sprintf("%d-%d", m.MinTime, m.MaxTime))
		}
		if s := fmt.Sprint(got); s != tc.want {
			t.Errorf("PlanMerge(%v) = %s, want %s", tc.blocks, s, tc.want)
		}
	}
}
