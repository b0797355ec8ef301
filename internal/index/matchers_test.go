package index

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/storage"
)

// testSeries returns label sets of n series, sorted, with labels that
// some series lack, so that empty-matching matchers have work to do.
func testSeries(n int) []labels.Labels {
	var out []labels.Labels
	for i := range n {
		b := labels.NewScratchBuilder(6)
		b.Add("__name__", fmt.Sprintf("metric_%d", i%7))
		b.Add("id", fmt.Sprint(i)) // unique
		b.Add("instance", fmt.Sprintf("host-%d", i%13))
		if i%3 != 0 {
			b.Add("mode", []string{"idle", "user", "system", ""}[i%4])
		}
		if i%5 == 0 {
			b.Add("zone", fmt.Sprintf("z%d", i%2))
		}
		b.Sort()
		out = append(out, b.Labels())
	}
	slices.SortFunc(out, labels.Compare)
	return out
}

// testMatchers are selectors covering every kind of matcher, matching the
// empty string or not.
var testMatchers = [][]*labels.Matcher{
	{labels.MustNewMatcher(labels.MatchEqual, "__name__", "metric_3")},
	{labels.MustNewMatcher(labels.MatchEqual, "__name__", "metric_3"), labels.MustNewMatcher(labels.MatchEqual, "mode", "idle")},
	{labels.MustNewMatcher(labels.MatchEqual, "__name__", "metric_3"), labels.MustNewMatcher(labels.MatchEqual, "mode", "")},
	{labels.MustNewMatcher(labels.MatchNotEqual, "mode", "idle")},
	{labels.MustNewMatcher(labels.MatchNotEqual, "mode", "")},
	{labels.MustNewMatcher(labels.MatchRegexp, "instance", "host-1.*")},
	{labels.MustNewMatcher(labels.MatchRegexp, "instance", "host-1|host-2")},
	{labels.MustNewMatcher(labels.MatchRegexp, "zone", ".*")},
	{labels.MustNewMatcher(labels.MatchRegexp, "zone", ".+")},
	{labels.MustNewMatcher(labels.MatchRegexp, "zone", "z1|")},
	{labels.MustNewMatcher(labels.MatchNotRegexp, "zone", "z1|")},
	{labels.MustNewMatcher(labels.MatchNotRegexp, "instance", "host-1.*"), labels.MustNewMatcher(labels.MatchEqual, "__name__", "metric_1")},
	{labels.MustNewMatcher(labels.MatchEqual, "nope", "x")},
	{labels.MustNewMatcher(labels.MatchEqual, "nope", "")},
	{labels.MustNewMatcher(labels.MatchNotEqual, "nope", "")},
	{labels.MustNewMatcher(labels.MatchRegexp, "__name__", "metric_[0-3]"), labels.MustNewMatcher(labels.MatchNotRegexp, "mode", "user|system"), labels.MustNewMatcher(labels.MatchRegexp, "instance", ".*")},
}

// bruteForce returns the refs (positions in series) matching ms.
func bruteForce(series []labels.Labels, ms []*labels.Matcher) []storage.SeriesRef {
	var out []storage.SeriesRef
	for i, lset := range series {
		ok := true
		for _, m := range ms {
			ok = ok && m.Matches(lset.Get(m.Name))
		}
		if ok {
			out = append(out, storage.SeriesRef(i))
		}
	}
	return out
}

func checkMatchers(t *testing.T, r PostingsReader, series []labels.Labels) {
	t.Helper()
	for _, ms := range testMatchers {
		p, err := PostingsForMatchers(context.Background(), r, ms...)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Expand(p)
		if err != nil {
			t.Fatal(err)
		}
		if want := bruteForce(series, ms); !slices.Equal(got, want) {
			t.Errorf("%v: got %v, want %v", ms, got, want)
		}
	}
}

func TestMemPostingsMatchers(t *testing.T) {
	series := testSeries(500)
	for _, unordered := range []bool{false, true} {
		p := NewMemPostings()
		if unordered {
			p = NewUnorderedMemPostings()
		}
		// Out of order, as a checkpoint lists them.
		for _, i := range rand.New(rand.NewPCG(3, 4)).Perm(len(series)) {
			p.Add(storage.SeriesRef(i), series[i].Range)
		}
		p.EnsureOrder()
		checkMatchers(t, p, series)
	}
}

