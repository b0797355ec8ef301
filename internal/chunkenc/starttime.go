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

// ClipStarts appends to dst, which holds the changes of samples before
// mint (or none), those that samples in [mint, maxt] need and returns dst:
// the start time in effect at mint, as a change at mint, unless dst
// already ends with it (an empty dst with unknown, 0), then the changes
// after mint up to maxt. A change to the start time already in effect is
// left out. It is what a block of that range keeps of a series' changes,
// and how the changes of consecutive parts of a series are put together.
func ClipStarts(dst, changes []StartTime, mint, maxt int64) []StartTime {
	var prev int64
	if len(dst) > 0 {
		prev = dst[len(dst)-1].ST
	}
	st, i := StartAt(changes, mint, -1)
	if st != prev {
		dst = append(dst, StartTime{T: mint, ST: st})
	}
	for _, c := range changes[i+1:] {
		if c.T > maxt {
			break
		}
		if c.ST != st {
			dst = append(dst, c)
			st = c.ST
		}
	}
	return dst
}
