package head

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/strata-db/strata/internal/storage"
)

// TestRefTable adds and removes series in a random order, growing and
// shrinking the table, and checks every lookup and the series yielded
// against a map. A series' number here is derived from its ref and the
// round it was added in.
func TestRefTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tab := newRefTable()
	want := map[storage.SeriesRef]uint32{}
	refOf := map[uint32]storage.SeriesRef{}
	next := storage.SeriesRef(1)
	check := func() {
		t.Helper()
		for ref := storage.SeriesRef(1); ref < next+3; ref++ {
			if got := tab.get(ref); got != want[ref] {
				t.Fatalf("get(%d) = %d, want %d", ref, got, want[ref])
			}
		}
		n := 0
		for num := range tab.all() {
			if ref, ok := refOf[num]; !ok || want[ref] != num {
				t.Fatalf("all yielded series %d, which is not in the table", num)
			}
			n++
		}
		if n != len(want) {
			t.Fatalf("all yielded %d series, want %d", n, len(want))
		}
	}
	add := func(ref storage.SeriesRef, num uint32) {
		tab.add(ref, num)
		want[ref], refOf[num] = num, ref
	}
	for round := range 4 {
		// Grow to a few thousand, then remove most, in random order.
		for range 3000 {
			add(next, uint32(next)*8+uint32(round))
			next++
		}
		check()
		for ref, num := range want {
			if rng.IntN(10) < 9 {
				tab.remove(ref, num)
				delete(want, ref)
			}
		}
		tab.remove(next+1, 1) // never added: nothing happens
		tab.remove(1<<40, 1)  // beyond the directory: the same
		for ref, num := range want {
			tab.remove(ref, num+1) // another series' number: the same
			break
		}
		check()
		// A ref removed and given to a series again, as replay may.
		for ref, num := range want {
			tab.remove(ref, num)
			add(ref, num+4)
			break
		}
		check()
		// Pages are freed with their last series.
		pages := map[uint64]bool{}
		for ref := range want {
			pages[uint64(ref)>>refPageBits] = true
		}
		d := tab.dir.Load()
		held := 0
		for i := range d.pages {
			if d.pages[i].Load() != nil {
				held++
			}
		}
		if held != len(pages) {
			t.Errorf("round %d: %d pages held for series on %d", round, held, len(pages))
		}
	}
}

// TestRefTableOrder adds refs out of order, as replay may, below and far
// above those in the table, and checks that all yields them in order and
// that the directory drops the pages below the lowest live series.
func TestRefTableOrder(t *testing.T) {
	tab := newRefTable()
	refs := []storage.SeriesRef{5000, 4999, 1 << 20, 3, 70_000, 4998}
	for i, ref := range refs {
		tab.add(ref, uint32(ref)+uint32(i))
	}
	var got []uint32
	for num := range tab.all() {
		got = append(got, num)
	}
	var want []uint32
	sorted := slices.Sorted(slices.Values(refs))
	for _, ref := range sorted {
		want = append(want, uint32(ref)+uint32(slices.Index(refs, ref)))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("all yielded %v, want %v", got, want)
	}
	for i, ref := range refs {
		if tab.get(ref) != uint32(ref)+uint32(i) {
			t.Fatalf("get(%d) did not find its series", ref)
		}
	}
	tab.remove(3, 3+3)
	tab.add(1<<22, 1) // grows the directory
	if base := tab.dir.Load().base; base != 4998>>refPageBits {
		t.Errorf("directory starts at page %d, want %d: the lowest live series' page", base, 4998>>refPageBits)
	}
	if tab.get(3) != 0 || tab.get(5000) != 5000 {
		t.Error("lookups wrong after the directory moved")
	}
}

// TestRefTableConcurrent looks series up while others are added and
// removed (run under -race in CI): a series that is in the table all
// along is always found.
func TestRefTableConcurrent(t *testing.T) {
	tab := newRefTable()
	const stable = 100
	for ref := range storage.SeriesRef(stable) {
		tab.add(ref+1, uint32(ref+1))
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		defer close(stop)
		for ref := storage.SeriesRef(stable + 1); ref < 20_000; ref++ {
			tab.add(ref, uint32(ref))
			if ref%3 != 0 {
				tab.remove(ref, uint32(ref))
			}
		}
	})
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for ref := range storage.SeriesRef(stable) {
					if num := tab.get(ref + 1); num != uint32(ref+1) {
						t.Errorf("series %d not found while others came and went", ref+1)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}
