package index

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/strata-db/strata/internal/storage"
)

func refs(xs ...storage.SeriesRef) []storage.SeriesRef { return xs }

// randomList returns a sorted set of refs below max.
func randomList(rng *rand.Rand, n, max int) []storage.SeriesRef {
	set := map[storage.SeriesRef]bool{}
	for range n {
		set[storage.SeriesRef(rng.IntN(max))] = true
	}
	var out []storage.SeriesRef
	for r := range set {
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}

func sliceIntersect(lists ...[]storage.SeriesRef) []storage.SeriesRef {
	var out []storage.SeriesRef
	for _, r := range lists[0] {
		in := true
		for _, l := range lists[1:] {
			in = in && slices.Contains(l, r)
		}
		if in {
			out = append(out, r)
		}
	}
	return out
}

func sliceMerge(lists ...[]storage.SeriesRef) []storage.SeriesRef {
	var out []storage.SeriesRef
	for _, l := range lists {
		out = append(out, l...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func sliceWithout(a, b []storage.SeriesRef) []storage.SeriesRef {
	var out []storage.SeriesRef
	for _, r := range a {
		if !slices.Contains(b, r) {
			out = append(out, r)
		}
	}
	return out
}

func lists(ls [][]storage.SeriesRef) []Postings {
	var out []Postings
	for _, l := range ls {
		out = append(out, NewListPostings(l))
	}
	return out
}

// TestPostingsAgainstSlices compares Intersect, Merge and Without, alone
// and nested, with slice implementations on random lists, walked by Next
// and by Seek.
func TestPostingsAgainstSlices(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		n := 1 + rng.IntN(4)
		var ls [][]storage.SeriesRef
		for range n {
			ls = append(ls, randomList(rng, rng.IntN(40), 60))
		}
		drop := randomList(rng, rng.IntN(20), 60)
		for _, tc := range []struct {
			name string
			p    func() Postings
			want []storage.SeriesRef
		}{
			{"intersect", func() Postings { return Intersect(lists(ls)...) }, sliceIntersect(ls...)},
			{"merge", func() Postings { return Merge(lists(ls)...) }, sliceMerge(ls...)},
			{"without", func() Postings { return Without(Merge(lists(ls)...), NewListPostings(drop)) }, sliceWithout(sliceMerge(ls...), drop)},
			{"nested", func() Postings {
				return Without(Intersect(Merge(lists(ls)...), NewListPostings(sliceMerge(ls[0], drop))), NewListPostings(drop))
			}, sliceWithout(sliceIntersect(sliceMerge(ls...), sliceMerge(ls[0], drop)), drop)},
		} {
			got, err := Expand(tc.p())
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("case %d %s of %v: got %v (%v), want %v", i, tc.name, ls, got, err, tc.want)
			}
			// Seek to a random point, then Next to the end.
			target := storage.SeriesRef(rng.IntN(62))
			p := tc.p()
			var seeked []storage.SeriesRef
			if p.Seek(target) {
				seeked = append(seeked, p.At())
				if p.Seek(target) && p.At() != seeked[0] {
					t.Fatalf("case %d %s: a second Seek(%d) moved from %d to %d", i, tc.name, target, seeked[0], p.At())
				}
				for p.Next() {
					seeked = append(seeked, p.At())
				}
			}
			k, _ := slices.BinarySearch(tc.want, target)
			if want := tc.want[k:]; !slices.Equal(seeked, want) {
				t.Fatalf("case %d %s: Seek(%d) then Next: %v, want %v", i, tc.name, target, seeked, want)
			}
		}
	}
}

func TestPostingsEdgeCases(t *testing.T) {
	// Ref 0 is a valid ref of a block.
	p := NewListPostings(refs(0, 3))
	if !p.Seek(0) || p.At() != 0 {
		t.Error("Seek(0) on a list starting with 0")
	}
	p = NewListPostings(refs(1))
	if !p.Seek(0) || p.At() != 1 {
		t.Error("Seek(0) on a list without 0")
	}
	if Intersect().Next() || Merge().Next() {
		t.Error("empty Intersect or Merge has refs")
	}
	boom := errors.New("boom")
	for name, p := range map[string]Postings{
		"intersect":    Intersect(NewListPostings(refs(1, 2)), ErrPostings(boom)),
		"merge":        Merge(NewListPostings(refs(1, 2)), ErrPostings(boom)),
		"without":      Without(ErrPostings(boom), NewListPostings(refs(1))),
		"without-drop": Without(NewListPostings(refs(1, 2)), ErrPostings(boom)),
	} {
		if _, err := Expand(p); !errors.Is(err, boom) {
			t.Errorf("%s: error %v, want boom", name, err)
		}
	}
}
