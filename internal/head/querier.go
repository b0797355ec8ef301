package head

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

// Querier returns a querier over the samples in [mint, maxt]. It implements
// Prometheus' storage.Queryable, so the PromQL engine reads the head
// directly.
//
// The chunk bytes its series hand out stay valid until Close.
func (h *Head) Querier(mint, maxt int64) (promstorage.Querier, error) {
	return &querier{head: h, mint: mint, maxt: maxt, reader: h.acquireReader(mint)}, nil
}

// querier reads the head. It holds no locks between calls: each series is
// snapshotted when the series set reaches it. As a reader (see readers),
// it keeps Truncate from dropping chunks it may read until Close.
type querier struct {
	head       *Head
	mint, maxt int64
	reader     uint64
	closed     bool
}

func (q *querier) Select(ctx context.Context, sortSeries bool, hints *promstorage.SelectHints, ms ...*labels.Matcher) promstorage.SeriesSet {
	mint, maxt := q.mint, q.maxt
	limit := 0
	if hints != nil {
		mint, maxt = max(mint, hints.Start), min(maxt, hints.End)
		limit = hints.Limit
	}
	series, err := q.matching(ctx, ms)
	if err != nil {
		return promstorage.ErrSeriesSet(err)
	}
	if sortSeries {
		symbols := q.head.series.symbols
		slices.SortFunc(series, func(a, b *memSeries) int { return symbols.compare(symbols.idsOf(a.syms), symbols.idsOf(b.syms)) })
	}
	return &seriesSet{ctx: ctx, series: series, symbols: q.head.series.symbols, mint: mint, maxt: maxt, limit: limit, stones: q.head.Tombstones()}
}

// matching returns the series that match ms, in ref order.
func (q *querier) matching(ctx context.Context, ms []*labels.Matcher) ([]*memSeries, error) {
	// A series added while the postings are read may not match (see
	// PostingsForMatchers), so those are checked. Series are created one
	// at a time and indexed before the next gets its ref (getOrCreate),
	// so those with a ref below the last one handed out are in the index
	// throughout.
	indexed := storage.SeriesRef(q.head.lastRef.Load())
	p, err := index.PostingsForMatchers(ctx, q.head.index, ms...)
	if err != nil {
		return nil, err
	}
	var series []*memSeries
	for p.Next() {
		s := q.head.series.getByRef(p.At())
		if s != nil && (s.ref < indexed || q.matches(s, ms)) {
			series = append(series, s)
		}
	}
	return series, p.Err()
}

func (q *querier) matches(s *memSeries, ms []*labels.Matcher) bool {
	symbols := q.head.series.symbols
	for _, m := range ms {
		if !m.Matches(symbols.get(symbols.idsOf(s.syms), m.Name)) {
			return false
		}
	}
	return true
}

// LabelValues returns the sorted values of label name, of the series that
// match ms if any are given.
func (q *querier) LabelValues(ctx context.Context, name string, hints *promstorage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	var vals []string
	stones := q.head.Tombstones()
	if len(ms) == 0 {
		vals, _ = q.head.index.LabelValues(name)
		var err error
		if vals, err = q.withoutDeleted(ctx, vals, name, stones); err != nil {
			return nil, nil, err
		}
	} else {
		seen := map[string]struct{}{}
		series, err := q.matching(ctx, ms)
		if err != nil {
			return nil, nil, err
		}
		symbols := q.head.series.symbols
		for _, s := range series {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
			if !visible(s, stones[s.ref]) {
				continue
			}
			if v := symbols.get(symbols.idsOf(s.syms), name); v != "" {
				seen[v] = struct{}{}
			}
		}
		vals = storage.SortedSet(seen)
	}
	return storage.LimitValues(vals, hints), nil, nil
}

// LabelNames returns the sorted label names, of the series that match ms if
// any are given.
func (q *querier) LabelNames(ctx context.Context, hints *promstorage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	var names []string
	stones := q.head.Tombstones()
	if len(ms) == 0 {
		var err error
		if names, err = q.withoutDeleted(ctx, q.head.index.LabelNames(), "", stones); err != nil {
			return nil, nil, err
		}
	} else {
		seen := map[string]struct{}{}
		series, err := q.matching(ctx, ms)
		if err != nil {
			return nil, nil, err
		}
		symbols := q.head.series.symbols
		for _, s := range series {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
			if !visible(s, stones[s.ref]) {
				continue
			}
			symbols.rangeLabels(symbols.idsOf(s.syms), func(l labels.Label) { seen[l.Name] = struct{}{} })
		}
		names = storage.SortedSet(seen)
	}
	return storage.LimitValues(names, hints), nil, nil
}

