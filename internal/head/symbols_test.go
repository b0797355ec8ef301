package head

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/storage"
)

// randomLabelSets returns n label sets drawn from few names and values, so
// that they share most strings, with some long values (ids of more than
// one byte) and sets that are prefixes of others.
func randomLabelSets(n int) []labels.Labels {
	r := rand.New(rand.NewPCG(1, 2))
	names := []string{"__name__", "a", "b", "cluster", "instance", "job", "le", "zone"}
	out := make([]labels.Labels, 0, n)
	seen := map[string]bool{}
	for len(out) < n {
		var b labels.ScratchBuilder
		for _, name := range names {
			if name != "__name__" && r.IntN(3) == 0 {
				continue
			}
			v := fmt.Sprint(r.IntN(4))
			switch r.IntN(16) {
			case 0, 1:
				v = fmt.Sprintf("value-%d-%s", r.IntN(300), name)
			case 2:
				// Longer than a one-byte length.
				v = fmt.Sprintf("%0300d", r.IntN(3))
			}
			b.Add(name, v)
		}
		ls := b.Labels()
		if !seen[ls.String()] {
			seen[ls.String()] = true
			out = append(out, ls)
		}
	}
	return out
}

// mustIntern is st.intern, which fails only when the pool of ids has no
// room.
func mustIntern(tb testing.TB, st *symbolTable, lset labels.Labels) symIDs {
	tb.Helper()
	syms, err := st.intern(lset)
	if err != nil {
		tb.Fatal(err)
	}
	return syms
}

func TestSymbolTable(t *testing.T) {
	lsets := randomLabelSets(500)
	st := newSymbolTable()
	syms := make([]string, len(lsets))
	for i, ls := range lsets {
		syms[i] = st.idsOf(mustIntern(t, st, ls))
	}
	if st.len() < 300 {
		t.Fatalf("%d pairs: the sets should hold more than 300 distinct ones", st.len())
	}
	if labels.ImplementationName == "stringlabels" && !pairsConcatenate {
		t.Error("labels.Labels.Bytes is no longer the labels' pairs one after another: equal compares label by label")
	}
	var b labels.ScratchBuilder
	for i, ls := range lsets {
		if got := st.labels(syms[i], &b); !labels.Equal(got, ls) {
			t.Fatalf("labels %s, want %s", got, ls)
		}
		if !st.equal(syms[i], ls) || !st.equalEach(syms[i], ls) {
			t.Errorf("%s: not equal to itself", ls)
		}
		var ranged []labels.Label
		st.rangeLabels(syms[i], func(l labels.Label) { ranged = append(ranged, l) })
		if got := labels.New(ranged...); !labels.Equal(got, ls) {
			t.Errorf("ranged over %s, want %s", got, ls)
		}
		for _, name := range []string{"__name__", "a", "le", "zone", "missing", ""} {
			if got, want := st.get(syms[i], name), ls.Get(name); got != want {
				t.Errorf("%s: get(%q) = %q, want %q", ls, name, got, want)
			}
		}
		// Each other set, and the set with a label more or less.
		j := (i + 1) % len(lsets)
		more := labels.NewBuilder(ls).Set("zz", "1").Labels()
		fewer := labels.NewBuilder(ls).Del("__name__").Labels()
		longer := labels.NewBuilder(ls).Set("__name__", ls.Get("__name__")+"x").Labels()
		for _, other := range []labels.Labels{lsets[j], more, fewer, longer} {
			if st.equal(syms[i], other) || st.equalEach(syms[i], other) {
				t.Errorf("%s equal to %s", ls, other)
			}
		}
	}
	for i := range lsets {
		for j := range lsets {
			got, want := st.compare(syms[i], syms[j]), labels.Compare(lsets[i], lsets[j])
			if cmp.Compare(got, 0) != cmp.Compare(want, 0) {
				t.Fatalf("compare(%s, %s) = %d, want the sign of %d", lsets[i], lsets[j], got, want)
			}
		}
	}
}

func TestSymbolTableRelease(t *testing.T) {
	st := newSymbolTable()
	defer st.cells.close()
	a := mustIntern(t, st, labels.FromStrings("__name__", "m", "only", "a"))
	b := mustIntern(t, st, labels.FromStrings("__name__", "m", "pod", "b"))
	b2 := mustIntern(t, st, labels.FromStrings("__name__", "m", "pod", "b"))
	if got := st.len(); got != 3 {
		t.Fatalf("%d pairs, want 3", got)
	}
	st.release([]symIDs{a})
	if got := st.len(); got != 2 {
		t.Fatalf("%d pairs after releasing a, want 2 (__name__=m, pod=b)", got)
	}
	// The freed id is taken by a new pair.
	c := mustIntern(t, st, labels.FromStrings("__name__", "m", "new", "c"))
	if got := st.len(); got != 3 {
		t.Fatalf("%d pairs, want 3", got)
	}
	var lb labels.ScratchBuilder
	for _, tc := range []struct {
		syms symIDs
		want labels.Labels
	}{
		{b, labels.FromStrings("__name__", "m", "pod", "b")},
		{c, labels.FromStrings("__name__", "m", "new", "c")},
	} {
		if got := st.labels(st.idsOf(tc.syms), &lb); !labels.Equal(got, tc.want) {
			t.Errorf("labels %s, want %s", got, tc.want)
		}
	}
	// b is held twice: its pairs stay until both are released.
	st.release([]symIDs{b, c})
	if got := st.len(); got != 2 {
		t.Fatalf("%d pairs with b held once more, want 2", got)
	}
	st.release([]symIDs{b2})
	if got := st.len(); got != 0 {
		t.Fatalf("%d pairs with nothing held, want 0", got)
	}
	if _, n := st.cells.bytes(); n != 0 {
		t.Errorf("%d series' ids left in memory, want none", n)
	}
	if len(st.free) != 3 {
		t.Errorf("%d free ids, want 3", len(st.free))
	}
}

