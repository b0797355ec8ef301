package db

import (
	"context"
	"math"
	"slices"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"
	promchunkenc "github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/util/annotations"

	"github.com/strata-db/strata/internal/chunkenc"
)

// mergeQuerier reads several queriers, the blocks and the head, as one.
// Its sources are in time order, oldest first, and are usually disjoint
// in time: each block holds its own range and the head what comes after.
// A series in several of them whose parts follow one another is handed
// out as one chunkenc.Series over all their chunks (see join), read by
// one iterator as fast as a series from one source. Where the parts do
// overlap (late samples in the head or in blocks not yet merged, a crash
// between writing a block and truncating the head), a mergeIterator
// merges them, dropping samples with a timestamp already returned, at
// one comparison per sample while the sources take turns.
//
// The answers are those of Prometheus' ChainedSeriesMerge, which its own
// storage merges blocks and head with: the same samples, and a histogram's
// counter-reset hint made unknown wherever the previous sample came from
// another source or was not the previous one read. Its iterator compares
// every sample with the top of a heap and seeks every source on every
// Seek, which the engine calls at every step of a range query: over
// long ranges that cost as much as decoding the samples.
//
// Label names and values, and Close, are Prometheus' merge querier's.
type mergeQuerier struct {
	promstorage.Querier
	sources []promstorage.Querier // oldest first
}

// MergeQueriers returns a querier reading sources, oldest first, as one,
// as the store reads its blocks and head: a series in several of them
// that follow one another in time is one series over their chunks (see
// mergeQuerier). One source is returned as it is.
func MergeQueriers(sources []promstorage.Querier) promstorage.Querier {
	if len(sources) == 1 {
		return sources[0]
	}
	return newMergeQuerier(sources)
}

func newMergeQuerier(sources []promstorage.Querier) *mergeQuerier {
	return &mergeQuerier{
		Querier: promstorage.NewMergeQuerier(sources, nil, promstorage.ChainedSeriesMerge),
		sources: sources,
	}
}

// Select returns the matching series in label order, whatever sortSeries
// says: merging needs every source's series sorted.
func (q *mergeQuerier) Select(ctx context.Context, _ bool, hints *promstorage.SelectHints, ms ...*labels.Matcher) promstorage.SeriesSet {
	sets := make([]promstorage.SeriesSet, len(q.sources))
	for i, s := range q.sources {
		sets[i] = s.Select(ctx, true, hints, ms...)
	}
	limit := 0
	if hints != nil {
		limit = hints.Limit
	}
	return &mergeSeriesSet{sets: sets, live: make([]bool, len(sets)), limit: limit}
}

// mergeSeriesSet merges series sets sorted by labels into one. live[i]
// says sets[i] is positioned on a series not yet returned; the sets are
// few (the blocks a query's range overlaps, and the head), so the
// smallest labels are found by a scan rather than a heap.
type mergeSeriesSet struct {
	sets     []promstorage.SeriesSet
	live     []bool
	started  bool
	limit    int
	returned int
	parts    []promstorage.Series // of the current series; reused
	cur      promstorage.Series
	err      error
}

func (m *mergeSeriesSet) Next() bool {
	if m.err != nil || (m.limit > 0 && m.returned >= m.limit) {
		return false
	}
	if !m.started {
		m.started = true
		for i := range m.sets {
			m.advance(i)
		}
	}
	if m.err != nil {
		return false
	}
	first := -1
	for i, s := range m.sets {
		if m.live[i] && (first < 0 || labels.Compare(s.At().Labels(), m.sets[first].At().Labels()) < 0) {
			first = i
		}
	}
	if first < 0 {
		return false
	}
	lset := m.sets[first].At().Labels()
	parts := m.parts[:0]
	for i := first; i < len(m.sets); i++ {
		if !m.live[i] {
			continue
		}
		if s := m.sets[i].At(); i == first || labels.Equal(s.Labels(), lset) {
			parts = append(parts, s)
			m.advance(i)
		}
	}
	m.parts = parts
	if m.err != nil {
		return false
	}
	switch j := join(lset, parts); {
	case len(parts) == 1:
		m.cur = parts[0]
	case j != nil:
		m.cur = j
	default:
		m.cur = &mergedSeries{lset: lset, parts: slices.Clone(parts)}
	}
	m.returned++
	return true
}

