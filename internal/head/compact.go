package head

import (
	"cmp"
	"math/bits"
	"slices"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/chunkenc"
)

// ForEachSeries calls fn for every series with samples in [mint, maxt], in
// label order, with its chunks that overlap the range and the changes of
// its start time: what a block of that range is written from. Samples
// the head's tombstones delete are left out. The chunks
// are valid until fn returns. The open chunk is passed as a copy; it stays
// in the head. It stops at the first error fn returns and returns it.
func (h *Head) ForEachSeries(mint, maxt int64, fn func(lset labels.Labels, chunks []chunkenc.Meta, starts []chunkenc.StartTime) error) error {
	reader := h.acquireReader(mint)
	defer h.releaseReader(reader)
	all := h.series.sorted(int(h.stats.series.Load()))
	symbols := h.series.symbols
	var lb labels.ScratchBuilder
	var chunks []chunkenc.Meta
	copier := chunkCopier{arena: h.arena}
	stones := h.Tombstones()
	for i := range all {
		s := all[i].s
		var (
			starts []chunkenc.StartTime
			err    error
		)
		chunks, starts, err = s.snapshot(chunks[:0], mint, maxt, &copier)
		all[i].s = nil
		if err != nil {
			return err
		}
		// Into out, not chunks: the snapshot's buffer stays for the next.
		out, err := stones[s.ref].ApplyIn(chunks, mint, maxt)
		if err != nil {
			return err
		}
		if len(out) == 0 {
			continue
		}
		if err := fn(symbols.labels(symbols.idsOf(s.syms), &lb), out, starts); err != nil {
			return err
		}
		copier.reset()
	}
	return nil
}

// sortedSeries is a series with the key it is sorted by (see sorted).
type sortedSeries struct {
	key uint64
	s   *memSeries
}

// sorted returns every series in the order of its labels
// (labels.Compare); n, the count of series, sizes the result.
//
// Comparing two series' labels reads both series, their ids and their
// pairs' strings, wherever they are in memory: sorting a million series
// so made 41% of a block's write from the head (BenchmarkWriteBlock).
// Each series gets a key instead: the ranks (symbolTable.ranks) of its
// first pairs, as many as fit in 64 bits, so that most comparisons are of
// two integers next to each other; series whose keys are equal are
// compared by the ranks of all their pairs.
func (s *stripeSeries) sorted(n int) []sortedSeries {
	all := make([]sortedSeries, 0, n)
	for ms := range s.all() {
		all = append(all, sortedSeries{s: ms})
	}
	// After the series: the ranks then cover every id they hold.
	ranks := s.symbols.ranks()
	width := max(1, bits.Len32(uint32(len(ranks))))
	perKey := 64 / width
	for k := range all {
		ids := s.symbols.idsOf(all[k].s.syms)
		var key uint64
		pairs := 0
		for i := 0; i < len(ids) && pairs < perKey; pairs++ {
			var id uint64
			id, i = uvarint(ids, i)
			key = key<<width | uint64(ranks[id])
		}
		// Left-aligned: a series with fewer pairs than the key holds
		// sorts before those it is a prefix of, as in labels.Compare.
		all[k].key = key << ((perKey - pairs) * width)
	}
	slices.SortFunc(all, func(a, b sortedSeries) int {
		if a.key != b.key {
			return cmp.Compare(a.key, b.key)
		}
		return compareRanks(ranks, s.symbols.idsOf(a.s.syms), s.symbols.idsOf(b.s.syms))
	})
	return all
}

// compareRanks orders the label sets a and b hold by the ranks of their
// ids, as labels.Compare orders them.
func compareRanks(ranks []uint32, a, b string) int {
	return compareIDs(a, b, func(x, y uint64) int { return cmp.Compare(ranks[x], ranks[y]) })
}
