package index

import (
	"container/heap"
	"slices"

	"github.com/strata-db/strata/internal/storage"
)

// Postings iterates over series refs in increasing order. A Postings is
// used by one goroutine.
type Postings interface {
	// Next advances to the next ref and reports whether there is one.
	Next() bool
	// Seek advances to the first ref at or after ref, if the current one
	// is before it, and reports whether there is one. It never moves
	// back.
	Seek(ref storage.SeriesRef) bool
	// At returns the current ref.
	At() storage.SeriesRef
	// Err returns the error that ended the iteration, if any.
	Err() error
}

// listPostings iterates over a sorted slice, which it does not modify.
type listPostings struct {
	list    []storage.SeriesRef
	cur     storage.SeriesRef
	started bool // cur is a ref of the list
}

// NewListPostings returns postings over refs, which must be sorted and
// not change while the postings are used.
func NewListPostings(refs []storage.SeriesRef) Postings { return &listPostings{list: refs} }

func (p *listPostings) Next() bool {
	if len(p.list) == 0 {
		p.started = false
		return false
	}
	p.cur, p.list, p.started = p.list[0], p.list[1:], true
	return true
}

func (p *listPostings) Seek(ref storage.SeriesRef) bool {
	if p.started && p.cur >= ref {
		return true
	}
	i, _ := slices.BinarySearch(p.list, ref)
	p.list = p.list[i:]
	return p.Next()
}

func (p *listPostings) At() storage.SeriesRef { return p.cur }
func (p *listPostings) Err() error            { return nil }

type errPostings struct{ err error }

func (p errPostings) Next() bool                  { return false }
func (p errPostings) Seek(storage.SeriesRef) bool { return false }
func (p errPostings) At() storage.SeriesRef       { return 0 }
func (p errPostings) Err() error                  { return p.err }

// EmptyPostings returns postings without refs.
func EmptyPostings() Postings { return errPostings{} }

// ErrPostings returns postings without refs that end with err.
func ErrPostings(err error) Postings { return errPostings{err} }

// Expand returns the refs of p.
func Expand(p Postings) ([]storage.SeriesRef, error) {
	var out []storage.SeriesRef
	for p.Next() {
		out = append(out, p.At())
	}
	return out, p.Err()
}

// Intersect returns the refs that are in all of its; none if its is empty.
func Intersect(its ...Postings) Postings {
	switch len(its) {
	case 0:
		return EmptyPostings()
	case 1:
		return its[0]
	}
	return &intersectPostings{its: its}
}

type intersectPostings struct {
	its     []Postings
	cur     storage.SeriesRef
	started bool // cur is a ref all its have
	err     error
}

func (p *intersectPostings) Next() bool {
	if !p.its[0].Next() {
		p.err, p.started = p.its[0].Err(), false
		return false
	}
	return p.align(p.its[0].At())
}

func (p *intersectPostings) Seek(ref storage.SeriesRef) bool {
	if p.started && p.cur >= ref {
		return true
	}
	if !p.its[0].Seek(ref) {
		p.err, p.started = p.its[0].Err(), false
		return false
	}
	return p.align(p.its[0].At())
}

// align seeks every iterator to target or beyond until all agree.
func (p *intersectPostings) align(target storage.SeriesRef) bool {
	for {
		agreed := true
		for _, it := range p.its {
			if !it.Seek(target) {
				p.err, p.started = it.Err(), false
				return false
			}
			if at := it.At(); at > target {
				target, agreed = at, false
			}
		}
		if agreed {
			p.cur, p.started = target, true
			return true
		}
	}
}

func (p *intersectPostings) At() storage.SeriesRef { return p.cur }
func (p *intersectPostings) Err() error            { return p.err }

// Merge returns the refs that are in any of its, each once.
func Merge(its ...Postings) Postings {
	switch len(its) {
	case 0:
		return EmptyPostings()
	case 1:
		return its[0]
	}
	return &mergePostings{its: its}
}