// withoutDeleted drops from the index's answer vals, the values of label
// name or, with name "", the label names, those that only series whose
// every sample is deleted hold. Only the values of such series are looked
// up again, so that a tombstone does not make every label query walk all
// series.
func (q *querier) withoutDeleted(ctx context.Context, vals []string, name string, stones tombstones.Stones) ([]string, error) {
	symbols := q.head.series.symbols
	suspects := map[string]struct{}{}
	for ref, deleted := range stones {
		s := q.head.series.getByRef(ref)
		if s == nil || visible(s, deleted) {
			continue
		}
		ids := symbols.idsOf(s.syms)
		if name == "" {
			symbols.rangeLabels(ids, func(l labels.Label) { suspects[l.Name] = struct{}{} })
		} else if v := symbols.get(ids, name); v != "" {
			suspects[v] = struct{}{}
		}
	}
	for v := range suspects {
		held, err := q.held(ctx, name, v, stones)
		if err != nil {
			return nil, err
		}
		if held {
			delete(suspects, v)
		}
	}
	if len(suspects) == 0 {
		return vals, nil
	}
	return slices.DeleteFunc(vals, func(v string) bool {
		_, gone := suspects[v]
		return gone
	}), nil
}

// held reports whether a series with a sample not deleted holds value v
// of label name or, with name "", label v with any value.
func (q *querier) held(ctx context.Context, name, v string, stones tombstones.Stones) (bool, error) {
	values := []string{v}
	if name == "" {
		name = v
		values, _ = q.head.index.LabelValues(name)
	}
	for _, value := range values {
		p, err := q.head.index.Postings(name, value)
		if err != nil {
			return false, err
		}
		for p.Next() {
			if err := ctx.Err(); err != nil {
				return false, err
			}
			if s := q.head.series.getByRef(p.At()); s != nil && visible(s, stones[s.ref]) {
				return true, nil
			}
		}
		if err := p.Err(); err != nil {
			return false, err
		}
	}
	return false, nil
}

func (q *querier) Close() error {
	if !q.closed {
		q.closed = true
		q.head.releaseReader(q.reader)
	}
	return nil
}

// seriesSet walks the matched series, skipping those with no sample in
// [mint, maxt].
type seriesSet struct {
	ctx        context.Context
	series     []*memSeries
	symbols    *symbolTable
	labels     labels.ScratchBuilder
	mint, maxt int64
	limit      int
	stones     tombstones.Stones
	returned   int
	cur        *chunkenc.Series
	err        error
}

func (ss *seriesSet) Next() bool {
	if ss.limit > 0 && ss.returned >= ss.limit {
		return false
	}
	for len(ss.series) > 0 {
		// A select over many series can take long: honour cancellation
		// every so often without paying for it on every series.
		if len(ss.series)%128 == 0 {
			if err := ss.ctx.Err(); err != nil {
				ss.err = err
				return false
			}
		}
		s := ss.series[0]
		ss.series = ss.series[1:]
		chunks, starts, _ := s.snapshot(nil, ss.mint, ss.maxt, nil) // reads in place: no error
		if chunks, ss.err = ss.stones[s.ref].ApplyIn(chunks, ss.mint, ss.maxt); ss.err != nil {
			return false
		}
		if len(chunks) == 0 {
			continue
		}
		lset := ss.symbols.labels(ss.symbols.idsOf(s.syms), &ss.labels)
		ss.cur = &chunkenc.Series{Lset: lset, Chunks: chunks, Starts: starts, MinT: ss.mint, MaxT: ss.maxt}
		ss.returned++
		return true
	}
	return false
}

func (ss *seriesSet) At() promstorage.Series            { return ss.cur }
func (ss *seriesSet) Err() error                        { return ss.err }
func (ss *seriesSet) Warnings() annotations.Annotations { return nil }
