package head

import (
	"sync"

	"github.com/prometheus/prometheus/model/labels"
)

// seriesStripe is a lock stripe of the series found by label hash: those
// whose hash is its index modulo the stripe count, in an open-addressing
// table of hash and series number (linear probing), on the cache line of
// the stripe's lock.
//
// It replaced a Go map per stripe. Every sample a remote-write request
// names by labels is looked up here, and at a million series a lookup in
// one of 4096 maps missed the cache on the map, its directory, its table
// and its group in turn: a quarter of the ingest's CPU. Here the stripe,
// its lock included, is one line and the slot the next.
//
// Series whose hashes collide take a slot each; a lookup compares the
// labels of each slot with its hash.
type seriesStripe struct {
	sync.RWMutex
	// slots is the table, of any length (see grownSlots), or none; a
	// slot with no series is empty. A series sits at its hash's home
	// slot or after it (cyclically), with no empty slot between.
	slots []hashSlot
	used  int
	_     [8]byte
}

// hashSlot is a series in the table: 8 bytes, where a hash and a pointer
// took 16, 11 MB at a million series.
type hashSlot struct {
	// tag is the top 32 bits of the series' label hash: those home
	// takes, which the stripe index (the low bits) leaves independent.
	tag uint32
	// num is the series' number in stripeSeries.cells, 0 if the slot is
	// empty.
	num uint32
}

// hashTag returns the tag of a label hash (see hashSlot).
func hashTag(hash uint64) uint32 { return uint32(hash >> 32) }

// home returns the slot where the search for tag starts: tag scaled to
// the table's length.
func (t *seriesStripe) home(tag uint32) int {
	return int(uint64(tag) * uint64(len(t.slots)) >> 32)
}

// next returns the slot after i, the first after the last.
func (t *seriesStripe) next(i int) int {
	if i++; i == len(t.slots) {
		return 0
	}
	return i
}

// get returns the series with hash and the labels lset, nil if there is
// none; cells holds the series. The stripe must be locked.
func (t *seriesStripe) get(hash uint64, lset labels.Labels, syms *symbolTable, cells *cellPool) *memSeries {
	if len(t.slots) == 0 {
		return nil
	}
	tag := hashTag(hash)
	for i := t.home(tag); ; i = t.next(i) {
		sl := t.slots[i]
		if sl.num == 0 {
			return nil
		}
		if sl.tag == tag {
			if s := seriesAt(cells, sl.num); syms.equal(syms.idsOf(s.syms), lset) {
				return s
			}
		}
	}
}

// minStripeSlots is the length of a stripe's table when it takes its first
// series.
const minStripeSlots = 8

// grownSlots is the length a table of n slots grows to: by half. Series
// spread evenly over the stripes, so all tables grow at about the same
// count; doubling them left the tables half full over much of the range
// of series counts, at a million series in 4096 stripes 244 series in
// 512 slots, 34 MB with the slots of 16 bytes they had then. Grown by
// half they hold 244 in 303 slots, 20 MB, and a lookup probes about
// three slots where it probed one or two, mostly in the same cache line.
func grownSlots(n int) int { return max(minStripeSlots, n+n/2) }

// set adds the series numbered num, whose labels hash to hash, growing
// the table past seven eighths full. The stripe must be write-locked.
func (t *seriesStripe) set(hash uint64, num uint32) {
	if (t.used+1)*8 > len(t.slots)*7 {
		t.resize(grownSlots(len(t.slots)))
	}
	t.put(hashSlot{hashTag(hash), num})
	t.used++
}

// put puts sl in the first empty slot from its home.
func (t *seriesStripe) put(sl hashSlot) {
	i := t.home(sl.tag)
	for t.slots[i].num != 0 {
		i = t.next(i)
	}
	t.slots[i] = sl
}

// del removes the series numbered num, whose labels hash to hash, if it
// is there, shrinking the table below an eighth full. The stripe must be
// write-locked.
func (t *seriesStripe) del(hash uint64, num uint32) {
	if len(t.slots) == 0 {
		return
	}
	i := t.home(hashTag(hash))
	for t.slots[i].num != num {
		if t.slots[i].num == 0 {
			return
		}
		i = t.next(i)
	}
	// Move back each following slot that may sit at i, so that no empty
	// slot is left between a series and its home.
	for j := t.next(i); t.slots[j].num != 0; j = t.next(j) {
		// The slot at j may move to i unless its home is in (i, j],
		// cyclically.
		if h := t.home(t.slots[j].tag); t.distance(h, j) < t.distance(i, j) {
			continue
		}
		t.slots[i] = t.slots[j]
		i = j
	}
	t.slots[i] = hashSlot{}
	t.used--
	switch {
	case t.used == 0:
		t.slots = nil
	case len(t.slots) > minStripeSlots && t.used*8 < len(t.slots):
		t.resize(max(minStripeSlots, len(t.slots)/2))
	}
}

// distance returns how many slots j is after i, cyclically.
func (t *seriesStripe) distance(i, j int) int {
	if d := j - i; d >= 0 {
		return d
	}
	return j - i + len(t.slots)
}

// resize moves the series to a table of n slots.
func (t *seriesStripe) resize(n int) {
	old := t.slots
	t.slots = make([]hashSlot, n)
	for _, sl := range old {
		if sl.num != 0 {
			t.put(sl)
		}
	}
}
