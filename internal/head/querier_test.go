package head

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"
	promchunkenc "github.com/prometheus/prometheus/tsdb/chunkenc"
)

// TestSelectMatchers checks Prometheus' matcher semantics, including that
// a matcher matching "" also selects series without the label.
func TestSelectMatchers(t *testing.T) {
	h := openTestHead(t, t.TempDir())
	defer h.Close()
	series := []labels.Labels{
		labels.FromStrings("__name__", "a", "job", "api", "env", "prod"),
		labels.FromStrings("__name__", "a", "job", "api", "env", "dev"),
		labels.FromStrings("__name__", "a", "job", "db"),
		labels.FromStrings("__name__", "b", "job", "db", "env", "prod"),
	}
	app := h.Appender(context.Background())
	for _, s := range series {
		mustAppend(t, app, s, 1, 1)
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	m := labels.MustNewMatcher
	cases := []struct {
		name string
		ms   []*labels.Matcher
		want []int
	}{
		{"equal", []*labels.Matcher{m(labels.MatchEqual, "__name__", "a")}, []int{0, 1, 2}},
		{"two equal", []*labels.Matcher{m(labels.MatchEqual, "__name__", "a"), m(labels.MatchEqual, "env", "prod")}, []int{0}},
		{"not equal keeps series without label", []*labels.Matcher{m(labels.MatchEqual, "__name__", "a"), m(labels.MatchNotEqual, "env", "prod")}, []int{1, 2}},
		{"equal empty means absent", []*labels.Matcher{m(labels.MatchEqual, "env", "")}, []int{2}},
		{"regex", []*labels.Matcher{m(labels.MatchRegexp, "job", "a.*")}, []int{0, 1}},
		{"regex set", []*labels.Matcher{m(labels.MatchRegexp, "env", "prod|dev")}, []int{0, 1, 3}},
		{"regex matching empty", []*labels.Matcher{m(labels.MatchRegexp, "env", "prod|")}, []int{0, 2, 3}},
		{"not regex", []*labels.Matcher{m(labels.MatchNotRegexp, "job", "a.*")}, []int{2, 3}},
		{"not regex only", []*labels.Matcher{m(labels.MatchNotRegexp, "env", ".+")}, []int{2}},
		{"no match", []*labels.Matcher{m(labels.MatchEqual, "job", "nope")}, nil},
		{"unknown label not equal", []*labels.Matcher{m(labels.MatchNotEqual, "zone", "x")}, []int{0, 1, 2, 3}},
		{"intersection empty", []*labels.Matcher{m(labels.MatchEqual, "job", "db"), m(labels.MatchEqual, "env", "dev")}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := readAll(t, h, math.MinInt64, math.MaxInt64, c.ms...)
			var want []string
			for _, i := range c.want {
				want = append(want, series[i].String())
			}
			var gotKeys []string
			for k := range got {
				gotKeys = append(gotKeys, k)
			}
			slices.Sort(want)
			slices.Sort(gotKeys)
			if !slices.Equal(gotKeys, want) {
				t.Fatalf("got %v, want %v", gotKeys, want)
			}
		})
	}

	q, _ := h.Querier(math.MinInt64, math.MaxInt64)
	names, _, err := q.LabelNames(context.Background(), nil)
	if err != nil || !slices.Equal(names, []string{"__name__", "env", "job"}) {
		t.Fatalf("label names %v, %v", names, err)
	}
	vals, _, err := q.LabelValues(context.Background(), "env", nil, m(labels.MatchEqual, "__name__", "a"))
	if err != nil || !slices.Equal(vals, []string{"dev", "prod"}) {
		t.Fatalf("label values %v, %v", vals, err)
	}
	vals, _, _ = q.LabelValues(context.Background(), "job", &promstorage.LabelHints{Limit: 1})
	if !slices.Equal(vals, []string{"api"}) {
		t.Fatalf("limited label values %v", vals)
	}
}

