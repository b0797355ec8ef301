package index

import (
	"encoding/binary"
	"slices"
	"sort"

	"github.com/strata-db/strata/internal/storage"
)

// refList is a postings list of the head's index: sorted series refs,
// kept as the differences between neighbours in unsigned varints, with
// runs of equal differences written once.
//
// The head hands out refs one after another and creates the series of a
// label value close together (an instance's series, a metric's on each
// instance), so a difference takes one or two bytes where a SeriesRef
// takes eight, and the lists of the labels a whole target shares (its
// job, instance, region, cluster) are runs of refs one apart: a run
// takes a few bytes however long it is. At a million series of eleven
// labels the differences took 12.1 MB; with runs, 2.4 MB. Most values
// of a label with a value per series (a pod, an address) have one
// series: such a list is its ref alone, in the map entry, with no
// allocation.
//
// The zero refList is empty. A list is changed by add, which returns the
// new list for the caller to store; the bytes a reader took (see
// postings) are never changed, only appended after, or replaced.
type refList struct {
	// one is the only ref plus one, when more is nil; 0 for no ref.
	one  storage.SeriesRef
	more *refData
}

// refData is a refList of more than one ref. Its bytes are a sequence of
// entries:
//
//   - a nonzero uvarint d: the next ref is the last one plus d, and d
//     becomes the step;
//   - a zero byte and a uvarint c: the next c refs are each the step
//     above the one before.
//
// The first difference is from -1, so that no difference is zero. A run
// still growing is not written: repeat counts its refs, which come after
// the bytes, and it is written as the list changes step.
type refData struct {
	deltas []byte
	// skips mark where an entry that is a difference starts, and the ref
	// before it, every refSkipBytes bytes or so, for Seek.
	skips []refSkip
	// pending are refs added out of order to an unsorted index (replay),
	// merged in by sorted.
	pending []storage.SeriesRef
	last    storage.SeriesRef
	step    storage.SeriesRef
	// n is the number of refs, repeat the refs of the unwritten run. A
	// list holds at most one ref per series, and the head has fewer than
	// 2^32 series (see cellPool.allocNumbered).
	n, repeat uint32
}

type refSkip struct {
	ref storage.SeriesRef
	off int
}

// refSkipBytes is how many bytes of entries lie between skips, at
// least: a Seek decodes at most about this many entries, and skips cost
// 16 bytes per that many bytes.
const refSkipBytes = 64

// len returns the number of refs, counting pending ones.
func (l refList) len() int {
	switch {
	case l.more != nil:
		return int(l.more.n) + len(l.more.pending)
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
	diff := ref - d.last
	if d.n == 0 {
		diff = ref + 1
	}
	d.last = ref
	d.n++
	if diff == d.step {
		d.repeat++
		return
	}
	d.writeRun()
	lastSkip := 0
	if len(d.skips) > 0 {
		lastSkip = d.skips[len(d.skips)-1].off
	}
	if len(d.deltas)-lastSkip >= refSkipBytes {
		d.skips = append(d.skips, refSkip{ref: ref - diff, off: len(d.deltas)})
	}
	d.deltas = binary.AppendUvarint(d.deltas, uint64(diff))
	d.step = diff
}

// writeRun writes the unwritten run: as its one difference, or as a
// count.
func (d *refData) writeRun() {
	switch d.repeat {
	case 0:
		return
	case 1:
		d.deltas = binary.AppendUvarint(d.deltas, uint64(d.step))
	default:
		d.deltas = append(d.deltas, 0)
		d.deltas = binary.AppendUvarint(d.deltas, uint64(d.repeat))
	}
	d.repeat = 0
}

// newRefList returns the list of refs, which are sorted and distinct.
func newRefList(refs []storage.SeriesRef) refList {
	switch len(refs) {
	case 0:
		return refList{}
	case 1:
		return refList{one: refs[0] + 1}
	}
	d := &refData{}
	for _, r := range refs {
		d.append(r)
	}
	// Runs make the size unknown until the end; keep only what is used.
	d.deltas = slices.Clone(d.deltas)
	d.skips = slices.Clone(d.skips)
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
	refs := make([]storage.SeriesRef, 0, l.len())
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
	d := l.more
	return &refListPostings{deltas: d.deltas, skips: d.skips, tail: d.repeat, cur: ^storage.SeriesRef(0)}
}

// refListPostings decodes a refList.
type refListPostings struct {
	deltas []byte
	skips  []refSkip
	off    int // where the next entry starts
	cur    storage.SeriesRef
	step   storage.SeriesRef
	// left is how many refs of the run cur is in come after it; tail is
	// the list's unwritten run, which follows the bytes.
	left, tail uint32
	state      postingsState
}

type postingsState uint8

const (
	postingsUnstarted postingsState = iota
	postingsAt                      // cur is a ref of the list
	postingsDone
)

func (p *refListPostings) Next() bool {
	switch {
	case p.left > 0:
		p.left--
		p.cur += p.step
	case p.off < len(p.deltas) && p.deltas[p.off]-1 < 0x7f:
		// A difference below 128, in one byte: most entries.
		p.step = storage.SeriesRef(p.deltas[p.off])
		p.cur += p.step
		p.off++
	default:
		return p.nextEntry()
	}
	p.state = postingsAt
	return true
}

// nextEntry is Next for an entry of more than one byte or the end.
func (p *refListPostings) nextEntry() bool {
	switch {
	case p.off < len(p.deltas):
		if p.deltas[p.off] == 0 {
			c, n := binary.Uvarint(p.deltas[p.off+1:])
			p.off += 1 + n
			p.left = uint32(c) - 1
			p.cur += p.step
			break
		}
		d, n := binary.Uvarint(p.deltas[p.off:])
		p.step = storage.SeriesRef(d)
		p.cur += p.step
		p.off += n
	case p.tail > 0:
		p.left, p.tail = p.tail-1, 0
		p.cur += p.step
	default:
		p.state = postingsDone
		return false
	}
	p.state = postingsAt
	return true
}

// seekRun moves to the first ref of the run cur is in that is at least
// ref, which is above cur, or else to the run's last ref.
func (p *refListPostings) seekRun(ref storage.SeriesRef) {
	k := min((ref-p.cur-1)/p.step+1, storage.SeriesRef(p.left))
	p.cur += k * p.step
	p.left -= uint32(k)
}

// Seek decodes entries in place of calling Next, a call a ref fewer.
func (p *refListPostings) Seek(ref storage.SeriesRef) bool {
	switch {
	case p.state == postingsDone:
		return false
	case p.state == postingsAt && p.cur >= ref:
		return true
	}
	// Jump to the last skip below ref, if it is ahead.
	if i := sort.Search(len(p.skips), func(i int) bool { return p.skips[i].ref >= ref }) - 1; i >= 0 && p.skips[i].off > p.off {
		p.cur, p.off, p.left = p.skips[i].ref, p.skips[i].off, 0
	}
	for {
		switch {
		case p.left > 0:
			p.seekRun(ref)
		case p.off < len(p.deltas) && p.deltas[p.off]-1 < 0x7f:
			p.step = storage.SeriesRef(p.deltas[p.off])
			p.cur += p.step
			p.off++
		case !p.nextEntry():
			return false
		}
		if p.cur >= ref {
			p.state = postingsAt
			return true
		}
	}
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
