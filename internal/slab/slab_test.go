package slab

import (
	"runtime"
	"sync"
	"testing"
	"unsafe"
)

type pair struct{ a, b uint64 }

func TestNewIsAdjacent(t *testing.T) {
	var s Slab[pair]
	n := perSlab[pair]()
	first := s.New()
	prev := first
	for i := 1; i < n; i++ {
		p := s.New()
		if *p != (pair{}) {
			t.Fatalf("value %d is not zero: %v", i, *p)
		}
		if got := uintptr(unsafe.Pointer(p)) - uintptr(unsafe.Pointer(prev)); got != unsafe.Sizeof(pair{}) {
			t.Fatalf("value %d is %d bytes after the one before, want %d", i, got, unsafe.Sizeof(pair{}))
		}
		prev = p
	}
	// The slab is used up: the next value comes from another.
	p := s.New()
	if d := uintptr(unsafe.Pointer(p)) - uintptr(unsafe.Pointer(first)); d < size && d > 0 {
		t.Fatalf("value %d is inside the first slab", n)
	}
}

// TestSlabFitsPage checks that the slabs of values with pointers, which
// carry a malloc header, take a page each and not the next size class.
func TestSlabFitsPage(t *testing.T) {
	type series struct{ p [16]*int } // 128 bytes
	var s Slab[series]
	n := 100 * perSlab[series]()
	keep := make([]*series, 0, n)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		keep = append(keep, s.New())
	}
	runtime.ReadMemStats(&after)
	perValue := float64(after.TotalAlloc-before.TotalAlloc) / float64(n)
	if want := float64(size) / float64(perSlab[series]()); perValue > want*1.02 {
		t.Errorf("%.1f bytes a value, want %.1f (%d to a page)", perValue, want, perSlab[series]())
	}
	runtime.KeepAlive(keep)
}

func TestLargeValue(t *testing.T) {
	var s Slab[[size * 2]byte]
	a, b := s.New(), s.New()
	if a == b {
		t.Fatal("two values share memory")
	}
}

func TestConcurrent(t *testing.T) {
	var s Slab[pair]
	var wg sync.WaitGroup
	got := make([][]*pair, 4)
	for g := range got {
		wg.Go(func() {
			for i := range 1000 {
				p := s.New()
				p.a, p.b = uint64(g), uint64(i)
				got[g] = append(got[g], p)
			}
		})
	}
	wg.Wait()
	for g, ps := range got {
		for i, p := range ps {
			if *p != (pair{uint64(g), uint64(i)}) {
				t.Fatalf("goroutine %d's value %d is %v: shared with another", g, i, *p)
			}
		}
	}
}