// mergePostings keeps its iterators in a min-heap by current ref.
type mergePostings struct {
	its     []Postings
	h       postingsHeap
	started bool
	ok      bool // cur is a ref of one of its
	cur     storage.SeriesRef
	err     error
}

type postingsHeap []Postings

func (h postingsHeap) Len() int           { return len(h) }
func (h postingsHeap) Less(i, j int) bool { return h[i].At() < h[j].At() }
func (h postingsHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *postingsHeap) Push(x any)        { *h = append(*h, x.(Postings)) }
func (h *postingsHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// start positions every iterator at its first ref at or after ref.
func (p *mergePostings) start(ref storage.SeriesRef, seek bool) bool {
	p.started = true
	p.h = make(postingsHeap, 0, len(p.its))
	for _, it := range p.its {
		ok := false
		if seek {
			ok = it.Seek(ref)
		} else {
			ok = it.Next()
		}
		if ok {
			p.h = append(p.h, it)
		} else if err := it.Err(); err != nil {
			p.err = err
			return false
		}
	}
	heap.Init(&p.h)
	return p.pop()
}

// pop takes the smallest ref and advances every iterator at it.
func (p *mergePostings) pop() bool {
	p.ok = false
	if len(p.h) == 0 {
		return false
	}
	p.cur = p.h[0].At()
	for len(p.h) > 0 && p.h[0].At() == p.cur {
		if p.h[0].Next() {
			heap.Fix(&p.h, 0)
			continue
		}
		if err := p.h[0].Err(); err != nil {
			p.err = err
			return false
		}
		heap.Pop(&p.h)
	}
	p.ok = true
	return true
}

func (p *mergePostings) Next() bool {
	if p.err != nil {
		return false
	}
	if !p.started {
		return p.start(0, false)
	}
	return p.pop()
}

func (p *mergePostings) Seek(ref storage.SeriesRef) bool {
	if p.err != nil {
		return false
	}
	if !p.started {
		return p.start(ref, true)
	}
	if p.ok && p.cur >= ref {
		return true
	}
	for len(p.h) > 0 && p.h[0].At() < ref {
		if p.h[0].Seek(ref) {
			heap.Fix(&p.h, 0)
			continue
		}
		if err := p.h[0].Err(); err != nil {
			p.err = err
			return false
		}
		heap.Pop(&p.h)
	}
	return p.pop()
}

func (p *mergePostings) At() storage.SeriesRef { return p.cur }
func (p *mergePostings) Err() error            { return p.err }

// Without returns the refs of full that are not in drop.
func Without(full, drop Postings) Postings {
	return &withoutPostings{full: full, drop: drop, dropOK: true}
}

type withoutPostings struct {
	full, drop  Postings
	dropOK      bool // drop has a current ref, or has not started
	dropStarted bool
	cur         storage.SeriesRef
	started     bool // cur is a ref of full not in drop
	err         error
}

func (p *withoutPostings) Next() bool {
	if !p.full.Next() {
		p.err, p.started = p.full.Err(), false
		return false
	}
	return p.skipDropped()
}

func (p *withoutPostings) Seek(ref storage.SeriesRef) bool {
	if p.started && p.cur >= ref {
		return true
	}
	if !p.full.Seek(ref) {
		p.err, p.started = p.full.Err(), false
		return false
	}
	return p.skipDropped()
}

// skipDropped moves full past the refs drop holds.
func (p *withoutPostings) skipDropped() bool {
	for {
		ref := p.full.At()
		if p.dropOK && (!p.dropStarted || p.drop.At() < ref) {
			p.dropStarted = true
			if p.dropOK = p.drop.Seek(ref); !p.dropOK {
				if err := p.drop.Err(); err != nil {
					p.err, p.started = err, false
					return false
				}
			}
		}
		if !p.dropOK || p.drop.At() != ref {
			p.cur, p.started = ref, true
			return true
		}
		if !p.full.Next() {
			p.err, p.started = p.full.Err(), false
			return false
		}
	}
}

func (p *withoutPostings) At() storage.SeriesRef { return p.cur }
func (p *withoutPostings) Err() error            { return p.err }