// TestTruncateRetiresLabels checks that the labels of a series Truncate
// removed stay readable to a reader that started before, even as new
// series take the ids they freed, and are released when it is done.
func TestTruncateRetiresLabels(t *testing.T) {
	h := openRangeHead(t, t.TempDir())
	defer h.Close()
	old := labels.FromStrings("__name__", "old", "pod", "pod-1")
	app := h.Appender(context.Background())
	mustAppend(t, app, old, 10, 1)
	mustAppend(t, app, labels.FromStrings("__name__", "kept"), 10, 1)
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	app = h.Appender(context.Background())
	mustAppend(t, app, labels.FromStrings("__name__", "kept"), 3*testRange, 2)
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	s := h.series.getByHash(old.Hash(), old)
	// spillReplayed, run after Open, is a reader too.
	h.background.Wait()
	// A reader of no samples: Truncate does not wait for it.
	reader := h.acquireReader(1 << 62)
	if st := h.Truncate(2 * testRange); st.SeriesRemoved != 1 {
		t.Fatalf("truncation removed %d series, want 1", st.SeriesRemoved)
	}
	app = h.Appender(context.Background())
	mustAppend(t, app, labels.FromStrings("__name__", "new", "node", "node-1"), 3*testRange, 3)
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := h.labelsOf(s); !labels.Equal(got, old) {
		t.Fatalf("removed series read as %s by a reader from before, want %s", got, old)
	}
	// __name__=old, pod=pod-1, __name__=kept, __name__=new, node=node-1
	if got := h.series.symbols.len(); got != 5 {
		t.Errorf("%d pairs while the reader runs, want 5", got)
	}
	_, during := h.series.cells.bytes()
	h.releaseReader(reader)
	if _, after := h.series.cells.bytes(); during-after != 1 {
		t.Errorf("%d cells freed after the reader is done, want 1, the series removed", during-after)
	}
	if got := h.series.symbols.len(); got != 3 {
		t.Errorf("%d pairs after the reader is done, want 3", got)
	}
	if _, n := h.series.symbols.cells.bytes(); n != 2 {
		t.Errorf("%d series' ids in memory after the reader is done, want 2", n)
	}
}

// len returns the number of distinct pairs held.
func (t *symbolTable) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.ids)
}

// TestSymIDs checks that a series' ids read back whole, their length
// prefix one byte or several.
func TestSymIDs(t *testing.T) {
	st := newSymbolTable()
	defer st.cells.close()
	for _, n := range []int{0, 1, 127, 128, 300, 20000} {
		ids := make([]byte, n)
		for i := range ids {
			ids[i] = byte(i*7 + 1)
		}
		syms, err := newSymIDs(ids, &st.cells)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.idsOf(syms); got != string(ids) {
			t.Errorf("%d ids read back as %d", n, len(got))
		}
	}
	if got := st.idsOf(symIDs{}); got != "" {
		t.Errorf("the zero symIDs hold %q", got)
	}
}

// TestSortedSeries checks that the head's series come out of sorted in
// labels.Compare's order: label sets of one to nine labels, prefixes of
// one another, names and values that sort differently as strings and as
// their pairs' encodings. With few distinct pairs a key holds all of a
// series' pairs; with thousands of values of the last label, it holds the
// first four, which many series share, and the ranks of the rest decide.
func TestSortedSeries(t *testing.T) {
	for _, distinct := range []int{3, 5000} {
		t.Run(fmt.Sprintf("values=%d", distinct), func(t *testing.T) {
			s := newStripeSeries(16)
			defer s.cells.close()
			rng := rand.New(rand.NewPCG(7, uint64(distinct)))
			names := []string{"__name__", "a", "ab", "b", "job", "le", "zone", "z\xff", "zz"}
			seen := map[string]bool{}
			var want []labels.Labels
			for len(want) < 3000 {
				var b labels.ScratchBuilder
				for _, n := range names[:1+rng.IntN(len(names))] {
					if rng.IntN(4) > 0 {
						if n == "zz" {
							b.Add(n, strings.Repeat("v", rng.IntN(3))+fmt.Sprint(rng.IntN(distinct)))
						} else {
							b.Add(n, strings.Repeat("v", rng.IntN(2)))
						}
					}
				}
				b.Sort()
				ls := b.Labels()
				if ls.IsEmpty() || seen[ls.String()] {
					continue
				}
				seen[ls.String()] = true
				want = append(want, ls)
				if _, _, err := s.getOrSet(ls.Hash(), ls, func(ms *memSeries) error {
					ms.init(storage.SeriesRef(len(want)), mustIntern(t, s.symbols, ls))
					return nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			slices.SortFunc(want, labels.Compare)
			var b labels.ScratchBuilder
			for i, ss := range s.sorted(len(want) / 2) {
				if got := s.symbols.labels(s.symbols.idsOf(ss.s.syms), &b); !labels.Equal(got, want[i]) {
					t.Fatalf("series %d: %s, want %s", i, got, want[i])
				}
			}
		})
	}
}