// advance moves set i to its next series.
func (m *mergeSeriesSet) advance(i int) {
	m.live[i] = m.sets[i].Next()
	if !m.live[i] && m.err == nil {
		m.err = m.sets[i].Err()
	}
}

func (m *mergeSeriesSet) At() promstorage.Series { return m.cur }
func (m *mergeSeriesSet) Err() error             { return m.err }

func (m *mergeSeriesSet) Warnings() annotations.Annotations {
	var ws annotations.Annotations
	for _, s := range m.sets {
		ws.Merge(s.Warnings())
	}
	return ws
}

// join returns the parts of a series, oldest source first, as one Series
// over their chunks, if they can be read one after another: each is a
// chunkenc.Series whose chunks all come after the previous part's. Each
// part's start time changes are kept for its own samples (the head's go
// back to before its oldest, a block's start with its first). It returns
// nil if they cannot, or if there is one part.
//
// A part's samples all lie in its own [MinT, MaxT], a block's range
// clipped to the query's, or the query's for the head, so reading all of
// them in the union of those ranges reads the same samples.
func join(lset labels.Labels, parts []promstorage.Series) *chunkenc.Series {
	if len(parts) < 2 {
		return nil
	}
	n, last := 0, int64(math.MinInt64)
	for _, p := range parts {
		s, ok := p.(*chunkenc.Series)
		if !ok || len(s.Chunks) == 0 || s.Chunks[0].MinT <= last {
			return nil
		}
		n += len(s.Chunks)
		last = s.Chunks[len(s.Chunks)-1].MaxT
	}
	out := &chunkenc.Series{
		Lset:   lset,
		Chunks: make([]chunkenc.Meta, 0, n),
		Joins:  make([]int, 0, len(parts)-1),
		MinT:   math.MaxInt64,
		MaxT:   math.MinInt64,
	}
	for i, p := range parts {
		s := p.(*chunkenc.Series)
		if i > 0 {
			out.Joins = append(out.Joins, len(out.Chunks))
		}
		out.Chunks = append(out.Chunks, s.Chunks...)
		out.Starts = chunkenc.ClipStarts(out.Starts, s.Starts, s.Chunks[0].MinT, s.Chunks[len(s.Chunks)-1].MaxT)
		out.MinT, out.MaxT = min(out.MinT, s.MinT), max(out.MaxT, s.MaxT)
	}
	return out
}

// mergedSeries is one series read from several sources, oldest first,
// that join cannot join.
type mergedSeries struct {
	lset  labels.Labels
	parts []promstorage.Series
}

func (s *mergedSeries) Labels() labels.Labels { return s.lset }

// Iterator returns a mergeIterator over the parts, reusing it and its
// parts' iterators if it is one.
func (s *mergedSeries) Iterator(reuse promchunkenc.Iterator) promchunkenc.Iterator {
	it, ok := reuse.(*mergeIterator)
	if !ok {
		it = &mergeIterator{}
	}
	its := it.its[:cap(it.its)]
	for len(its) < len(s.parts) {
		its = append(its, nil)
	}
	its = its[:len(s.parts)]
	for i, p := range s.parts {
		its[i] = p.Iterator(its[i])
	}
	*it = mergeIterator{its: its, ts: it.ts[:0], vts: it.vts[:0], cur: -1}
	for range its {
		it.ts = append(it.ts, notStarted)
		it.vts = append(it.vts, promchunkenc.ValNone)
	}
	return it
}

// notStarted is the timestamp of a source iterator not yet moved: lower
// than any sample's, so Seek moves it. An exhausted one has
// math.MaxInt64, higher than any, so nothing moves it again.
const notStarted = math.MinInt64

// mergeIterator returns the samples of its iterators in time order, each
// timestamp once: of the sources with a sample at the same time, the
// oldest's (the first in its) is returned.
//
// Every source iterator is positioned on its next sample, at ts[i], with
// value type vts[i]. cur is the source of the current sample (-1 before
// the first), and others the lowest ts of the other sources: while cur's
// next sample is below it, Next only moves cur.
type mergeIterator struct {
	its         []promchunkenc.Iterator
	ts          []int64
	vts         []promchunkenc.ValueType
	cur         int
	others      int64
	consecutive bool // the current sample follows the previous one in the same source
	err         error
}

