package index

import (
	"slices"
	"sync"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/storage"
)

// MemPostings is the head's inverted index: for every label name and
// value, the sorted refs of the series that have it, compressed (see
// refList). Each distinct name and value string is held once, as a map
// key, however many series share it. It implements PostingsReader and is
// safe for concurrent use.
//
// Locks are per label name: names guards the map of names, and each
// name's values are guarded by that name's own lock. A query takes a
// name's lock only to copy its value list or to read the lists of the
// values it chose, never while it matches a regular expression, so a
// heavy query does not hold up the creation of series. Lists are only
// appended to or replaced, never changed in place: a reader that took a
// list's postings under a lock may read them after releasing it.
type MemPostings struct {
	mu    sync.RWMutex // guards names and all
	names map[string]*memValues
	all   refList
	// unsorted is set while the head is replayed, when nothing reads the
	// index: Add keeps the refs that arrive out of order aside and
	// EnsureOrder sorts them into every list once at the end. A
	// checkpoint lists series in map order, and inserting each ref in
	// place rebuilt its lists every time: quadratic in the number of
	// series.
	unsorted bool
}

// memValues are the postings of one label name.
type memValues struct {
	mu   sync.RWMutex
	vals map[string]refList
}

// NewMemPostings returns an empty index.
func NewMemPostings() *MemPostings {
	return &MemPostings{names: map[string]*memValues{}}
}

// NewUnorderedMemPostings returns an empty index for bulk loading: Add
// appends without keeping lists sorted, and EnsureOrder must be called
// before anything reads it.
func NewUnorderedMemPostings() *MemPostings {
	p := NewMemPostings()
	p.unsorted = true
	return p
}

// Add indexes a new series, whose labels rangeLabels calls its argument
// on (as labels.Labels.Range does). The index keeps the strings of names
// and values it has not seen.
func (p *MemPostings) Add(ref storage.SeriesRef, rangeLabels func(func(labels.Label))) {
	p.mu.Lock()
	unsorted := p.unsorted
	p.all = p.all.add(ref, unsorted)
	p.mu.Unlock()
	rangeLabels(func(l labels.Label) {
		mv := p.values(l.Name, true)
		mv.mu.Lock()
		mv.vals[l.Value] = mv.vals[l.Value].add(ref, unsorted)
		mv.mu.Unlock()
	})
}

// values returns the postings of name, creating them if create is set.
func (p *MemPostings) values(name string, create bool) *memValues {
	p.mu.RLock()
	mv := p.names[name]
	p.mu.RUnlock()
	if mv != nil || !create {
		return mv
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if mv = p.names[name]; mv == nil {
		mv = &memValues{vals: map[string]refList{}}
		p.names[name] = mv
	}
	return mv
}

// EnsureOrder sorts the lists Add appended to since
// NewUnorderedMemPostings, and makes Add keep them sorted from then on.
func (p *MemPostings) EnsureOrder() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.unsorted {
		return
	}
	p.all = p.all.sorted()
	for _, mv := range p.names {
		mv.mu.Lock()
		for v, list := range mv.vals {
			mv.vals[v] = list.sorted()
		}
		mv.mu.Unlock()
	}
	p.unsorted = false
}

// Delete removes the series refs, whose label sets are lsets, from the
// index. Lists are replaced, not changed in place, as readers may hold
// them.
func (p *MemPostings) Delete(refs []storage.SeriesRef, lsets []labels.Labels) {
	refs = slices.Clone(refs)
	slices.Sort(refs)
	refs = slices.Compact(refs)
	p.mu.Lock()
	p.all = p.all.without(refs)
	p.mu.Unlock()

	touched := map[string]map[string]struct{}{}
	for _, lset := range lsets {
		lset.Range(func(l labels.Label) {
			vals := touched[l.Name]
			if vals == nil {
				vals = map[string]struct{}{}
				touched[l.Name] = vals
			}
			vals[l.Value] = struct{}{}
		})
	}
	for name, vals := range touched {
		mv := p.values(name, false)
		if mv == nil {
			continue
		}
		mv.mu.Lock()
		for v := range vals {
			if list := mv.vals[v].without(refs); list.len() > 0 {
				mv.vals[v] = list
			} else {
				delete(mv.vals, v)
			}
		}
		empty := len(mv.vals) == 0
		mv.mu.Unlock()
		if empty {
			p.mu.Lock()
			// Another Add may have filled it meanwhile.
			mv.mu.RLock()
			if len(mv.vals) == 0 {
				delete(p.names, name)
			}
			mv.mu.RUnlock()
			p.mu.Unlock()
		}
	}
}

// LabelNames returns the sorted label names.
func (p *MemPostings) LabelNames() []string {
	p.mu.RLock()
	names := make([]string, 0, len(p.names))
	for n := range p.names {
		names = append(names, n)
	}
	p.mu.RUnlock()
	slices.Sort(names)
	return names
}

// LabelValues implements PostingsReader.
func (p *MemPostings) LabelValues(name string) ([]string, error) {
	mv := p.values(name, false)
	if mv == nil {
		return nil, nil
	}
	mv.mu.RLock()
	vals := make([]string, 0, len(mv.vals))
	for v := range mv.vals {
		vals = append(vals, v)
	}
	mv.mu.RUnlock()
	slices.Sort(vals)
	return vals, nil
}

// Postings implements PostingsReader.
func (p *MemPostings) Postings(name string, values ...string) (Postings, error) {
	mv := p.values(name, false)
	if mv == nil {
		return EmptyPostings(), nil
	}
	its := make([]Postings, 0, len(values))
	mv.mu.RLock()
	for _, v := range values {
		if list := mv.vals[v]; list.len() > 0 {
			its = append(its, list.postings())
		}
	}
	mv.mu.RUnlock()
	return Merge(its...), nil
}

// AllPostings implements PostingsReader.
func (p *MemPostings) AllPostings() (Postings, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.all.postings(), nil
}

// Stats are counts over the whole index, for /api/v1/status/tsdb.
type Stats struct {
	LabelPairs int // distinct label name and value pairs
}

// Stats returns counts over the index.
func (p *MemPostings) Stats() Stats {
	var st Stats
	p.mu.RLock()
	defer p.mu.RUnlock()
	for _, mv := range p.names {
		mv.mu.RLock()
		st.LabelPairs += len(mv.vals)
		mv.mu.RUnlock()
	}
	return st
}
