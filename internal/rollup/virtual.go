package rollup

import (
	"context"
	"errors"
	"math"
	"slices"
	"strconv"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/util/annotations"
)

// virtual is the Queryable a rewritten query runs over: selectors on
// markerLabel get an inner's result, all others the data.
type virtual struct {
	storage.Queryable
	results []*result // by inner; set before the query runs
	steps   steps
}

func (v *virtual) Querier(mint, maxt int64) (storage.Querier, error) {
	q, err := v.Queryable.Querier(mint, maxt)
	if err != nil {
		return nil, err
	}
	return virtualQuerier{Querier: q, v: v}, nil
}

type virtualQuerier struct {
	storage.Querier
	v *virtual
}

func (q virtualQuerier) Select(ctx context.Context, sortSeries bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	for _, m := range ms {
		if m.Name != markerLabel {
			continue
		}
		i, err := strconv.Atoi(m.Value)
		if err != nil || i < 0 || i >= len(q.v.results) || len(ms) != 1 {
			return storage.ErrSeriesSet(errMarker)
		}
		series := q.v.results[i].series
		if sortSeries {
			series = slices.Clone(series)
			slices.SortStableFunc(series, func(a, b resultSeries) int { return labels.Compare(a.lset, b.lset) })
		}
		return &resultSet{series: series, steps: q.v.steps, i: -1}
	}
	return q.Querier.Select(ctx, sortSeries, hints, ms...)
}

// errMarker is a selector on markerLabel that is not one of a plan's.
var errMarker = errors.New("rollup: unknown inner selector")

// resultSet serves an inner's series.
type resultSet struct {
	series []resultSeries
	steps  steps
	i      int
}

func (s *resultSet) Next() bool {
	s.i++
	return s.i < len(s.series)
}

func (s *resultSet) At() storage.Series {
	return &stepSeries{resultSeries: &s.series[s.i], steps: s.steps}
}

func (*resultSet) Err() error                        { return nil }
func (*resultSet) Warnings() annotations.Annotations { return nil }

// stepSeries is an inner's series as samples at its steps: the value
// where it has one, a staleness marker where not, so that a selector's
// lookback finds nothing there.
type stepSeries struct {
	*resultSeries
	steps steps
}

func (s *stepSeries) Labels() labels.Labels { return s.lset }

func (s *stepSeries) Iterator(it chunkenc.Iterator) chunkenc.Iterator {
	if si, ok := it.(*stepIterator); ok {
		*si = stepIterator{s: s, k: -1}
		return si
	}
	return &stepIterator{s: s, k: -1}
}

type stepIterator struct {
	s *stepSeries
	k int
}

var staleNaN = math.Float64frombits(value.StaleNaN)

func (it *stepIterator) Next() chunkenc.ValueType {
	if it.k < len(it.s.vals) {
		it.k++
	}
	if it.k >= len(it.s.vals) {
		return chunkenc.ValNone
	}
	return chunkenc.ValFloat
}

// seekT is int64 under another name: go vet's stdmethods check expects
// any method named Seek to be io.Seeker's.
type seekT = int64

func (it *stepIterator) Seek(t seekT) chunkenc.ValueType {
	if it.k < 0 {
		it.k = 0
	}
	for it.k < len(it.s.vals) && it.s.steps.at(it.k) < t {
		it.k++
	}
	if it.k >= len(it.s.vals) {
		return chunkenc.ValNone
	}
	return chunkenc.ValFloat
}

func (it *stepIterator) At() (int64, float64) {
	if !it.s.has[it.k] {
		return it.AtT(), staleNaN
	}
	return it.AtT(), it.s.vals[it.k]
}

func (it *stepIterator) AtT() int64 { return it.s.steps.at(it.k) }
func (*stepIterator) AtST() int64   { return 0 }
func (*stepIterator) Err() error    { return nil }

// AtHistogram and AtFloatHistogram are never called: Next returns
// floats only.
func (it *stepIterator) AtHistogram(*histogram.Histogram) (int64, *histogram.Histogram) {
	return it.AtT(), nil
}

func (it *stepIterator) AtFloatHistogram(*histogram.FloatHistogram) (int64, *histogram.FloatHistogram) {
	return it.AtT(), nil
}
