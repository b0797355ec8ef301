package head

import (
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/strata-db/strata/internal/storage"
)

// TestRefTable adds and removes series in a random order, growing and
// shrinking the table, and checks every lookup and the series yielded
// against a map.
func TestRefTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tab := newRefTable()
	want := map[storage.SeriesRef]*memSeries{}
	next := storage.SeriesRef(1)
	check := func() {
		t.Helper()
		for ref := storage.SeriesRef(1); ref < next+3; ref++ {
			if got := tab.get(ref); got != want[ref] {
				t.Fatalf("get(%d) = %p, want %p", ref, got, want[ref])
			}
		}
		n := 0
		for s := range tab.all() {
			if want[s.ref] != s {
				t.Fatalf("all yielded series %d, which is not in the table", s.ref)
			}
			n++
		}
		if n != len(want) {
			t.Fatalf("all yielded %d series, want %d", n, len(want))
		}
	}
	for round := range 4 {
		// Grow to a few thousand, then remove most, in random order.
		for range 3000 {
			s := &memSeries{ref: next}
			next++
			tab.add(s)
			want[s.ref] = s
		}
		check()
		for ref, s := range want {
			if rng.IntN(10) < 9 {
				tab.remove(s)
				delete(want, ref)
			}
		}
		tab.remove(&memSeries{ref: next + 1}) // never added: nothing happens
		tab.remove(&memSeries{ref: 1 << 40})  // beyond the directory: the same
		check()
		// A ref removed and given to a series again, as replay may.
		for ref, s := range want {
			tab.remove(s)
			again := &memSeries{ref: ref}
			tab.add(again)
			want[ref] = again
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
	series := map[storage.SeriesRef]*memSeries{}
	for _, ref := range refs {
		series[ref] = &memSeries{ref: ref}
		tab.add(series[ref])
	}
	var got []storage.SeriesRef
	for s := range tab.all() {
		got = append(got, s.ref)
	}
	want := slices.Sorted(maps.Keys(series))
	if !slices.Equal(got, want) {
		t.Fatalf("all yielded %v, want %v", got, want)
	}
	for _, ref := range want {
		if tab.get(ref) != series[ref] {
			t.Fatalf("get(%d) did not find its series", ref)
		}
	}
	tab.remove(series[3])
	tab.add(&memSeries{ref: 1 << 22}) // grows the directory
	if base := tab.dir.Load().base; base != 4998>>refPageBits {
		t.Errorf("directory starts at page %d, want %d: the lowest live series' page", base, 4998>>refPageBits)
	}
	if tab.get(3) != nil || tab.get(5000) != series[5000] {
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
		tab.add(&memSeries{ref: ref + 1})
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		defer close(stop)
		for ref := storage.SeriesRef(stable + 1); ref < 20_000; ref++ {
			s := &memSeries{ref: ref}
			tab.add(s)
			if ref%3 != 0 {
				tab.remove(s)
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
					if s := tab.get(ref + 1); s == nil || s.ref != ref+1 {
						t.Errorf("series %d not found while others came and went", ref+1)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}
