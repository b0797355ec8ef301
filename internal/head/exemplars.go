package head

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/strata-db/strata/internal/record"
	"github.com/strata-db/strata/internal/storage"
)

// exemplarStore keeps the newest exemplars of all series in one ring of
// fixed capacity, as Prometheus does: a busy series cannot grow without
// bound, and the oldest exemplars, whatever their series, make room for
// new ones. Each entry links to the next newer entry of its series, so a
// series' exemplars are found without scanning the ring.
//
// All fields are guarded by mu.
type exemplarStore struct {
	mu       sync.RWMutex
	capacity int
	ring     []exemplarEntry // grows up to capacity, then wraps
	next     int             // where the next exemplar goes once full
	added    uint64          // exemplars stored so far
	series   map[storage.SeriesRef]*exemplarSeries
}

type exemplarEntry struct {
	e     exemplar.Exemplar
	s     *exemplarSeries
	newer int // index of the next newer entry of the series; -1 if none
}

// exemplarSeries locates a series' exemplars in the ring.
type exemplarSeries struct {
	ref            storage.SeriesRef
	lset           labels.Labels
	oldest, newest int
}

func newExemplarStore(capacity int) *exemplarStore {
	return &exemplarStore{capacity: capacity, series: map[storage.SeriesRef]*exemplarSeries{}}
}

// validate checks e against the newest exemplar of series ref. dup reports
// an exact repeat, which is accepted and dropped.
func (es *exemplarStore) validate(ref storage.SeriesRef, e exemplar.Exemplar) (dup bool, err error) {
	n, valid := 0, true
	e.Labels.Range(func(l labels.Label) {
		n += utf8.RuneCountInString(l.Name) + utf8.RuneCountInString(l.Value)
		valid = valid && utf8.ValidString(l.Name) && utf8.ValidString(l.Value)
	})
	if !valid {
		return false, fmt.Errorf("%w: exemplar labels are not valid UTF-8", storage.ErrInvalidLabels)
	}
	if n > exemplar.ExemplarMaxLabelSetLength {
		return false, storage.ErrExemplarLabelLength
	}
	es.mu.RLock()
	defer es.mu.RUnlock()
	s := es.series[ref]
	if s == nil {
		return false, nil
	}
	newest := es.ring[s.newest].e
	switch {
	case newest.Equals(e):
		return true, nil
	case e.Ts < newest.Ts:
		return false, storage.ErrOutOfOrderExemplar
	}
	return false, nil
}

// add stores exemplars validated before (or replayed), dropping any that
// is now out of order or a repeat. lsetOf gives a series' labels.
func (es *exemplarStore) add(exemplars []record.RefExemplar, lsetOf func(storage.SeriesRef) (labels.Labels, bool)) {
	if es.capacity <= 0 {
		return
	}
	es.mu.Lock()
	defer es.mu.Unlock()
	for _, re := range exemplars {
		e := exemplar.Exemplar{Labels: re.Labels, Value: re.V, Ts: re.T, HasTs: re.HasTs}
		var lset labels.Labels
		if s := es.series[re.Ref]; s != nil {
			newest := es.ring[s.newest].e
			if newest.Equals(e) || e.Ts < newest.Ts {
				continue
			}
			lset = s.lset
		} else {
			var ok bool
			if lset, ok = lsetOf(re.Ref); !ok {
				continue
			}
		}
		// The slot first: the exemplar it evicts may be the series' last,
		// which removes the series.
		i := es.slot()
		s := es.series[re.Ref]
		if s == nil {
			s = &exemplarSeries{ref: re.Ref, lset: lset, oldest: -1, newest: -1}
			es.series[re.Ref] = s
		}
		es.added++
		es.ring[i] = exemplarEntry{e: e, s: s, newer: -1}
		if s.newest >= 0 {
			es.ring[s.newest].newer = i
		} else {
			s.oldest = i
		}
		s.newest = i
	}
}

// slot returns the index for a new entry, evicting the oldest entry once
// the ring is full.
func (es *exemplarStore) slot() int {
	if len(es.ring) < es.capacity {
		es.ring = append(es.ring, exemplarEntry{})
		return len(es.ring) - 1
	}
	i := es.next
	es.next = (es.next + 1) % es.capacity
	old := es.ring[i]
	if old.s != nil {
		old.s.oldest = old.newer
		if old.newer < 0 {
			// That was the series' last exemplar.
			delete(es.series, old.s.ref)
		}
	}
	return i
}

// since returns the exemplars still held of those stored after the first
// mark, oldest first, for a checkpoint (all of them for mark 0, a delta's
// since the last checkpoint for the count that one returned), and the
// count stored so far.
func (es *exemplarStore) since(mark uint64) ([]record.RefExemplar, uint64) {
	es.mu.RLock()
	defer es.mu.RUnlock()
	n := len(es.ring)
	skip := 0
	if newer := es.added - mark; newer < uint64(n) {
		skip = n - int(newer)
	}
	out := make([]record.RefExemplar, 0, n-skip)
	for k := skip; k < n; k++ {
		i := k
		if n == es.capacity {
			i = (es.next + k) % n
		}
		en := es.ring[i]
		if en.s == nil {
			continue
		}
		out = append(out, record.RefExemplar{Ref: en.s.ref, T: en.e.Ts, V: en.e.Value, HasTs: en.e.HasTs, Labels: en.e.Labels})
	}
	return out, es.added
}

// ExemplarQuerier implements Prometheus' storage.ExemplarQueryable.
func (h *Head) ExemplarQuerier(context.Context) (promstorage.ExemplarQuerier, error) {
	return exemplarQuerier{h.exemplars}, nil
}

type exemplarQuerier struct{ es *exemplarStore }

// Select returns the exemplars in [start, end] of the series matching any
// of the matcher sets, oldest first, series sorted by labels.
func (q exemplarQuerier) Select(start, end int64, matchers ...[]*labels.Matcher) ([]exemplar.QueryResult, error) {
	q.es.mu.RLock()
	defer q.es.mu.RUnlock()
	var out []exemplar.QueryResult
	for _, s := range q.es.series {
		if !matchesAny(s.lset, matchers) {
			continue
		}
		var res []exemplar.Exemplar
		for i := s.oldest; i >= 0; i = q.es.ring[i].newer {
			if e := q.es.ring[i].e; e.Ts >= start && e.Ts <= end {
				res = append(res, e)
			}
		}
		if len(res) > 0 {
			out = append(out, exemplar.QueryResult{SeriesLabels: s.lset, Exemplars: res})
		}
	}
	slices.SortFunc(out, func(a, b exemplar.QueryResult) int { return labels.Compare(a.SeriesLabels, b.SeriesLabels) })
	return out, nil
}

func matchesAny(lset labels.Labels, sets [][]*labels.Matcher) bool {
	for _, set := range sets {
		ok := true
		for _, m := range set {
			if !m.Matches(lset.Get(m.Name)) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}
