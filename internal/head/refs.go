package head

import (
	"iter"
	"sync"
	"sync/atomic"

	"github.com/strata-db/strata/internal/storage"
)

// refTable finds a series' number (see stripeSeries) by its ref without
// taking a lock: every sample
// a receiver appends to a known series, and every series a query's
// postings name, is looked up here.
//
// Refs are handed out one after another, so the table is an array
// indexed by ref, in pages of refPageSize: a lookup is two dependent
// loads and no probe, and the series a request appends to, created in
// the order the request names them, are looked up in address order,
// which the processor's prefetcher follows. (An open-addressing table
// hashed by ref, which this replaced, missed the cache on one lookup in
// four at 100k series: 6.5% of the OTLP receiver's CPU.) A page is
// allocated when a series of its refs is added and freed when the last
// of them is removed, so the table costs 4 bytes per ref between the
// first and last live series' pages, and the directory 8 bytes per page
// from the lowest live ref to the highest ref added.
//
// Readers load atomically. Writers (a series added or removed) hold mu;
// the directory is copied to grow, and a reader still on the old copy
// finds what it held.
type refTable struct {
	mu  sync.Mutex
	dir atomic.Pointer[refDir]
}

const (
	refPageBits = 9
	refPageSize = 1 << refPageBits // refs per page: 2 KiB of numbers
)

// refPage holds the numbers of its refs' series, 0 for none.
type refPage [refPageSize]atomic.Uint32

// refDir is the table's directory: pages[i] holds the refs of page
// number base+i (a ref's page number is ref>>refPageBits), nil if none
// is live; live[i] counts them, under refTable.mu.
type refDir struct {
	base  uint64
	pages []atomic.Pointer[refPage]
	live  []int32
}

func newRefTable() *refTable {
	t := &refTable{}
	t.dir.Store(&refDir{pages: make([]atomic.Pointer[refPage], 1), live: make([]int32, 1)})
	return t
}

// get returns the number of the series of ref, 0 if there is none.
func (t *refTable) get(ref storage.SeriesRef) uint32 {
	d := t.dir.Load()
	i := uint64(ref)>>refPageBits - d.base // wraps if below base
	if i >= uint64(len(d.pages)) {
		return 0
	}
	if p := d.pages[i].Load(); p != nil {
		return p[ref&(refPageSize-1)].Load()
	}
	return 0
}

// add puts the series numbered num in the table under its ref, which is
// not in it.
func (t *refTable) add(ref storage.SeriesRef, num uint32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	d := t.dir.Load()
	pn := uint64(ref) >> refPageBits
	if pn-d.base >= uint64(len(d.pages)) {
		d = t.grow(d, pn)
	}
	i := pn - d.base
	p := d.pages[i].Load()
	if p == nil {
		p = new(refPage)
		d.pages[i].Store(p)
	}
	p[ref&(refPageSize-1)].Store(num)
	d.live[i]++
}

// grow swaps in a directory that covers page pn and the live pages of d,
// with room for as many pages again after them, and returns it. Pages
// below the lowest live one are left out.
func (t *refTable) grow(d *refDir, pn uint64) *refDir {
	lo, hi := pn, pn
	for i := range d.pages {
		if d.live[i] > 0 {
			lo, hi = min(lo, d.base+uint64(i)), max(hi, d.base+uint64(i))
		}
	}
	n := 2 * (hi - lo + 1)
	nd := &refDir{base: lo, pages: make([]atomic.Pointer[refPage], n), live: make([]int32, n)}
	for i := range d.pages {
		if d.live[i] > 0 {
			j := d.base + uint64(i) - lo
			nd.pages[j].Store(d.pages[i].Load())
			nd.live[j] = d.live[i]
		}
	}
	t.dir.Store(nd)
	return nd
}

// remove takes the series numbered num out of the table, if it is there
// under ref.
func (t *refTable) remove(ref storage.SeriesRef, num uint32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	d := t.dir.Load()
	i := uint64(ref)>>refPageBits - d.base
	if i >= uint64(len(d.pages)) {
		return
	}
	p := d.pages[i].Load()
	if p == nil || p[ref&(refPageSize-1)].Load() != num {
		return
	}
	p[ref&(refPageSize-1)].Store(0)
	if d.live[i]--; d.live[i] == 0 {
		d.pages[i].Store(nil)
	}
}

// all yields the numbers of the series in the table in the order of
// their refs. Series added or removed meanwhile may or may not be
// yielded.
func (t *refTable) all() iter.Seq[uint32] {
	return func(yield func(uint32) bool) {
		d := t.dir.Load()
		for i := range d.pages {
			p := d.pages[i].Load()
			if p == nil {
				continue
			}
			for j := range p {
				if num := p[j].Load(); num != 0 && !yield(num) {
					return
				}
			}
		}
	}
}
