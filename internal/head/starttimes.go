package head

import (
	"cmp"
	"slices"

	"github.com/strata-db/strata/internal/record"
)

// startTime is a change of a series' start (created) time: from the sample
// at t on, the series counts from st (0: unknown).
type startTime struct {
	t, st int64
}

// startTimes is the history of a series' start time, oldest first, by t.
// Entries are only appended, so a reader may keep a slice of it taken
// under the series' lock.
type startTimes struct {
	list []startTime
}

// currentStart returns the start time of the newest sample, 0 if unknown.
// mu must be held.
func (s *memSeries) currentStart() int64 {
	if s.starts == nil || len(s.starts.list) == 0 {
		return 0
	}
	return s.starts.list[len(s.starts.list)-1].st
}

// setStart records that from the sample at t on the series counts from st,
// unless it already does or a later change is recorded. mu must be held.
func (s *memSeries) setStart(t, st int64) {
	if s.starts == nil {
		if st == 0 {
			return
		}
		s.starts = &startTimes{}
	}
	l := s.starts.list
	if n := len(l); n > 0 && (l[n-1].st == st || l[n-1].t >= t) {
		return
	}
	s.starts.list = append(l, startTime{t: t, st: st})
}

// startsSnapshot returns the series' start time changes, to be read
// without the lock. mu must be held.
func (s *memSeries) startsSnapshot() []startTime {
	if s.starts == nil {
		return nil
	}
	l := s.starts.list
	return l[:len(l):len(l)]
}

// appendStartTimes appends the series' start time changes to dst, for a
// checkpoint.
func (s *memSeries) appendStartTimes(dst []record.RefStartTime) []record.RefStartTime {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.startsSnapshot() {
		dst = append(dst, record.RefStartTime{Ref: s.ref, T: e.t, ST: e.st})
	}
	return dst
}

// startAt returns the start time in effect for a sample at t, given the
// changes of a series and a hint: the index of the change in effect for an
// earlier sample, which it returns updated. Samples are visited in time
// order, so the search moves forward only.
func startAt(changes []startTime, t int64, hint int) (st int64, idx int) {
	idx = hint
	if idx < 0 || idx >= len(changes) || changes[idx].t > t {
		// Out of step with the hint (a Seek backwards cannot happen, but
		// the first call has none): search.
		i, found := slices.BinarySearchFunc(changes, t, func(c startTime, t int64) int { return cmp.Compare(c.t, t) })
		if !found {
			i--
		}
		if i < 0 {
			return 0, -1
		}
		idx = i
	}
	for idx+1 < len(changes) && changes[idx+1].t <= t {
		idx++
	}
	return changes[idx].st, idx
}

// validStart returns st if it can be the start time of a sample at t, and 0
// (unknown) otherwise: a start after the sample is meaningless, and
// Prometheus ignores it too.
func validStart(st, t int64) int64 {
	if st > t {
		return 0
	}
	return st
}
