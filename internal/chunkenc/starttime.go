package chunkenc

import (
	"cmp"
	"slices"
)

// StartTime is a change of a series' start (created) time: from the sample
// at T on, the series counts from ST (0: unknown).
type StartTime struct {
	T, ST int64
}

// StartAt returns the start time in effect for a sample at t, given the
// changes of a series and a hint: the index of the change in effect for an
// earlier sample, which it returns updated. Samples are visited in time
// order, so the search moves forward only.
func StartAt(changes []StartTime, t int64, hint int) (st int64, idx int) {
	idx = hint
	if idx < 0 || idx >= len(changes) || changes[idx].T > t {
		// Out of step with the hint (a Seek backwards cannot happen, but
		// the first call has none): search.
		i, found := slices.BinarySearchFunc(changes, t, func(c StartTime, t int64) int { return cmp.Compare(c.T, t) })
		if !found {
			i--
		}
		if i < 0 {
			return 0, -1
		}
		idx = i
	}
	for idx+1 < len(changes) && changes[idx+1].T <= t {
		idx++
	}
	return changes[idx].ST, idx
}
