package head

import (
	"math"
	"slices"
	"sync/atomic"
	"time"
	"unsafe"

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
	// The checkpoints written so far hold what is dropped: the next one
	// is a full one, which leaves it out.
	h.fullNext.Store(true)
	h.freeze(hi + 1)
	// Queries and checkpoints started before may read what is dropped.
	h.waitForReaders(hi)
	var (
		st     TruncateStats
		doomed []*memSeries
		tr     = chunkDropper{lo: lo, hi: hi, rd: chunkCopier{arena: h.arena}}
	)
	// The dropped chunks are retired a batch at a time: collected for
	// all series, a million series' made a list of some 50 MB (24 bytes
	// a chunk), copied each time it doubled, at the peak of the
	// compaction that truncates.
	retire := func() {
		st.Chunks += tr.chunks
		tr.chunks = 0
		tr.retired = slices.DeleteFunc(tr.retired, func(b []byte) bool { return b == nil }) // open chunks that did not spill
		st.ArenaBytesFree += h.retireChunks(tr.retired)
		tr.retired = tr.retired[:0]
		tr.rd.reset()
	}
	before := h.mint.Load()
	left := int64(math.MaxInt64)
	for s := range h.series.all() {
		mint := tr.truncate(s)
		if mint == math.MaxInt64 {
			doomed = append(doomed, s)
		}
		left = min(left, mint)
		if len(tr.retired) >= retireBatch {
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
		st.SeriesRemoved = h.removeSeries(doomed)
	}
	h.truncateTombstones(lo, hi)
	return st
}

// retireBatch is how many dropped chunks TruncateRange collects before it
// retires them.
const retireBatch = 4096

// removeSeries removes the doomed series that no appender took since they
// were doomed, and returns how many it removed.
//
// An appender may have found a series before it was doomed and commit to
// it later: removing it then would lose that commit. So this first waits
// for every appender that entered before the series were doomed; one that
// entered later and takes a doomed series makes it live again (see
// takeForAppend), and one that finds it gone looks its labels up anew.
// Once the series are out of the maps, it waits for the appenders again,
// as those that entered meanwhile may hold one, and retires them: their
// memory is freed once no reader may hold them either (retireSeries).
func (h *Head) removeSeries(doomed []*memSeries) int {
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
			s.freeOpen(&h.arena.cells)
			removed = append(removed, s)
		}
		s.mu.Unlock()
	}
	if len(removed) == 0 {
		return 0
	}
	refs := make([]storage.SeriesRef, len(removed))
	lsets := make([]labels.Labels, len(removed))
	var b labels.ScratchBuilder
	for i, s := range removed {
		refs[i] = s.ref
		lsets[i] = h.series.symbols.labels(h.series.symbols.idsOf(s.syms), &b)
		h.series.remove(s, lsets[i].Hash())
	}
	h.index.Delete(refs, lsets)
	h.stats.series.Add(-int64(len(removed)))
	// An appender that found a series before it left the maps may still
	// lock it, to find it gone.
	h.appenderGens.waitForOlder()
	h.retireSeries(removed)
	return len(removed)
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

// chunkDropper drops the chunks of series that lie in [lo, hi].
type chunkDropper struct {
	lo, hi int64
	// rd reads trailers, and chunks that relink copies, from its arena:
	// a pass over every series reads them with pread (see chunkCopier).
	rd chunkCopier
	// retired collects the bytes of the chunks dropped, and of the old
	// copies of those relink copied, for the caller to retire (see
	// retireChunks); for an open chunk dropped, its spill region in
	// arena, or nil if it has none (its memory, a cell, is freed at once:
	// see freeOpen).
	retired [][]byte
	// chunks counts the chunks dropped.
	chunks int
	// list and buf are scratch memory.
	list []headChunk
	buf  []byte
}

// truncate drops the chunks of s that lie in [lo, hi] and returns its
// oldest sample left, math.MaxInt64 if none is; a series left without
// samples is doomed.
//
// The chunks kept stay where they are, and the oldest go by counting
// fewer: the oldest trailer kept may point to a chunk gone, which no walk
// reaches. A chunk kept whose predecessor went while an older one stays
// (a late sample older than lo) is copied anew after the one now before
// it, with those that follow it (relink). A trailer or chunk the copier
// cannot read is read in place.
func (d *chunkDropper) truncate(s *memSeries) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var err error
	if d.list, err = d.rd.chain(d.list[:0], s.last, int(s.nChunks)); err != nil {
		d.list = s.closedChunks(d.list[:0])
	}
	// Filter the list in place: kept[i] is written after list[j], j >= i,
	// was read. from is the first kept chunk whose predecessor went.
	kept, from, prev := d.list[:0], -1, -1
	for j, c := range d.list {
		if c.mint >= d.lo && c.maxt() <= d.hi {
			d.retired = append(d.retired, c.bytes())
			d.chunks++
			continue
		}
		if from < 0 && len(kept) > 0 && prev != j-1 {
			from = len(kept)
		}
		kept, prev = append(kept, c), j
	}
	if len(kept) < int(s.nChunks) {
		var last *byte
		switch {
		case from >= 0:
			last, d.buf, d.retired = relink(d.rd.arena, &d.rd, kept[from:], kept[from-1].trailer(), d.buf, d.retired)
		case len(kept) > 0:
			last = kept[len(kept)-1].trailer()
		}
		s.last, s.nChunks = last, uint32(len(kept))
	}
	if s.hasOpenSamples() && s.headMint() >= d.lo && s.maxt <= d.hi {
		s.setOpen(0, nil, &d.rd.arena.cells, nil)
		d.retired = append(d.retired, s.dropSpill(d.rd.arena))
		d.chunks++
	}
	mint := int64(math.MaxInt64)
	switch {
	case len(kept) > 0:
		mint = kept[0].mint
	case s.hasOpenSamples():
		mint = s.headMint()
	}
	if s.extra != nil && mint != math.MaxInt64 {
		s.extra.starts.truncate(mint)
	}
	if mint == math.MaxInt64 {
		s.maxt = math.MinInt64
		s.setRemoval(seriesDoomed)
	}
	return mint
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
	num := s.cells.numberOf(unsafe.Pointer(ms))
	st := &s.stripes[hash&s.mask]
	st.Lock()
	st.del(hash, num)
	st.Unlock()

	s.refs.remove(ms.ref, num)
}
