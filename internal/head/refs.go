package head

import (
	"iter"
	"sync"
	"sync/atomic"

	"github.com/strata-db/strata/internal/storage"
)

// refTable finds a series by its ref without taking a lock: every sample
// a receiver appends to a known series, and every series a query's
// postings name, is looked up here. It is an open-addressing table of
// (ref, series) slots probed linearly from the ref's hash, read with
// atomic loads only. A profile at 100k series had the striped maps it
// replaces, their read lock and their map, at 13% of the receiver's CPU,
// mostly cache misses on the lock and the map's groups: a lookup here
// misses on one slot, next to its ref.
//
// Writers (a series added or removed) hold mu. A slot goes from empty to
// holding a ref and its series, and from that to a tombstone when the
// series is removed; it is never reused in the same table, so a reader
// that matched a slot's ref reads that ref's series, or the tombstone.
// The series is stored before the ref, so a reader that sees the ref sees
// the series. When live series and tombstones fill three quarters of the
// slots, or live series fall under an eighth, the writer builds a new
// table of the live series and swaps it in; a reader still on the old
// one finds what it held.
type refTable struct {
	mu   sync.Mutex
	tab  atomic.Pointer[refSlots]
	live int // series in tab, under mu
	used int // slots holding a ref, live or removed, under mu
}

type refSlots struct {
	mask  uint64
	slots []refSlot
}

// refSlot is 16 bytes: four to a cache line, so that a probe past the
// first slot rarely costs another miss.
type refSlot struct {
	ref atomic.Uint64
	s   atomic.Pointer[memSeries]
}

// removed marks the slot of a series taken out of the table.
var removed = &memSeries{}

// minRefSlots is the smallest table: an empty head takes 1 KiB.
const minRefSlots = 64

func newRefTable() *refTable {
	t := &refTable{}
	t.tab.Store(newRefSlots(minRefSlots))
	return t
}

func newRefSlots(n int) *refSlots {
	return &refSlots{mask: uint64(n - 1), slots: make([]refSlot, n)}
}

// refHash spreads refs over the table (a Fibonacci hash) in runs of four:
// refs are handed out in order, series created together are appended to
// together, and four slots share a cache line, so that a request's
// lookups miss on a line for four series instead of one. (Spread one by
// one, the table's lines were the receiver's most missed at 100k series.)
func refHash(ref storage.SeriesRef) uint64 {
	return (uint64(ref)>>2*0x9E3779B97F4A7C15)<<2 | uint64(ref)&3
}

// get returns the series of ref, or nil.
func (t *refTable) get(ref storage.SeriesRef) *memSeries {
	tab := t.tab.Load()
	for i := refHash(ref) & tab.mask; ; i = (i + 1) & tab.mask {
		switch tab.slots[i].ref.Load() {
		case uint64(ref):
			// A removed series' slot keeps its ref: a series given the
			// same ref again (replay) is further on.
			if s := tab.slots[i].s.Load(); s != removed {
				return s
			}
		case 0:
			return nil
		}
	}
}

// add puts s in the table under its ref, which is not in it.
func (t *refTable) add(s *memSeries) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tab := t.tab.Load()
	if (t.used+1)*4 > len(tab.slots)*3 {
		tab = t.rebuild(t.live + 1)
	}
	insert(tab, s)
	t.live++
	t.used++
}

// insert puts s in the first empty slot of its probe sequence.
func insert(tab *refSlots, s *memSeries) {
	for i := refHash(s.ref) & tab.mask; ; i = (i + 1) & tab.mask {
		if tab.slots[i].ref.Load() == 0 {
			tab.slots[i].s.Store(s)
			tab.slots[i].ref.Store(uint64(s.ref))
			return
		}
	}
}

// remove takes s out of the table, if it is there.
func (t *refTable) remove(s *memSeries) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tab := t.tab.Load()
	for i := refHash(s.ref) & tab.mask; ; i = (i + 1) & tab.mask {
		switch tab.slots[i].ref.Load() {
		case uint64(s.ref):
			if tab.slots[i].s.Load() != s {
				continue
			}
			tab.slots[i].s.Store(removed)
			t.live--
			if t.live*8 < len(tab.slots) && len(tab.slots) > minRefSlots {
				t.rebuild(t.live)
			}
			return
		case 0:
			return
		}
	}
}

// rebuild swaps in a table of the live series with room for n, and
// returns it.
func (t *refTable) rebuild(n int) *refSlots {
	size := minRefSlots
	for size*3 < n*4*2 { // n at most three eighths full: room to grow
		size *= 2
	}
	old, tab := t.tab.Load(), newRefSlots(size)
	for i := range old.slots {
		if s := old.slots[i].s.Load(); s != nil && s != removed {
			insert(tab, s)
		}
	}
	t.used = t.live
	t.tab.Store(tab)
	return tab
}

// all yields the series in the table, in no order. Series added or
// removed meanwhile may or may not be yielded.
func (t *refTable) all() iter.Seq[*memSeries] {
	return func(yield func(*memSeries) bool) {
		tab := t.tab.Load()
		for i := range tab.slots {
			if tab.slots[i].ref.Load() == 0 {
				continue
			}
			if s := tab.slots[i].s.Load(); s != removed && !yield(s) {
				return
			}
		}
	}
}
