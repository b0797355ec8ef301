package head

import (
	"github.com/strata-db/strata/internal/chunkenc"
	"github.com/strata-db/strata/internal/record"
)

// startTimes is the history of a series' start time, oldest first, by t.
// Entries are only appended, so a reader may keep a slice of it taken
// under the series' lock.
type startTimes struct {
	list []chunkenc.StartTime
}

// currentStart returns the start time of the newest sample, 0 if unknown.
// mu must be held.
func (s *memSeries) currentStart() int64 {
	if s.extra == nil || len(s.extra.starts.list) == 0 {
		return 0
	}
	l := s.extra.starts.list
	return l[len(l)-1].ST
}

// setStart records that from the sample at t on the series counts from st,
// unless it already does or a later change is recorded. cells is the
// pool of the series' own memory (see addExtra). mu must be held.
func (s *memSeries) setStart(t, st int64, cells *cellPool) {
	if s.extra == nil {
		if st == 0 {
			return
		}
		s.addExtra(cells)
	}
	l := s.extra.starts.list
	if n := len(l); n > 0 && (l[n-1].ST == st || l[n-1].T >= t) {
		return
	}
	s.extra.starts.list = append(l, chunkenc.StartTime{T: t, ST: st})
}

// startsSnapshot returns the series' start time changes, to be read
// without the lock. mu must be held.
func (s *memSeries) startsSnapshot() []chunkenc.StartTime {
	if s.extra == nil {
		return nil
	}
	l := s.extra.starts.list
	return l[:len(l):len(l)]
}

// appendStartTimes appends the series' start time changes to dst, for a
// checkpoint.
func (s *memSeries) appendStartTimes(dst []record.RefStartTime) []record.RefStartTime {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.startsSnapshot() {
		dst = append(dst, record.RefStartTime{Ref: s.ref, T: e.T, ST: e.ST})
	}
	return dst
}
