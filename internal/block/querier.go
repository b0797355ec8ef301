package block

import (
	"context"
	"slices"

	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/annotations"

	"github.com/strata-db/strata/internal/chunkenc"
	"github.com/strata-db/strata/internal/index"
	"github.com/strata-db/strata/internal/storage"
	"github.com/strata-db/strata/internal/tombstones"
)

// Querier returns a querier over the block's samples in [mint, maxt]. It
// implements Prometheus' storage.Querier; the block stays open until it is
// closed. The chunk bytes its series hand out stay valid until then.
func (b *Block) Querier(mint, maxt int64) (promstorage.Querier, error) {
	if err := b.acquire(); err != nil {
		return nil, err
	}
	return &querier{b: b, mint: max(mint, b.meta.MinTime), maxt: min(maxt, b.meta.MaxTime), stones: b.Tombstones()}, nil
}

type querier struct {
	b          *Block
	mint, maxt int64
	stones     tombstones.Stones
	closed     bool
}

func (q *querier) Close() error {
	if !q.closed {
		q.closed = true
		q.b.release()
	}
	return nil
}

// Select returns the matching series in label order, which is the order
// of the block's series refs: sortSeries costs nothing.
func (q *querier) Select(ctx context.Context, _ bool, hints *promstorage.SelectHints, ms ...*labels.Matcher) promstorage.SeriesSet {
	mint, maxt := q.mint, q.maxt
	limit, labelsOnly := 0, false
	if hints != nil {
		mint, maxt = max(mint, hints.Start), min(maxt, hints.End)
		limit = hints.Limit
		// /api/v1/series wants the labels of the series with samples
		// in the range: the index says which, no chunk need be read.
		labelsOnly = hints.Func == "series"
	}
	if mint > maxt {
		return promstorage.EmptySeriesSet()
	}
	p, err := index.PostingsForMatchers(ctx, q.b.index, ms...)
	if err != nil {
		return promstorage.ErrSeriesSet(err)
	}
	return &seriesSet{ctx: ctx, b: q.b, p: p, mint: mint, maxt: maxt, limit: limit, labelsOnly: labelsOnly, stones: q.stones}
}

// LabelValues returns the sorted values of label name, of the series that
// match ms if any are given.
func (q *querier) LabelValues(ctx context.Context, name string, hints *promstorage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	if len(ms) == 0 && len(q.stones) == 0 {
		vals, err := q.b.index.LabelValues(name)
		return storage.LimitValues(vals, hints), nil, err
	}
	seen := map[string]struct{}{}
	err := q.forEachLabels(ctx, ms, func(lset labels.Labels) {
		if v := lset.Get(name); v != "" {
			seen[v] = struct{}{}
		}
	})
	return storage.LimitValues(storage.SortedSet(seen), hints), nil, err
}

// LabelNames returns the sorted label names, of the series that match ms
// if any are given.
func (q *querier) LabelNames(ctx context.Context, hints *promstorage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	if len(ms) == 0 && len(q.stones) == 0 {
		names, err := q.b.index.LabelNames()
		return storage.LimitValues(names, hints), nil, err
	}
	seen := map[string]struct{}{}
	err := q.forEachLabels(ctx, ms, func(lset labels.Labels) {
		lset.Range(func(l labels.Label) { seen[l.Name] = struct{}{} })
	})
	return storage.LimitValues(storage.SortedSet(seen), hints), nil, err
}

// forEachLabels calls fn with the labels of each series matching ms,
// but those whose every sample is deleted.
func (q *querier) forEachLabels(ctx context.Context, ms []*labels.Matcher, fn func(labels.Labels)) error {
	p, err := index.PostingsForMatchers(ctx, q.b.index, ms...)
	if err != nil {
		return err
	}
	var (
		b      labels.ScratchBuilder
		lset   labels.Labels
		chunks []index.ChunkMeta
	)
	for p.Next() {
		if err := q.b.index.Series(p.At(), &b, &lset, &chunks, nil); err != nil {
			return err
		}
		if iv := q.stones[p.At()]; len(chunks) > 0 && iv.Covers(chunks[0].MinT, chunks[len(chunks)-1].MaxT) {
			continue
		}
		fn(lset)
	}
	return p.Err()
}

// seriesSet reads the series of postings p, skipping those without a
// chunk in [mint, maxt].
type seriesSet struct {
	ctx        context.Context
	b          *Block
	p          index.Postings
	mint, maxt int64
	limit      int
	labelsOnly bool // series without chunks, for their labels
	stones     tombstones.Stones
	returned   int
	n          int

	builder labels.ScratchBuilder
	metas   []index.ChunkMeta
	starts  []chunkenc.StartTime
	cur     *chunkenc.Series
	err     error
}

func (ss *seriesSet) Next() bool {
	if ss.err != nil || (ss.limit > 0 && ss.returned >= ss.limit) {
		return false
	}
	for ss.p.Next() {
		// Honour cancellation every so often without paying for it on
		// every series.
		if ss.n++; ss.n%128 == 0 {
			if err := ss.ctx.Err(); err != nil {
				ss.err = err
				return false
			}
		}
		var lset labels.Labels
		deleted := ss.stones[ss.p.At()]
		labelsOnly := ss.labelsOnly && len(deleted) == 0
		starts := &ss.starts
		if labelsOnly {
			starts = nil
		}
		if err := ss.b.index.Series(ss.p.At(), &ss.builder, &lset, &ss.metas, starts); err != nil {
			ss.err = err
			return false
		}
		var (
			chunks []chunkenc.Meta
			found  bool
		)
		for i, m := range ss.metas {
			if m.MaxT < ss.mint || m.MinT > ss.maxt {
				continue
			}
			if found = true; labelsOnly {
				break
			}
			if chunks == nil {
				// Room for the chunks at once, rather than growing by
				// doubling: those in range follow each other.
				n := 1
				for n < len(ss.metas)-i && ss.metas[i+n].MinT <= ss.maxt {
					n++
				}
				chunks = make([]chunkenc.Meta, 0, n)
			}
			enc, data, err := ss.b.chunks.chunk(m.Ref)
			if err != nil {
				ss.err = err
				return false
			}
			chunks = append(chunks, chunkenc.Meta{Data: data, MinT: m.MinT, MaxT: m.MaxT, Enc: enc})
		}
		if len(deleted) > 0 && found {
			if chunks, ss.err = deleted.ApplyIn(chunks, ss.mint, ss.maxt); ss.err != nil {
				return false
			}
			found = len(chunks) > 0
		}
		if !found {
			continue
		}
		if ss.labelsOnly {
			chunks = nil
		}
		ss.cur = &chunkenc.Series{Lset: lset, Chunks: chunks, MinT: ss.mint, MaxT: ss.maxt}
		if len(ss.starts) > 0 {
			ss.cur.Starts = slices.Clone(ss.starts)
		}
		ss.returned++
		return true
	}
	ss.err = ss.p.Err()
	return false
}

func (ss *seriesSet) At() promstorage.Series            { return ss.cur }
func (ss *seriesSet) Err() error                        { return ss.err }
func (ss *seriesSet) Warnings() annotations.Annotations { return nil }
