package head

import (
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/prometheus/prometheus/model/labels"
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
// to blocks, and from then on refuses appends older than mint unless the
// out-of-order window takes them. It is TruncateRange(math.MinInt64,
// mint-1).
func (h *Head) Truncate(mint int64) TruncateStats {
	return h.TruncateRange(math.MinInt64, mint-1)
}

// TruncateRange drops the samples in [lo, hi], which the caller has
// written to a block, and from then on refuses appends older than hi+1
// unless the out-of-order window takes them. Chunks that lie in [lo, hi]
// are dropped; series left with none are removed from the head and its
// index, unless an appender takes them meanwhile. The memory of dropped
// chunks is returned to the system once no reader holds it.
//
// Chunks never span a multiple of Options.BlockRange, so with [lo, hi] a
// block range nothing of it stays in the head. It is safe to call while
// appenders commit and queries run; it waits for the queries and
// checkpoints that started before it and read data up to hi. Samples
// older than lo stay: late ones that came after the caller looked.
func (h *Head) TruncateRange(lo, hi int64) TruncateStats {
	h.freeze(hi + 1)
	// Queries and checkpoints started before may read what is dropped.
	h.waitForReaders(hi)
	var (
		st      TruncateStats
		dropped [][]byte
		doomed  []*memSeries
	)
	// The dropped chunks are retired a batch at a time: collected for
	// all series, a million series' made a list of some 50 MB (24 bytes
	// a chunk), copied each time it doubled, at the peak of the
	// compaction that truncates.
	retire := func() {
		st.Chunks += len(dropped)
		dropped = slices.DeleteFunc(dropped, func(b []byte) bool { return b == nil }) // open chunks that did not spill
		st.ArenaBytesFree += h.retireChunks(dropped)
		dropped = dropped[:0]
	}
	before := h.mint.Load()
	left := int64(math.MaxInt64)
	for s := range h.series.all() {
		var mint int64
		dropped, mint = s.truncate(lo, hi, dropped, h.arena)
		if mint == math.MaxInt64 {
			doomed = append(doomed, s)
		}
		left = min(left, mint)
		if len(dropped) >= retireBatch {
			retire()
		}
	}
	retire()
	// The oldest sample left; a commit may have lowered mint meanwhile.
	if !h.mint.CompareAndSwap(before, left) {
		lower(&h.mint, left)
	}
	// Compaction read the range just dropped, and with it neighbouring
	// pages of chunks still held.
	h.arena.dropResident()
	if len(doomed) > 0 {
		removed := h.removeSeries(doomed)
		st.SeriesRemoved = len(removed)
	}
	return st
}

// retireBatch is how many dropped chunks TruncateRange collects before it
// retires them.
const retireBatch = 4096

// removeSeries removes the doomed series that no appender took since they
// were doomed, and returns them.
//
// An appender may have found a series before it was doomed and commit to
// it later: removing it then would lose that commit. So this first waits
// for every appender that entered before the series were doomed; one that
// entered later and takes a doomed series makes it live again (see
// takeForAppend), and one that finds it gone looks its labels up anew.
func (h *Head) removeSeries(doomed []*memSeries) []*memSeries {
	h.appenderGens.waitForOlder()
	removed := doomed[:0]
	for _, s := range doomed {
		s.mu.Lock()
		switch {
		case s.removal() != seriesDoomed:
		case s.nChunks > 0 || s.hasOpenSamples():
			// An appender that took it before it was doomed committed.
			s.setRemoval(seriesLive)
		default:
			s.setRemoval(seriesGone)
			removed = append(removed, s)
		}
		s.mu.Unlock()
	}
	if len(removed) == 0 {
		return nil
	}
	refs := make([]storage.SeriesRef, len(removed))
	lsets := make([]labels.Labels, len(removed))
	syms := make([]string, len(removed))
	var b labels.ScratchBuilder
	for i, s := range removed {
		refs[i], syms[i] = s.ref, s.syms.ids()
		lsets[i] = h.series.symbols.labels(syms[i], &b)
		h.series.remove(s, lsets[i].Hash())
	}
	h.index.Delete(refs, lsets)
	h.retireSymbols(syms)
	h.stats.series.Add(-int64(len(removed)))
	return removed
}

// takeForAppend makes a doomed series live again for an appender that is
// about to append to it, and reports false if the series is gone. mu
// must be held.
func (s *memSeries) takeForAppend() bool {
	switch s.removal() {
	case seriesDoomed:
		s.setRemoval(seriesLive)
	case seriesGone:
		return false
	}
	return true
}

// appenderGens counts the appenders in flight in two generations, so
// that Truncate can wait for those that entered before a point without
// stopping new ones: it switches the current generation and waits for the
// old one to empty. An appender enters once per batch, at its first
// Append, and leaves when it commits or rolls back: two atomic additions
// per batch, where holding each series it appends to cost 10% of the
// append path in BenchmarkAppend.
type appenderGens struct {
	cur    atomic.Int32
	counts [2]atomic.Int64
}

// enter registers an appender and returns its generation.
func (g *appenderGens) enter() int {
	for {
		i := g.cur.Load()
		g.counts[i].Add(1)
		// Truncate may have switched generations between the load and
		// the add: enter the current one, which it does not wait for.
		if g.cur.Load() == i {
			return int(i)
		}
		g.counts[i].Add(-1)
	}
}

func (g *appenderGens) leave(i int) { g.counts[i].Add(-1) }

// waitForOlder switches generations and returns once every appender of
// the previous one has left. One caller at a time (Truncate's callers
// are serialised by the store).
func (g *appenderGens) waitForOlder() {
	old := g.cur.Load()
	g.cur.Store(1 - old)
	for g.counts[old].Load() > 0 {
		// Batches take milliseconds, truncations happen every block
		// range: polling costs nothing that matters.
		time.Sleep(100 * time.Microsecond)
	}
}

// truncate drops the series' chunks that lie in [lo, hi], appending
// their bytes to dropped (for the open chunk, its spill region in arena,
// or nil if it has none: its memory is the collector's), and returns its
// oldest sample left, math.MaxInt64 if none is; a series left without
// samples is doomed.
func (s *memSeries) truncate(lo, hi int64, dropped [][]byte, arena *chunkArena) ([][]byte, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := func(c headChunk) bool { return c.mint >= lo && c.maxt() <= hi }
	chunks := s.chunkList()
	n := 0 // chunks kept
	for _, c := range chunks {
		if !in(c) {
			n++
		}
	}
	if n < len(chunks) {
		// A new array, of the chunks kept alone (the collector keeps a
		// whole array, its capacity beyond the slice too): a checkpoint
		// may be encoding the old one.
		var kept []headChunk
		if n > 0 {
			kept = make([]headChunk, 0, n)
		}
		for _, c := range chunks {
			if in(c) {
				dropped = append(dropped, c.bytes())
			} else {
				kept = append(kept, c)
			}
		}
		s.setChunkList(kept)
	}
	if s.hasOpenSamples() && s.headMint() >= lo && s.maxt <= hi {
		s.setOpen(0, nil)
		dropped = append(dropped, s.dropSpill(arena))
	}
	mint := s.mint()
	if s.extra != nil && mint != math.MaxInt64 {
		s.extra.starts.truncate(mint)
	}
	if mint == math.MaxInt64 {
		s.maxt = math.MinInt64
		s.setRemoval(seriesDoomed)
	}
	return dropped, mint
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

// remove takes a series, whose labels hash to hash, out of both tables.
func (s *stripeSeries) remove(ms *memSeries, hash uint64) {
	st := &s.stripes[hash&s.mask]
	st.Lock()
	st.del(hash, ms)
	st.Unlock()

	s.refs.remove(ms)
}
