package index

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/strata-db/strata/internal/storage"
)

// randomRefs returns n distinct sorted refs whose gaps are drawn from
// one of several spreads, so that differences take one to eight bytes.
// Half the time gaps repeat, in runs of up to 300, as the refs of a
// target's series do.
func randomRefs(rng *rand.Rand, n int) []storage.SeriesRef {
	spread := []uint64{1, 3, 200, 1 << 20, 1 << 50}[rng.IntN(5)]
	runs := rng.IntN(2) == 0
	refs := make([]storage.SeriesRef, 0, n)
	r := storage.SeriesRef(rng.Uint64N(spread))
	var gap storage.SeriesRef
	left := 0
	for range n {
		refs = append(refs, r)
		if left == 0 {
			gap = 1 + storage.SeriesRef(rng.Uint64N(spread))
			if runs {
				left = rng.IntN(300)
			}
		} else {
			left--
		}
		r += gap
	}
	return refs
}

// checkPostings drives got and a listPostings over want through the same
// random sequence of Next and Seek and fails at the first difference.
func checkPostings(t *testing.T, rng *rand.Rand, got Postings, want []storage.SeriesRef) {
	t.Helper()
	ref := NewListPostings(want)
	var last storage.SeriesRef
	if len(want) > 0 {
		last = want[len(want)-1]
	}
	for step := 0; ; step++ {
		var g, w bool
		op := "Next"
		if rng.IntN(3) == 0 {
			target := storage.SeriesRef(rng.Uint64N(uint64(last) + 2))
			if rng.IntN(2) == 0 {
				target = ref.At() + storage.SeriesRef(rng.IntN(300))
			}
			op = "Seek"
			g, w = got.Seek(target), ref.Seek(target)
		} else {
			g, w = got.Next(), ref.Next()
		}
		if g != w {
			t.Fatalf("step %d %s: %v, want %v", step, op, g, w)
		}
		if !w {
			if got.Next() || got.Seek(0) {
				t.Fatalf("step %d: postings went on after their end", step)
			}
			return
		}
		if got.At() != ref.At() {
			t.Fatalf("step %d %s: at %d, want %d", step, op, got.At(), ref.At())
		}
	}
}

func TestRefList(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		n := rng.IntN(300)
		if i%50 == 0 {
			n = 1000 + rng.IntN(3000)
		}
		want := randomRefs(rng, n)

		// In order, as the head creates series.
		var l refList
		for _, r := range want {
			l = l.add(r, false)
			l = l.add(r, false) // a second add changes nothing
		}
		if l.len() != len(want) {
			t.Fatalf("case %d: len %d, want %d", i, l.len(), len(want))
		}
		checkPostings(t, rng, l.postings(), want)

		// In any order: sorted at once (a rebuild per add, so only short
		// lists), or unsorted and sorted at the end.
		for _, unsorted := range []bool{false, true} {
			if !unsorted && n > 300 {
				continue
			}
			var l refList
			for _, j := range rng.Perm(len(want)) {
				l = l.add(want[j], unsorted)
			}
			if unsorted && len(want) > 0 {
				l = l.add(want[0], true) // a duplicate, pending
			}
			l = l.sorted()
			checkPostings(t, rng, l.postings(), want)
		}

		// Without a random part of the refs.
		var drop, kept []storage.SeriesRef
		for _, r := range want {
			if rng.IntN(4) == 0 {
				drop = append(drop, r)
			} else {
				kept = append(kept, r)
			}
		}
		checkPostings(t, rng, l.without(drop).postings(), kept)
		if got := l.without(drop).len(); got != len(kept) {
			t.Fatalf("case %d: len without %d, want %d", i, got, len(kept))
		}
	}
}

// TestRefListSnapshot checks that postings taken from a list do not see
// refs added after, and that the list's earlier bytes are not changed by
// adding: readers hold them without a lock.
func TestRefListSnapshot(t *testing.T) {
	var l refList
	for r := range storage.SeriesRef(1000) {
		l = l.add(2*r, false)
	}
	p := l.postings()
	before := slices.Clone(l.more.deltas)
	next := storage.SeriesRef(2000)
	for r := range storage.SeriesRef(1000) {
		l = l.add(next, false)
		next += 1 + r/10%3 // runs of 10, each of another step
	}
	got, _ := Expand(p)
	if len(got) != 1000 || got[999] != 1998 {
		t.Fatalf("postings taken before adds saw %d refs, last %d", len(got), got[len(got)-1])
	}
	if !slices.Equal(l.more.deltas[:len(before)], before) {
		t.Fatalf("adds changed bytes a reader held")
	}
	old := l.postings()
	l = l.add(5, false) // out of order: a new list
	got, _ = Expand(old)
	if len(got) != 2000 || slices.Contains(got, 5) {
		t.Fatalf("an out-of-order add changed the list a reader held")
	}
}

// BenchmarkRefListPostings iterates over and seeks in lists of 100k
// refs: 16 apart, as a label value shared by one series in 16, which is
// one run; and 1 to 32 apart at random, which has none.
func BenchmarkRefListPostings(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, shape := range []struct {
		name string
		gap  func() storage.SeriesRef
	}{
		{"every16", func() storage.SeriesRef { return 16 }},
		{"random", func() storage.SeriesRef { return 1 + storage.SeriesRef(rng.IntN(32)) }},
	} {
		var l refList
		n := 100_000
		for i, r := 0, storage.SeriesRef(0); i < n; i, r = i+1, r+shape.gap() {
			l = l.add(r, false)
		}
		b.Run(shape.name+"/next", func(b *testing.B) {
			for b.Loop() {
				p := l.postings()
				for p.Next() {
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/ref")
		})
		b.Run(shape.name+"/seek", func(b *testing.B) {
			for b.Loop() {
				p := l.postings()
				for r := storage.SeriesRef(0); p.Seek(r); r = p.At() + 1000 {
				}
			}
		})
	}
}

// FuzzRefList builds lists from gaps the input gives, in order and
// rebuilt, and checks them against the refs, also postings taken half
// way, which must not see the refs added after.
func FuzzRefList(f *testing.F) {
	f.Add([]byte{0, 1, 1, 1, 1, 2, 2, 3, 1, 1, 250, 250, 7})
	f.Add([]byte{9, 200, 200, 200, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, gaps []byte) {
		// A byte under 200 is a gap of 1 to 4, so equal bytes make runs;
		// one above is a gap of many varint bytes.
		refs := make([]storage.SeriesRef, 0, len(gaps))
		var r storage.SeriesRef
		for i, g := range gaps {
			switch {
			case i == 0:
				r = storage.SeriesRef(g)
			case g < 200:
				r += storage.SeriesRef(g%4) + 1
			default:
				r += storage.SeriesRef(g) << 30
			}
			refs = append(refs, r)
		}
		rng := rand.New(rand.NewPCG(uint64(len(gaps)), 7))
		var l refList
		var half Postings
		for i, r := range refs {
			if i == len(refs)/2 {
				half = l.postings()
			}
			l = l.add(r, false)
		}
		for _, l := range []refList{l, newRefList(refs)} {
			if got, _ := Expand(l.postings()); !slices.Equal(got, refs) {
				t.Fatalf("list of %v holds %v", refs, got)
			}
			checkPostings(t, rng, l.postings(), refs)
		}
		if half != nil {
			checkPostings(t, rng, half, refs[:len(refs)/2])
		}
	})
}
