package api

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"
)

// fakeSample is a float or native histogram sample; it implements
// chunks.Sample so that storage.NewListSeries can serve it.
type fakeSample struct {
	t  int64
	f  float64
	fh *histogram.FloatHistogram
}

func (s fakeSample) T() int64                { return s.t }
func (s fakeSample) ST() int64               { return 0 }
func (s fakeSample) F() float64              { return s.f }
func (s fakeSample) H() *histogram.Histogram { return nil }

// FH returns a copy of the histogram, as a storage's iterator decodes
// one for each read: the engine may write into what it is given, and the
// parts of a split query read the same samples at once.
func (s fakeSample) FH() *histogram.FloatHistogram {
	if s.fh == nil {
		return nil
	}
	return s.fh.Copy()
}

func (s fakeSample) Type() chunkenc.ValueType {
	if s.fh != nil {
		return chunkenc.ValFloatHistogram
	}
	return chunkenc.ValFloat
}

func (s fakeSample) Copy() chunks.Sample {
	if s.fh != nil {
		s.fh = s.fh.Copy()
	}
	return s
}

type fakeSeries struct {
	lset    labels.Labels
	samples []fakeSample // by time
}

// fakeStorage is an in-memory storage.Queryable over a fixed slice of
// series. Selects honour matchers and the querier's time range and return
// series sorted by labels. It counts queriers not yet closed, so tests
// can check that every request closes the querier it opened.
type fakeStorage struct {
	series   []fakeSeries // sorted by labels
	warnings annotations.Annotations
	// block makes every read wait until its context is done and then fail
	// with the context's error: a storage slower than any timeout.
	block bool
	// reverse makes label lookups answer in reverse order, breaking the
	// sorted-answer promise of storage.LabelQuerier.
	reverse bool
	open    atomic.Int64

	mu       sync.Mutex
	deadline time.Time // the latest deadline a blocked read saw
}

// blockUntilDone waits for ctx to be done, noting its deadline.
func (s *fakeStorage) blockUntilDone(ctx context.Context) error {
	if d, ok := ctx.Deadline(); ok {
		s.mu.Lock()
		if d.After(s.deadline) {
			s.deadline = d
		}
		s.mu.Unlock()
	}
	<-ctx.Done()
	return ctx.Err()
}

func newFakeStorage(series ...fakeSeries) *fakeStorage {
	slices.SortFunc(series, func(a, b fakeSeries) int { return labels.Compare(a.lset, b.lset) })
	return &fakeStorage{series: series}
}

func (s *fakeStorage) Querier(mint, maxt int64) (storage.Querier, error) {
	s.open.Add(1)
	return &fakeQuerier{s: s, mint: mint, maxt: maxt}, nil
}

type fakeQuerier struct {
	s          *fakeStorage
	mint, maxt int64
	closed     bool
}

// matching returns the series that match ms, cut to the querier's range;
// series with no sample in the range are left out.
func (q *fakeQuerier) matching(ms []*labels.Matcher) []storage.Series {
	var out []storage.Series
outer:
	for _, fs := range q.s.series {
		for _, m := range ms {
			if !m.Matches(fs.lset.Get(m.Name)) {
				continue outer
			}
		}
		var in []chunks.Sample
		for _, smp := range fs.samples {
			if smp.t >= q.mint && smp.t <= q.maxt {
				in = append(in, smp)
			}
		}
		if len(in) > 0 {
			out = append(out, storage.NewListSeries(fs.lset, in))
		}
	}
	return out
}

func (q *fakeQuerier) Select(ctx context.Context, _ bool, _ *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	if q.s.block {
		return &blockingSet{ctx: ctx, s: q.s}
	}
	return &listSet{series: q.matching(ms), idx: -1, warnings: q.s.warnings}
}

func (q *fakeQuerier) LabelNames(ctx context.Context, _ *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	if q.s.block {
		return nil, nil, q.s.blockUntilDone(ctx)
	}
	var names []string
	for _, s := range q.matching(ms) {
		s.Labels().Range(func(l labels.Label) { names = append(names, l.Name) })
	}
	return q.sorted(names), q.s.warnings, nil
}

func (q *fakeQuerier) LabelValues(ctx context.Context, name string, _ *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	if q.s.block {
		return nil, nil, q.s.blockUntilDone(ctx)
	}
	var vals []string
	for _, s := range q.matching(ms) {
		if v := s.Labels().Get(name); v != "" {
			vals = append(vals, v)
		}
	}
	return q.sorted(vals), q.s.warnings, nil
}

// sorted sorts and dedupes ss, reversed if the storage says so.
func (q *fakeQuerier) sorted(ss []string) []string {
	slices.Sort(ss)
	ss = slices.Compact(ss)
	if q.s.reverse {
		slices.Reverse(ss)
	}
	return ss
}

func (q *fakeQuerier) Close() error {
	if !q.closed {
		q.closed = true
		q.s.open.Add(-1)
	}
	return nil
}

type listSet struct {
	series   []storage.Series
	idx      int
	warnings annotations.Annotations
}

func (s *listSet) Next() bool                        { s.idx++; return s.idx < len(s.series) }
func (s *listSet) At() storage.Series                { return s.series[s.idx] }
func (s *listSet) Err() error                        { return nil }
func (s *listSet) Warnings() annotations.Annotations { return s.warnings }

// blockingSet yields nothing until its context is done, then fails.
type blockingSet struct {
	ctx context.Context
	s   *fakeStorage
	err error
}

func (s *blockingSet) Next() bool {
	s.err = s.s.blockUntilDone(s.ctx)
	return false
}
func (s *blockingSet) At() storage.Series                { return nil }
func (s *blockingSet) Err() error                        { return s.err }
func (s *blockingSet) Warnings() annotations.Annotations { return nil }
