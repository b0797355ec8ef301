package head

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/storage"
)

// TestSeriesStripe adds and removes series in random order, many with
// hashes that collide outright or share a home slot, and checks after
// each step that every series present is found, no removed one is, and
// the table keeps its invariant: each series at or after its home, with
// no empty slot between.
func TestSeriesStripe(t *testing.T) {
	syms := newSymbolTable()
	cells := cellPool{numbered: true}
	defer cells.close()
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 600
	type entry struct {
		lset labels.Labels
		hash uint64
		s    *memSeries
		num  uint32
	}
	entries := make([]entry, n)
	for i := range entries {
		lset := labels.FromStrings("__name__", "m", "i", fmt.Sprint(i))
		var hash uint64
		switch i % 3 {
		case 0: // distinct
			hash = rng.Uint64()
		case 1: // the same hash as the series before
			hash = entries[i-1].hash
		case 2: // the same top bits, so the same home at any size
			hash = entries[i-2].hash&^0xffff | rng.Uint64()&0xffff
		}
		p, num, err := cells.allocNumbered(int(unsafe.Sizeof(memSeries{})))
		if err != nil {
			t.Fatal(err)
		}
		s := (*memSeries)(p)
		s.init(0, mustIntern(t, syms, lset))
		entries[i] = entry{lset, hash, s, num}
	}
	var st seriesStripe
	present := map[int]bool{}
	check := func(step string) {
		t.Helper()
		for i, e := range entries {
			got := st.get(e.hash, e.lset, syms, &cells)
			if present[i] && got != e.s {
				t.Fatalf("%s: series %d not found", step, i)
			}
			if !present[i] && got != nil {
				t.Fatalf("%s: series %d found after its removal", step, i)
			}
		}
		if st.used != len(present) {
			t.Fatalf("%s: %d used, want %d", step, st.used, len(present))
		}
		if len(st.slots) > 0 && (st.used*8 > len(st.slots)*7 || len(st.slots) > minStripeSlots && st.used*8 < len(st.slots)) {
			t.Fatalf("%s: %d series in %d slots", step, st.used, len(st.slots))
		}
		for j, sl := range st.slots {
			if sl.num == 0 {
				continue
			}
			for k := st.home(sl.tag); k != j; k = st.next(k) {
				if st.slots[k].num == 0 {
					t.Fatalf("%s: empty slot %d between slot %d and its home %d", step, k, j, st.home(sl.tag))
				}
			}
		}
	}
	// Grow to all, shrink to a few, grow again, with removals between.
	for round, target := range []int{n, 20, n / 2, 0} {
		for steps := 0; len(present) != target && steps < 100*n; steps++ {
			i := rng.IntN(n)
			switch {
			case !present[i] && len(present) < target:
				st.set(entries[i].hash, entries[i].num)
				present[i] = true
			case present[i] && len(present) > target:
				st.del(entries[i].hash, entries[i].num)
				delete(present, i)
			default:
				continue
			}
			if steps%7 == 0 {
				check(fmt.Sprintf("round %d, step %d", round, steps))
			}
		}
		check(fmt.Sprintf("round %d", round))
	}
	if st.slots != nil {
		t.Errorf("empty stripe keeps %d slots", len(st.slots))
	}
}

// BenchmarkGetByHash measures finding a series by its labels, which every
// sample of a remote-write request takes, among 10k to 1M series, looked
// up in the order they were created in, as a fleet's requests name them.
//
//	go test ./internal/head -run NONE -bench BenchmarkGetByHash -count=6 | tee new.txt
//	benchstat old.txt new.txt
func BenchmarkGetByHash(b *testing.B) {
	for _, n := range []int{10_000, 1_000_000} {
		b.Run(fmt.Sprintf("series=%d", n), func(b *testing.B) {
			s := newStripeSeries(DefaultOptions().Stripes)
			defer s.cells.close()
			lsets := make([]labels.Labels, n)
			hashes := make([]uint64, n)
			for i := range lsets {
				lsets[i] = labels.FromStrings("__name__", fmt.Sprintf("node_metric_%d", i%200), "cpu", fmt.Sprint(i%16),
					"instance", fmt.Sprintf("10.%d.%d.%d:9100", i/65536, i/256%256, i%256), "job", "node")
				hashes[i] = lsets[i].Hash()
				if _, _, err := s.getOrSet(hashes[i], lsets[i], func(ms *memSeries) error {
					ms.init(storage.SeriesRef(i+1), mustIntern(b, s.symbols, lsets[i]))
					return nil
				}); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if s.getByHash(hashes[i%n], lsets[i%n]) == nil {
					b.Fatal("series not found")
				}
			}
		})
	}
}