// move records where source i is after Next or Seek returned vt.
func (m *mergeIterator) move(i int, vt promchunkenc.ValueType) {
	m.vts[i] = vt
	if vt == promchunkenc.ValNone {
		m.ts[i] = math.MaxInt64
		if err := m.its[i].Err(); err != nil && m.err == nil {
			m.err = err
		}
		return
	}
	m.ts[i] = m.its[i].AtT()
}

func (m *mergeIterator) Next() promchunkenc.ValueType {
	if m.err != nil {
		return promchunkenc.ValNone
	}
	if m.cur < 0 {
		for i, it := range m.its {
			if m.ts[i] == notStarted {
				m.move(i, it.Next())
			}
		}
		return m.pick()
	}
	last := m.ts[m.cur]
	if last == math.MaxInt64 {
		return promchunkenc.ValNone
	}
	m.move(m.cur, m.its[m.cur].Next())
	if m.ts[m.cur] < m.others {
		m.consecutive = true
		return m.vts[m.cur]
	}
	// Drop the other sources' samples at the time just returned.
	for i, t := range m.ts {
		if t == last {
			m.move(i, m.its[i].Next())
		}
	}
	return m.pick()
}

// seekT is int64 under another name, so that go vet does not take
// Prometheus' Iterator.Seek for a wrong io.Seeker (as in chunkenc).
type seekT = int64

func (m *mergeIterator) Seek(t seekT) promchunkenc.ValueType {
	if m.err != nil {
		return promchunkenc.ValNone
	}
	if m.cur >= 0 && m.ts[m.cur] >= t {
		if m.ts[m.cur] == math.MaxInt64 {
			return promchunkenc.ValNone
		}
		return m.vts[m.cur]
	}
	for i, it := range m.its {
		if m.ts[i] < t {
			m.move(i, it.Seek(t))
		}
	}
	return m.pick()
}

// pick makes the source with the oldest sample current, the first of
// those with the same oldest timestamp.
func (m *mergeIterator) pick() promchunkenc.ValueType {
	if m.err != nil {
		return promchunkenc.ValNone
	}
	cur, others := 0, int64(math.MaxInt64)
	for i, t := range m.ts[1:] {
		if t < m.ts[cur] {
			others = m.ts[cur]
			cur = i + 1
		} else {
			others = min(others, t)
		}
	}
	m.cur, m.others, m.consecutive = cur, others, false
	if m.ts[cur] == math.MaxInt64 {
		return promchunkenc.ValNone
	}
	return m.vts[cur]
}

func (m *mergeIterator) At() (int64, float64) { return m.its[m.cur].At() }
func (m *mergeIterator) AtT() int64           { return m.ts[m.cur] }
func (m *mergeIterator) AtST() int64          { return m.its[m.cur].AtST() }
func (m *mergeIterator) Err() error           { return m.err }

// AtHistogram returns the current histogram sample. As Prometheus' merge
// does, a counter histogram's reset hint is made unknown unless the
// previous sample came from the same source: a reset between sources
// cannot be ruled out from the hint alone.
func (m *mergeIterator) AtHistogram(h *histogram.Histogram) (int64, *histogram.Histogram) {
	t, h := m.its[m.cur].AtHistogram(h)
	if !m.consecutive && h != nil && h.CounterResetHint != histogram.GaugeType {
		h.CounterResetHint = histogram.UnknownCounterReset
	}
	return t, h
}

// AtFloatHistogram is AtHistogram for float histograms.
func (m *mergeIterator) AtFloatHistogram(fh *histogram.FloatHistogram) (int64, *histogram.FloatHistogram) {
	t, fh := m.its[m.cur].AtFloatHistogram(fh)
	if !m.consecutive && fh != nil && fh.CounterResetHint != histogram.GaugeType {
		fh.CounterResetHint = histogram.UnknownCounterReset
	}
	return t, fh
}