// TestSeriesIteratorSeek walks a series of several chunks with Seek and
// Next mixed, against a plain slice.
func TestSeriesIteratorSeek(t *testing.T) {
	h := openTestHead(t, t.TempDir())
	defer h.Close()
	lset := labels.FromStrings("__name__", "m")
	app := h.Appender(context.Background())
	var ts []int64
	for i := range 500 {
		ts = append(ts, int64(i*10))
		mustAppend(t, app, lset, int64(i*10), float64(i))
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, bounds := range [][2]int64{{math.MinInt64, math.MaxInt64}, {1005, 3995}, {0, 0}} {
		q, _ := h.Querier(bounds[0], bounds[1])
		ss := q.Select(context.Background(), false, nil, all)
		if !ss.Next() {
			t.Fatalf("bounds %v: no series", bounds)
		}
		s := ss.At()
		for _, seeks := range [][]int64{{-5}, {0, 0, 1}, {1195, 1200, 1201, 4000}, {2500, 100}, {9999}, {4990}} {
			t.Run(fmt.Sprint(bounds, seeks), func(t *testing.T) {
				it := s.Iterator(nil)
				pos := int64(math.MinInt64)
				for _, target := range seeks {
					// Expected: the first sample at or after target within
					// bounds; Seek never moves backwards.
					want := int64(-1)
					for _, x := range ts {
						if x >= target && x >= pos && x >= bounds[0] && x <= bounds[1] {
							want = x
							break
						}
					}
					vt := it.Seek(target)
					if want == -1 {
						if vt != promchunkenc.ValNone {
							t.Fatalf("seek %d: got a sample at %d, want none", target, it.AtT())
						}
						return
					}
					if vt != promchunkenc.ValFloat {
						t.Fatalf("seek %d: got none, want %d", target, want)
					}
					if got := it.AtT(); got != want {
						t.Fatalf("seek %d: at %d, want %d", target, got, want)
					}
					pos = want
					if _, v := it.At(); v != float64(it.AtT()/10) {
						t.Fatalf("value %v at %d", v, it.AtT())
					}
				}
			})
		}
	}
}

// TestLabelsWithoutDeleted checks that label names and values, asked
// without matchers, leave out those that only fully deleted series hold
// and keep those a series with samples left still holds.
func TestLabelsWithoutDeleted(t *testing.T) {
	h := openTestHead(t, t.TempDir())
	defer h.Close()
	app := h.Appender(context.Background())
	for _, s := range []labels.Labels{
		labels.FromStrings("__name__", "a", "job", "api", "zone", "eu"),
		labels.FromStrings("__name__", "a", "job", "db"),
		labels.FromStrings("__name__", "b", "job", "db", "pod", "p1"),
		labels.FromStrings("__name__", "c", "job", "web"),
	} {
		mustAppend(t, app, s, 1, 1)
		mustAppend(t, app, s, 2, 2)
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	m := labels.MustNewMatcher
	for _, d := range []struct {
		mint, maxt int64
		ms         []*labels.Matcher
	}{
		{math.MinInt64, math.MaxInt64, []*labels.Matcher{m(labels.MatchEqual, "zone", "eu")}},
		{math.MinInt64, math.MaxInt64, []*labels.Matcher{m(labels.MatchEqual, "__name__", "b")}},
		{1, 1, []*labels.Matcher{m(labels.MatchEqual, "__name__", "c")}}, // c keeps its sample at 2
	} {
		if _, err := h.Delete(context.Background(), d.mint, d.maxt, d.ms...); err != nil {
			t.Fatal(err)
		}
	}
	q, _ := h.Querier(math.MinInt64, math.MaxInt64)
	defer q.Close()
	names, _, err := q.LabelNames(context.Background(), nil)
	if err != nil || !slices.Equal(names, []string{"__name__", "job"}) {
		t.Errorf("label names %v, %v; want __name__ and job", names, err)
	}
	for name, want := range map[string][]string{
		"__name__": {"a", "c"},
		"job":      {"db", "web"},
		"zone":     nil,
		"pod":      nil,
	} {
		vals, _, err := q.LabelValues(context.Background(), name, nil)
		if err != nil || !slices.Equal(vals, want) {
			t.Errorf("values of %s %v, %v; want %v", name, vals, err, want)
		}
	}
}
