package index

import (
	"encoding/binary"
	"slices"
	"sort"

	"github.com/strata-db/strata/internal/storage"
)

// refList is a postings list of the head's index: sorted series refs,
// kept as the differences between neighbours in unsigned varints.
//
// The head hands out refs one after another and creates the series of a
// label value close together (an instance's series, a metric's on each
// instance), so a difference takes one or two bytes where a SeriesRef
// takes eight. At a million series of a dozen labels, the lists of
// values many series share are most of the index, and they shrink to a
// fifth. Most values of a label with a value per series (a pod, an
// address) have one series: such a list is its ref alone, in the map
// entry, with no allocation.
//
// The zero refList is empty. A list is changed by add, which returns the
// new list for the caller to store; the bytes a reader took (see
// postings) are never changed, only appended after, or replaced.
type refList struct {
	// one is the only ref plus one, when more is nil; 0 for no ref.
	one  storage.SeriesRef
	more *refData
}

// refData is a refList of more than one ref.
type refData struct {
	// deltas are the differences, the first from 0.
	deltas []byte
	// skips mark every refSkipEvery-th ref and where the difference
	// after it starts, for Seek.
	skips []refSkip
	last  storage.SeriesRef
	n     int
	// pending are refs added out of order to an unsorted index (replay),
	// merged in by sorted.
	pending []storage.SeriesRef
}

type refSkip struct {
	ref storage.SeriesRef
	off int
}

// refSkipEvery is how many refs lie between skips: a Seek decodes at
// most this many, and skips cost 16 bytes per that many refs.
const refSkipEvery = 64

// len returns the number of refs, counting pending ones.
func (l refList) len() int {
	switch {
	case l.more != nil:
		return l.more.n + len(l.more.pending)
	case l.one != 0:
		return 1
	}
	return 0
}

// add returns the list with ref added. An unsorted list (replay) takes a
// ref below its last in pending, for sorted to merge in; a sorted one
// is rebuilt around it (series are created in ref order, so that is
// rare).
func (l refList) add(ref storage.SeriesRef, unsorted bool) refList {
	switch {
	case l.more == nil && l.one == 0:
		return refList{one: ref + 1}
	case l.more == nil:
		first := l.one - 1
		if ref == first {
			return l
		}
		d := &refData{}
		d.append(min(first, ref))
		d.append(max(first, ref))
		return refList{more: d}
	case ref > l.more.last:
		l.more.append(ref)
		return l
	case unsorted:
		l.more.pending = append(l.more.pending, ref)
		return l
	}
	refs := l.refs()
	i, found := slices.BinarySearch(refs, ref)
	if found {
		return l
	}
	return newRefList(slices.Insert(refs, i, ref))
}

// append adds ref, which is above every ref of d.
func (d *refData) append(ref storage.SeriesRef) {
	d.deltas = binary.AppendUvarint(d.deltas, uint64(ref-d.last))
	d.last = ref
	d.n++
	if d.n%refSkipEvery == 0 {
		d.skips = append(d.skips, refSkip{ref: ref, off: len(d.deltas)})
	}
}

// newRefList returns the list of refs, which are sorted and distinct.
func newRefList(refs []storage.SeriesRef) refList {
	switch len(refs) {
	case 0:
		return refList{}
	case 1:
		return refList{one: refs[0] + 1}
	}
	d := &refData{deltas: make([]byte, 0, len(refs)+len(refs)/4)}
	for _, r := range refs {
		d.append(r)
	}
	return refList{more: d}
}

// refs returns the refs of the list in order, pending ones left out.
func (l refList) refs() []storage.SeriesRef {
	if l.more == nil {
		if l.one == 0 {
			return nil
		}
		return []storage.SeriesRef{l.one - 1}
	}
	refs := make([]storage.SeriesRef, 0, l.more.n+len(l.more.pending))
	it := l.postings().(*refListPostings)
	for it.Next() {
		refs = append(refs, it.cur)
	}
	return refs
}

// sorted returns the list with its pending refs merged in.
func (l refList) sorted() refList {
	if l.more == nil || len(l.more.pending) == 0 {
		return l
	}
	refs := append(l.refs(), l.more.pending...)
	slices.Sort(refs)
	return newRefList(slices.Compact(refs))
}

// without returns the list without the refs in drop, which is sorted.
func (l refList) without(drop []storage.SeriesRef) refList {
	refs := l.refs()
	kept := refs[:0]
	for _, r := range refs {
		if _, found := slices.BinarySearch(drop, r); !found {
			kept = append(kept, r)
		}
	}
	if len(kept) == len(refs) {
		return l
	}
	return newRefList(kept)
}

// postings returns an iterator over the refs the list holds now; refs
// added later are not seen. It must be called under the lock add is
// called under; the iterator may be used after its release.
func (l refList) postings() Postings {
	if l.more == nil {
		if l.one == 0 {
			return EmptyPostings()
		}
		return &onePostings{ref: l.one - 1}
	}
	return &refListPostings{deltas: l.more.deltas, skips: l.more.skips}
}

// refListPostings decodes a refList.
type refListPostings struct {
	deltas []byte
	skips  []refSkip
	off    int // where the next difference starts
	cur    storage.SeriesRef
	state  postingsState
}

type postingsState uint8

const (
	postingsUnstarted postingsState = iota
	postingsAt                      // cur is a ref of the list
	postingsDone
)

func (p *refListPostings) Next() bool {
	if p.off >= len(p.deltas) {
		p.state = postingsDone
		return false
	}
	if b := p.deltas[p.off]; b < 0x80 {
		p.cur += storage.SeriesRef(b)
		p.off++
	} else {
		d, n := binary.Uvarint(p.deltas[p.off:])
		p.cur += storage.SeriesRef(d)
		p.off += n
	}
	p.state = postingsAt
	return true
}

func (p *refListPostings) Seek(ref storage.SeriesRef) bool {
	switch {
	case p.state == postingsDone:
		return false
	case p.state == postingsAt && p.cur >= ref:
		return true
	}
	// Jump to the last skip below ref, if it is ahead.
	if i := sort.Search(len(p.skips), func(i int) bool { return p.skips[i].ref >= ref }) - 1; i >= 0 && p.skips[i].off > p.off {
		p.cur, p.off = p.skips[i].ref, p.skips[i].off
	}
	for p.Next() {
		if p.cur >= ref {
			return true
		}
	}
	return false
}

func (p *refListPostings) At() storage.SeriesRef { return p.cur }
func (p *refListPostings) Err() error            { return nil }

// onePostings iterates over one ref.
type onePostings struct {
	ref   storage.SeriesRef
	state postingsState
}

func (p *onePostings) Next() bool {
	if p.state != postingsUnstarted {
		p.state = postingsDone
		return false
	}
	p.state = postingsAt
	return true
}

func (p *onePostings) Seek(ref storage.SeriesRef) bool {
	if p.state == postingsDone {
		return false
	}
	if p.ref < ref {
		p.state = postingsDone
		return false
	}
	p.state = postingsAt
	return true
}

func (p *onePostings) At() storage.SeriesRef { return p.ref }
func (p *onePostings) Err() error            { return nil }
