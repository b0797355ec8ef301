package head

import (
	"errors"
	"math"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"

	"github.com/strata-db/strata/internal/storage"
)

// TestSeriesApply walks one series through the decisions Commit and
// replay share (applyFloat, applyHistogram): every kind in order, exact duplicates, other values at
// the same timestamp, and late samples, inserted unless they repeat a
// timestamp.
func TestSeriesApply(t *testing.T) {
	h1, h2 := testHistogram(1), testHistogram(2)
	fh := testHistogram(3).ToFloat(nil)
	stale := math.Float64frombits(0x7ff0000000000002) // Prometheus' staleness marker
	steps := []struct {
		name string
		t    int64
		v    float64
		h    *histogram.Histogram
		fh   *histogram.FloatHistogram
		ok   bool
		err  error
	}{
		{"first float", 10, 1, nil, nil, true, nil},
		{"next float", 20, 2, nil, nil, true, nil},
		{"exact duplicate", 20, 2, nil, nil, false, nil},
		{"other value, same time", 20, 3, nil, nil, false, storage.ErrDuplicateSampleForTimestamp},
		{"late", 15, 3, nil, nil, true, nil},
		{"late exact duplicate", 10, 1, nil, nil, false, nil},
		{"late other value", 10, 5, nil, nil, false, storage.ErrDuplicateSampleForTimestamp},
		{"stale marker", 30, stale, nil, nil, true, nil},
		{"repeated stale marker", 30, stale, nil, nil, false, nil},
		{"histogram after floats", 40, 0, h1, nil, true, nil},
		{"same histogram again", 40, 0, h1, nil, false, nil},
		{"other histogram, same time", 40, 0, h2, nil, false, storage.ErrDuplicateSampleForTimestamp},
		{"float at a histogram's time", 40, 1, nil, nil, false, storage.ErrDuplicateSampleForTimestamp},
		{"float histogram", 50, 0, nil, fh, true, nil},
		{"late histogram", 45, 0, h2, nil, true, nil},
		{"late histogram again", 45, 0, h2, nil, false, nil},
		{"late float at a histogram's time", 45, 1, nil, nil, false, storage.ErrDuplicateSampleForTimestamp},
		{"float after histograms", 60, 4, nil, nil, true, nil},
	}
	s := newMemSeries(1)
	m := &chunkMem{samples: 120, arena: &chunkArena{}, series: new(cellPool)}
	for _, st := range steps {
		var (
			ok  bool
			err error
		)
		if st.h == nil && st.fh == nil {
			ok, err = s.applyFloat(st.t, st.v, m)
		} else {
			ok, err = s.applyHistogram(st.t, st.h, st.fh, m)
		}
		if ok != st.ok || !errors.Is(err, st.err) {
			t.Errorf("%s: apply = %v, %v; want %v, %v", st.name, ok, err, st.ok, st.err)
		}
	}
	if s.maxt != 60 || s.lastV != 4 {
		t.Errorf("newest sample (%d, %g), want (60, 4)", s.maxt, s.lastV)
	}
}

// newMemSeries returns a series on the Go heap, outside any head, without
// labels.
func newMemSeries(ref storage.SeriesRef) *memSeries {
	s := &memSeries{}
	s.init(ref, symIDs{})
	return s
}
