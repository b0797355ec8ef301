package api

import (
	"bytes"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"

	"github.com/strata-db/strata/internal/rollup"
)

// countingQueryable counts the queriers asked of it: one per query, or
// per part of a split one.
type countingQueryable struct {
	storage.Queryable
	n atomic.Int64
}

func (c *countingQueryable) Querier(mint, maxt int64) (storage.Querier, error) {
	c.n.Add(1)
	return c.Queryable.Querier(mint, maxt)
}

// TestSplitRangeQueries checks that a range query split into parts
// answers byte for byte as the whole query does: values, series that
// exist in only some parts, subqueries, offsets, @ modifiers, histograms,
// warnings and infos, at steps that do and do not divide the range and
// from starts between milliseconds.
func TestSplitRangeQueries(t *testing.T) {
	queries := []string{
		`up`,
		`old`,
		`special`,
		`rate(http_requests_total[1m])`,
		`sum by (job) (rate(http_requests_total[2m]))`,
		`topk(1, http_requests_total)`,
		`temperature offset 1m`,
		`temperature offset -1m`,
		`max_over_time(temperature[3m:20s])`,
		`rate(http_requests_total[1m] @ 300)`,
		`http_requests_total @ start()`,
		`max_over_time(temperature[2m:15s] @ end())`,
		`avg_over_time(request_duration_seconds[1m])`,
		`histogram_quantile(0.5, request_duration_seconds)`,
		`sum(request_duration_seconds)`,
		`rate(temperature[1m])`,
		`absent(nonexistent)`,
		`time()`,
		`vector(1) + on() group_left count(up)`,
		`changes(temperature[2m])`,
		`count_over_time(up[30s])`,
		`timestamp(old)`,
		`deriv(temperature[2m])`,
		`label_replace(up, "x", "$1", "instance", "(.*)")`,
		`sum without (instance) (up) / ignoring(job) group_left sum(up)`,
		// Series sorting first that only the later parts hold.
		`(label_replace(up, "__name__", "aaa", "", "") and on() (vector(time()) > 400)) or old`,
	}
	// start, end, step, and the most parts the steps make (of at least
	// minStepsPerPart).
	ranges := []struct {
		start, end, step string
		maxParts         int
	}{
		{"0", "600", "5", 121 / minStepsPerPart},
		{"0.0015", "599.9", "7", 86 / minStepsPerPart},
		{"30", "540", "2.5", 205 / minStepsPerPart},
		{"-60", "700", "3", 254 / minStepsPerPart},
	}
	whole := newTestAPI(fixture(), nil)
	for _, parts := range []int{2, 3, 4} {
		store := &countingQueryable{Queryable: fixture()}
		split := newTestAPI(nil, func(o *Options) {
			o.Queryable = store
			o.RangeParallelism = parts
		})
		for _, query := range queries {
			for _, r := range ranges {
				target := "/api/v1/query_range?" + q("query", query, "start", r.start, "end", r.end, "step", r.step)
				want := do(whole, http.MethodGet, target, "")
				before := store.n.Load()
				got := do(split, http.MethodGet, target, "")
				if want.Code != http.StatusOK {
					t.Fatalf("%s: whole query answered %d: %s", target, want.Code, want.Body)
				}
				if got.Code != want.Code || !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
					t.Errorf("%d parts, %s:\n got %d %s\nwant %d %s", parts, target, got.Code, got.Body, want.Code, want.Body)
				}
				queriers := store.n.Load() - before
				wantQueriers := int64(min(parts, r.maxParts))
				if query == `http_requests_total @ start()` || query == `max_over_time(temperature[2m:15s] @ end())` {
					wantQueriers = 1
				}
				if queriers != wantQueriers {
					t.Errorf("%d parts, %s: %d queriers, want %d", parts, target, queriers, wantQueriers)
				}
			}
		}
	}
}

// TestSplitRangeQueryErrors checks that a split query fails as the whole
// one does: a query that does not parse, one of the wrong type, and one
// over the engine's sample limit in every part.
func TestSplitRangeQueryErrors(t *testing.T) {
	whole := newTestAPI(fixture(), nil)
	split := newTestAPI(fixture(), func(o *Options) { o.RangeParallelism = 2 })
	for _, query := range []string{`rate(up[1m]`, `"a string"`, `count_over_time(up[10m:1ms])`} {
		target := "/api/v1/query_range?" + q("query", query, "start", "0", "end", "600", "step", "5")
		want := do(whole, http.MethodGet, target, "")
		got := do(split, http.MethodGet, target, "")
		if want.Code == http.StatusOK {
			t.Fatalf("%s: whole query succeeded", query)
		}
		if got.Code != want.Code || !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
			t.Errorf("%s:\n got %d %s\nwant %d %s", query, got.Code, got.Body, want.Code, want.Body)
		}
	}
}

// TestSplitTakenWhole checks that a range query that is one of the
// rollup's inners alone runs whole, on the rollup's own cores, and that
// one over native histograms, which the rollup leaves to the engine, one
// with more around its inners and one the rollup does not take are
// split; all answer as the whole query in the engine alone does.
func TestSplitTakenWhole(t *testing.T) {
	p := parser.NewParser(parser.Options{})
	whole := newTestAPI(fixture(), nil)
	store := &countingQueryable{Queryable: fixture()}
	split := newTestAPI(nil, func(o *Options) {
		o.Queryable = store
		o.RangeParallelism = 2
		o.Rollup = rollup.New(rollup.Options{Engine: o.Engine, Parser: p, MaxSamples: 1e6})
	})
	// Queriers: the rollup opens one for each of its inners and the
	// engine one for the rest of the query, unless the query is an inner
	// alone; a part of a split query tried by the rollup and left to the
	// engine opens two.
	for _, c := range []struct {
		query    string
		queriers int64
	}{
		{`sum by (job) (rate(http_requests_total[2m]))`, 1},
		{`rate(http_requests_total[1m]) / on (instance, job) group_left sum by (instance, job) (rate(http_requests_total[2m]))`, 2 * 3},
		{`sum(request_duration_seconds)`, 1 + 2*2},
		{`max_over_time(temperature[3m:20s])`, 2},
	} {
		target := "/api/v1/query_range?" + q("query", c.query, "start", "0", "end", "600", "step", "5")
		want := do(whole, http.MethodGet, target, "")
		before := store.n.Load()
		got := do(split, http.MethodGet, target, "")
		if want.Code != http.StatusOK || got.Code != want.Code || !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
			t.Errorf("%s:\n got %d %s\nwant %d %s", c.query, got.Code, got.Body, want.Code, want.Body)
		}
		if queriers := store.n.Load() - before; queriers != c.queriers {
			t.Errorf("%s: %d queriers, want %d", c.query, queriers, c.queriers)
		}
	}
}