func TestMemPostingsDelete(t *testing.T) {
	series := testSeries(300)
	p := NewMemPostings()
	for i, lset := range series {
		p.Add(storage.SeriesRef(i), lset.Range)
	}
	var refs []storage.SeriesRef
	var lsets []labels.Labels
	for i, lset := range series {
		if lset.Get("__name__") == "metric_2" || lset.Get("zone") == "z0" {
			refs = append(refs, storage.SeriesRef(i))
			lsets = append(lsets, lset)
		}
	}
	p.Delete(refs, lsets)
	for _, ms := range testMatchers {
		pp, _ := PostingsForMatchers(context.Background(), p, ms...)
		got, _ := Expand(pp)
		want := slices.DeleteFunc(bruteForce(series, ms), func(r storage.SeriesRef) bool { return slices.Contains(refs, r) })
		if !slices.Equal(got, want) {
			t.Errorf("after delete, %v: got %v, want %v", ms, got, want)
		}
	}
	vals, _ := p.LabelValues("zone")
	if fmt.Sprint(vals) != "[z1]" {
		t.Errorf("zone values after delete: %v", vals)
	}
	if names := p.LabelNames(); slices.Contains(names, "nope") || !slices.Contains(names, "zone") {
		t.Errorf("label names: %v", names)
	}
}

// TestMemPostingsConcurrent adds and deletes series while queries run;
// under -race it checks the locking. Series that were there before a
// query started and stay must be answered right; those added or deleted
// while it runs may show up wrongly (see PostingsForMatchers).
func TestMemPostingsConcurrent(t *testing.T) {
	series := testSeries(2000)
	p := NewMemPostings()
	for i := range 1000 {
		p.Add(storage.SeriesRef(i), series[i].Range)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 1000; i < 2000; i++ {
			p.Add(storage.SeriesRef(i), series[i].Range)
			if i%100 == 0 {
				p.Delete([]storage.SeriesRef{storage.SeriesRef(i - 500)}, []labels.Labels{series[i-500]})
			}
		}
	}()
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				for _, ms := range testMatchers {
					pp, err := PostingsForMatchers(context.Background(), p, ms...)
					if err != nil {
						t.Error(err)
						return
					}
					for pp.Next() {
						if r := pp.At(); r >= 1000 || r >= 500 && r%100 == 0 {
							continue // added or deleted meanwhile
						}
						lset := series[pp.At()]
						for _, m := range ms {
							if !m.Matches(lset.Get(m.Name)) {
								t.Errorf("%v returned %s", ms, lset)
							}
						}
					}
				}
			}
		}()
	}
	wg.Wait()
}

func TestPostingsForMatchersCancelled(t *testing.T) {
	p := NewMemPostings()
	for i := range 1000 {
		p.Add(storage.SeriesRef(i), labels.FromStrings("__name__", "m", "id", fmt.Sprint(i)).Range)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := PostingsForMatchers(ctx, p, labels.MustNewMatcher(labels.MatchRegexp, "id", "1.*")); err == nil {
		t.Error("a cancelled query matched a regexp over 1000 values")
	}
}

// BenchmarkMemPostingsForMatchers finds the refs of selectors over 100k
// series created as scraping creates them: a target's 100 series one
// after another, so the lists of job and instance are runs.
func BenchmarkMemPostingsForMatchers(b *testing.B) {
	p := NewMemPostings()
	for i := range 100_000 {
		lset := labels.FromStrings("__name__", fmt.Sprintf("node_metric_%d", i%100), "instance", fmt.Sprintf("host-%d:9100", i/100),
			"job", "node", "mode", []string{"idle", "user", "system"}[i%3])
		p.Add(storage.SeriesRef(i+1), lset.Range)
	}
	for _, tc := range []struct {
		name string
		ms   []*labels.Matcher
	}{
		{"metric", []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "node_metric_7")}},
		{"metric-job", []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "node_metric_7"), labels.MustNewMatcher(labels.MatchEqual, "job", "node")}},
		{"metric-instances", []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "node_metric_7"), labels.MustNewMatcher(labels.MatchRegexp, "instance", "host-1.*")}},
		{"job-not-mode", []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "job", "node"), labels.MustNewMatcher(labels.MatchNotEqual, "mode", "idle")}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				it, err := PostingsForMatchers(context.Background(), p, tc.ms...)
				if err != nil {
					b.Fatal(err)
				}
				for it.Next() {
				}
			}
		})
	}
}
