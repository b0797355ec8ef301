package head

import (
	"math"
	"slices"

	"github.com/strata-db/strata/internal/chunkenc"
	"github.com/strata-db/strata/internal/storage"
)

// TruncateStats says what a Truncate dropped.
type TruncateStats struct {
	Chunks         int   // chunks dropped
	SeriesRemoved  int   // series left without samples and removed
	ArenaBytesFree int64 // chunk memory returned to the system
}

// Truncate drops the samples older than mint, which the caller has written
// to a block, and from then on refuses appends older than mint
// (storage.ErrOutOfBounds). Chunks that end before mint are dropped;
// series left with none are removed from the head and its index, unless
// an appender holds them (they go at a later Truncate). The memory of
// dropped chunks is returned to the system.
//
// Chunks never span a multiple of Options.BlockRange, so with mint such a
// multiple nothing older than mint stays in the head. It is safe to call
// while appenders commit and queries run; it waits for the queries and
// checkpoints that started before it and read data older than mint.
func (h *Head) Truncate(mint int64) TruncateStats {
	for {
		cur := h.minValidTime.Load()
		if mint <= cur || h.minValidTime.CompareAndSwap(cur, mint) {
			break
		}
	}
	for cur := h.mint.Load(); cur < mint && !h.mint.CompareAndSwap(cur, mint); cur = h.mint.Load() {
	}
	// Queries and checkpoints started before may read what is dropped.
	h.waitForReaders(mint)
	var (
		st      TruncateStats
		series  []*memSeries
		dropped [][]byte
		removed []*memSeries
	)
	for i := range h.series.byRef {
		series = h.series.collect(i, series[:0])
		for _, s := range series {
			var empty bool
			dropped, empty = s.truncate(mint, dropped)
			if empty && s.tryRemove() {
				removed = append(removed, s)
			}
		}
	}
	clear(series)
	for _, data := range dropped {
		if data != nil {
			st.ArenaBytesFree += h.arena.release(data)
		}
	}
	st.Chunks = len(dropped)
	if len(removed) > 0 {
		refs := make([]storage.SeriesRef, len(removed))
		for i, s := range removed {
			h.series.remove(s)
			refs[i] = s.ref
		}
		h.index.delete(refs, removed)
		h.stats.series.Add(-int64(len(removed)))
		st.SeriesRemoved = len(removed)
	}
	return st
}

// truncate drops the series' chunks that end before mint, appending their
// bytes to dropped (nil for the open chunk, whose memory is the
// collector's), and reports whether the series is left without samples.
func (s *memSeries) truncate(mint int64, dropped [][]byte) ([][]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := 0
	for k < len(s.chunks) && s.chunks[k].MaxT < mint {
		dropped = append(dropped, s.chunks[k].Data)
		k++
	}
	if k > 0 {
		// A new array: a checkpoint may be encoding the old one.
		s.chunks = slices.Clone(s.chunks[k:])
		if len(s.chunks) == 0 {
			s.chunks = nil
		}
	}
	if s.hasOpenSamples() && s.maxt < mint {
		s.head = nil
		dropped = append(dropped, nil)
	}
	if s.starts != nil {
		s.starts.truncate(mint)
	}
	empty := len(s.chunks) == 0 && !s.hasOpenSamples()
	if empty {
		s.maxt = math.MinInt64
	}
	return dropped, empty
}

// truncate drops the start time changes that no sample at mint or later
// needs: all but the last of those before mint.
func (st *startTimes) truncate(mint int64) {
	i, _ := slices.BinarySearchFunc(st.list, mint, func(c chunkenc.StartTime, t int64) int {
		if c.T <= t {
			return -1
		}
		return 1
	})
	// st.list[:i] are at or before mint; keep the last of them.
	if i > 1 {
		st.list = slices.Clone(st.list[i-1:])
	}
}

// remove takes a series out of both maps.
func (s *stripeSeries) remove(ms *memSeries) {
	hash := ms.lset.Hash()
	i := hash & s.mask
	s.locks[i].Lock()
	s.byHash[i].del(hash, ms)
	s.locks[i].Unlock()

	j := uint64(ms.ref) & s.mask
	s.locks[j].Lock()
	delete(s.byRef[j], ms.ref)
	s.locks[j].Unlock()
}

// del removes s from the map.
func (m *seriesHashMap) del(hash uint64, s *memSeries) {
	if m.unique[hash] == s {
		delete(m.unique, hash)
		// Promote a colliding series, if any, so that get finds it.
		if c := m.conflicts[hash]; len(c) > 0 {
			m.unique[hash] = c[0]
			m.setConflicts(hash, c[1:])
		}
		return
	}
	c := m.conflicts[hash]
	if i := slices.Index(c, s); i >= 0 {
		m.setConflicts(hash, slices.Delete(slices.Clone(c), i, i+1))
	}
}

func (m *seriesHashMap) setConflicts(hash uint64, c []*memSeries) {
	if len(c) == 0 {
		delete(m.conflicts, hash)
		return
	}
	m.conflicts[hash] = c
}
