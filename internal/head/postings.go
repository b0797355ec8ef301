package head

import (
	"slices"
	"sync"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/storage"
)

// index is the inverted index of the head: for every label name and value,
// the sorted refs of the series that have it. Each distinct name and value
// string is held once, as a map key, however many series share it.
//
// All fields are guarded by mu. Posting lists are only ever appended to or
// replaced, never modified in place below their length, so a reader that
// copied a slice header under mu may read it after releasing mu.
type index struct {
	mu     sync.RWMutex
	values map[string]map[string][]storage.SeriesRef
	all    []storage.SeriesRef
	// unsorted is set while the head is replayed, when nothing reads the
	// index: add appends refs in the order series arrive and
	// sortPostings sorts every list once at the end. A checkpoint lists
	// series in map order, and inserting each ref in place copied its
	// lists every time: quadratic in the number of series, 1.25 GB of
	// garbage to replay 10k series.
	unsorted bool
}

func newIndex() *index {
	return &index{values: map[string]map[string][]storage.SeriesRef{}}
}

// add indexes a new series.
func (ix *index) add(ref storage.SeriesRef, lset labels.Labels) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	insert := insertRef
	if ix.unsorted {
		insert = appendRef
	}
	ix.all = insert(ix.all, ref)
	lset.Range(func(l labels.Label) {
		vals, ok := ix.values[l.Name]
		if !ok {
			vals = map[string][]storage.SeriesRef{}
			ix.values[l.Name] = vals
		}
		vals[l.Value] = insert(vals[l.Value], ref)
	})
}

func appendRef(list []storage.SeriesRef, ref storage.SeriesRef) []storage.SeriesRef {
	return append(list, ref)
}

// sortPostings sorts the lists add appended to while unsorted was set, and
// clears it.
func (ix *index) sortPostings() {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	sortRefs := func(list []storage.SeriesRef) []storage.SeriesRef {
		slices.Sort(list)
		return slices.Compact(list)
	}
	ix.all = sortRefs(ix.all)
	for _, vals := range ix.values {
		for v, list := range vals {
			vals[v] = sortRefs(list)
		}
	}
	ix.unsorted = false
}

// insertRef adds ref to the sorted list. Refs are handed out in increasing
// order, so the append at the end is the common case.
func insertRef(list []storage.SeriesRef, ref storage.SeriesRef) []storage.SeriesRef {
	n := len(list)
	if n == 0 || list[n-1] < ref {
		return append(list, ref)
	}
	i, found := slices.BinarySearch(list, ref)
	if found {
		return list
	}
	// Copy rather than shift in place: readers may hold the old slice.
	out := make([]storage.SeriesRef, 0, n+1)
	out = append(out, list[:i]...)
	out = append(out, ref)
	return append(out, list[i:]...)
}

// labelNames returns the sorted label names in the index.
func (ix *index) labelNames() []string {
	ix.mu.RLock()
	names := make([]string, 0, len(ix.values))
	for n := range ix.values {
		names = append(names, n)
	}
	ix.mu.RUnlock()
	slices.Sort(names)
	return names
}

// labelValues returns the sorted values of label name.
func (ix *index) labelValues(name string) []string {
	ix.mu.RLock()
	vals := make([]string, 0, len(ix.values[name]))
	for v := range ix.values[name] {
		vals = append(vals, v)
	}
	ix.mu.RUnlock()
	slices.Sort(vals)
	return vals
}

// postings returns the sorted refs of the series that match all matchers,
// with Prometheus' semantics: a matcher that matches the empty string also
// matches series that do not have the label. The result is the caller's.
func (ix *index) postings(ms []*labels.Matcher) []storage.SeriesRef {
	ix.mu.RLock()
	defer ix.mu.RUnlock()

	var (
		result      []storage.SeriesRef
		intersected bool
		subtract    []storage.SeriesRef
	)
	for _, m := range ms {
		vals := ix.values[m.Name]
		if m.Matches("") {
			// Series without the label match too, so take away those
			// whose value does not match instead.
			subtract = appendUnion(subtract, vals, func(v string) bool { return !m.Matches(v) })
			continue
		}
		var list []storage.SeriesRef
		if m.Type == labels.MatchEqual {
			list = vals[m.Value]
		} else if set := m.SetMatches(); set != nil {
			for _, v := range set {
				list = append(list, vals[v]...)
			}
			list = sortUnique(list)
		} else {
			list = appendUnion(nil, vals, m.Matches)
		}
		if !intersected {
			result = slices.Clone(list)
			intersected = true
		} else {
			result = intersect(result, list)
		}
		if len(result) == 0 {
			return nil
		}
	}
	if !intersected {
		result = slices.Clone(ix.all)
	}
	if len(subtract) > 0 {
		result = without(result, subtract)
	}
	return result
}

// appendUnion appends the posting lists of the values that keep accepts
// and returns them sorted and without duplicates.
func appendUnion(dst []storage.SeriesRef, vals map[string][]storage.SeriesRef, keep func(string) bool) []storage.SeriesRef {
	n := len(dst)
	for v, list := range vals {
		if keep(v) {
			dst = append(dst, list...)
		}
	}
	if len(dst) == n {
		return dst
	}
	return sortUnique(dst)
}

func sortUnique(list []storage.SeriesRef) []storage.SeriesRef {
	slices.Sort(list)
	return slices.Compact(list)
}

// intersect keeps in a the refs that are also in b; both are sorted. It
// reuses a's memory.
func intersect(a, b []storage.SeriesRef) []storage.SeriesRef {
	out := a[:0]
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	return out
}

// without removes from a the refs in b; both are sorted. It reuses a's
// memory.
func without(a, b []storage.SeriesRef) []storage.SeriesRef {
	out := a[:0]
	j := 0
	for _, r := range a {
		for j < len(b) && b[j] < r {
			j++
		}
		if j < len(b) && b[j] == r {
			continue
		}
		out = append(out, r)
	}
	return out
}

// delete removes the series refs, whose label sets are those of series,
// from the index. refs need not be sorted. Lists are replaced, not changed
// in place, as readers may hold them.
func (ix *index) delete(refs []storage.SeriesRef, series []*memSeries) {
	refs = sortUnique(slices.Clone(refs))
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.all = without(slices.Clone(ix.all), refs)
	touched := map[string]map[string]struct{}{}
	for _, s := range series {
		s.lset.Range(func(l labels.Label) {
			vals := touched[l.Name]
			if vals == nil {
				vals = map[string]struct{}{}
				touched[l.Name] = vals
			}
			vals[l.Value] = struct{}{}
		})
	}
	for name, vals := range touched {
		lists := ix.values[name]
		for v := range vals {
			if list := without(slices.Clone(lists[v]), refs); len(list) > 0 {
				lists[v] = list
			} else {
				delete(lists, v)
			}
		}
		if len(lists) == 0 {
			delete(ix.values, name)
		}
	}
}
