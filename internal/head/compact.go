package head

import (
	"slices"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/chunkenc"
)

// ForEachSeries calls fn for every series with samples in [mint, maxt], in
// label order, with its chunks that overlap the range and the changes of
// its start time: what a block of that range is written from. The chunks
// are valid until fn returns. The open chunk is passed as a copy; it stays
// in the head. It stops at the first error fn returns and returns it.
func (h *Head) ForEachSeries(mint, maxt int64, fn func(lset labels.Labels, chunks []chunkenc.Meta, starts []chunkenc.StartTime) error) error {
	reader := h.acquireReader(mint)
	defer h.releaseReader(reader)
	all := slices.Collect(h.series.all())
	symbols := h.series.symbols
	slices.SortFunc(all, func(a, b *memSeries) int { return symbols.compare(a.syms.ids(), b.syms.ids()) })
	var lb labels.ScratchBuilder
	var chunks []chunkenc.Meta
	copier := chunkCopier{arena: h.arena}
	for i, s := range all {
		var starts []chunkenc.StartTime
		chunks, starts = s.snapshot(chunks[:0], mint, maxt)
		all[i] = nil
		if len(chunks) == 0 {
			continue
		}
		copied, err := copier.copy(chunks)
		if err != nil {
			return err
		}
		if err := fn(symbols.labels(s.syms.ids(), &lb), copied, starts); err != nil {
			return err
		}
		copier.reset()
	}
	return nil
}
