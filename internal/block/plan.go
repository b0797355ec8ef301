package block

import (
	"time"
)

// MaxBlockDuration bounds merged blocks, as in Prometheus: a block is
// deleted by retention only whole, so the largest block is also at most a
// tenth of the retention time.
const MaxBlockDuration = 31 * 24 * time.Hour

// Ranges returns the ranges blocks are merged into: the head's block
// range, then three times the previous one (2h, 6h, 18h, 54h, ...), up to
// maxDuration, or if that is 0 the smaller of 31 days and a tenth of the
// retention time.
func Ranges(blockRange int64, maxDuration, retention time.Duration) []int64 {
	limit := maxDuration.Milliseconds()
	if limit <= 0 {
		limit = MaxBlockDuration.Milliseconds()
		if r := retention.Milliseconds() / 10; r > 0 {
			limit = min(limit, r)
		}
	}
	ranges := []int64{blockRange}
	for r := blockRange * 3; r <= limit; r *= 3 {
		ranges = append(ranges, r)
	}
	return ranges
}

// PlanMerge returns blocks to merge into one, or nil. Blocks that overlap
// in time come first, whatever their size (see overlapping). Then it looks at the
// ranges from the second on, smallest first, and takes the first aligned
// window of a range holding two or more blocks that either fill the
// window's time or end before the newest block starts, as Prometheus'
// planner does. The newest block is never merged: it is the one the head
// just wrote, and a window it may still fill waits for it.
func PlanMerge(blocks []Meta, ranges []int64) []Meta {
	if group := overlapping(blocks); group != nil {
		return group
	}
	if len(blocks) < 3 {
		return nil
	}
	newest := blocks[len(blocks)-1].MinTime
	blocks = blocks[:len(blocks)-1]
	for _, r := range ranges[1:] {
		for _, group := range splitByRange(blocks, r) {
			if len(group) < 2 {
				continue
			}
			mint, maxt := group[0].MinTime, group[len(group)-1].MaxTime
			if maxt-mint+1 == r || maxt < newest {
				return group
			}
		}
	}
	return nil
}

// splitByRange groups blocks, sorted by time, by the window of length r
// holding them; a block that does not fit in one window is left out.
func splitByRange(blocks []Meta, r int64) [][]Meta {
	var groups [][]Meta
	for i := 0; i < len(blocks); {
		lo := RangeStart(blocks[i].MinTime, r)
		hi := lo + r - 1
		if blocks[i].MaxTime > hi {
			i++
			continue
		}
		var group []Meta
		for ; i < len(blocks) && blocks[i].MaxTime <= hi; i++ {
			group = append(group, blocks[i])
		}
		groups = append(groups, group)
	}
	return groups
}

// overlapping returns the first group of blocks, sorted by MinTime, whose
// time ranges overlap one another's in a chain, or nil if none do: a late
// sample's block and the one (or ones) of its range.
func overlapping(blocks []Meta) []Meta {
	for i := 0; i < len(blocks); {
		j, maxt := i+1, blocks[i].MaxTime
		for j < len(blocks) && blocks[j].MinTime <= maxt {
			maxt = max(maxt, blocks[j].MaxTime)
			j++
		}
		if j > i+1 {
			return blocks[i:j]
		}
		i = j
	}
	return nil
}

// RangeStart returns the start of the block range of length r holding t.
func RangeStart(t, r int64) int64 {
	m := t % r
	if m < 0 {
		m += r
	}
	return t - m
}
