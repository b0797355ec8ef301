package rollup

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/timestamp"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	promstorage "github.com/prometheus/prometheus/storage"

	stratachunkenc "github.com/strata-db/strata/internal/chunkenc"
	"github.com/strata-db/strata/internal/db"
	"github.com/strata-db/strata/internal/storage"
)

// The data of the differential tests: an hour of samples every 15 s or
// so, from t0, in blocks of 20 minutes and the head.
const (
	t0         = int64(1_700_000_000_000)
	dataSpan   = int64(time.Hour / time.Millisecond)
	blockRange = int64(20 * time.Minute / time.Millisecond)
)

// openData loads series that exercise every case of rate, increase and
// the aggregations: counters with resets, gaps, staleness markers, NaN
// and huge values, a gauge (for rate's annotation), two counters whose
// labels differ only in name (the engine's duplicate error), a series
// with native histograms (which run whole in the engine) and classic
// histogram buckets.
func openData(t *testing.T) *db.DB {
	opts := db.DefaultOptions()
	opts.Dir = t.TempDir()
	opts.Head.BlockRange = blockRange
	opts.CompactionInterval = 0
	opts.RetentionTime = 0
	opts.MaxBlockDuration = time.Duration(blockRange) * time.Millisecond
	store := db.Open(opts)
	if err := store.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })

	rng := rand.New(rand.NewPCG(1, 2))
	app := store.Appender(context.Background())
	add := func(lset labels.Labels, s storage.Sample) {
		if _, err := app.Append(0, lset, s); err != nil {
			t.Fatalf("%s at %d: %v", lset, s.T, err)
		}
	}
	counter := func(lset labels.Labels, scale float64) {
		v := rng.Float64() * 100 * scale
		for ts := t0; ts < t0+dataSpan; ts += 15000 {
			switch r := rng.IntN(100); {
			case r < 5: // a gap
				continue
			case r < 7: // a reset
				v = rng.Float64() * scale
			case r < 8:
				add(lset, storage.Sample{T: ts + rng.Int64N(2000), V: math.Float64frombits(value.StaleNaN)})
				continue
			case r < 9 && scale == 1:
				add(lset, storage.Sample{T: ts, V: math.NaN()})
				continue
			default:
				v += rng.Float64() * 10 * scale
			}
			add(lset, storage.Sample{T: ts + rng.Int64N(2000), V: v})
		}
	}
	for i := range 4 {
		for j := range 3 {
			counter(labels.FromStrings("__name__", "a_total", "i", fmt.Sprint(i), "j", fmt.Sprint(j)), 1)
			counter(labels.FromStrings("__name__", "b_total", "i", fmt.Sprint(i), "j", fmt.Sprint(j), "k", "x"), 1)
		}
		counter(labels.FromStrings("__name__", "g", "i", fmt.Sprint(i)), 1)
		counter(labels.FromStrings("__name__", "big_total", "i", fmt.Sprint(i)), 1e305)
	}
	// More series than a batch holds (batchSeries), so that results from
	// several batches are taken in order.
	for i := range batchSeries + batchSeries/2 {
		counter(labels.FromStrings("__name__", "many_total", "i", fmt.Sprint(i), "m", fmt.Sprint(i%3)), 1)
	}
	// Counters and a gauge in hundredths, as exporters give seconds of
	// CPU or load: their blocks' chunks hold mantissas, which a query
	// with many samples a step divides only where it reads them.
	for i := range 3 {
		c := rng.IntN(10000)
		for ts := t0; ts < t0+dataSpan; ts += 15000 {
			switch r := rng.IntN(100); {
			case r < 5:
				continue
			case r < 8:
				c = rng.IntN(100)
			default:
				c += rng.IntN(500)
			}
			add(labels.FromStrings("__name__", "dec_total", "i", fmt.Sprint(i)), storage.Sample{T: ts + rng.Int64N(2000), V: float64(c) / 100})
			add(labels.FromStrings("__name__", "dec_gauge", "i", fmt.Sprint(i)), storage.Sample{T: ts, V: float64(rng.IntN(2000)-1000) / 100})
		}
	}
	// Counters scraped at exact 15 s intervals, from zero and back to
	// zero at resets, with gaps: where a query's step is a multiple of
	// the interval every window's samples lie alike in its range, and
	// rate reuses its times from one window to the next while the
	// values decide whether the counter's zero is nearer than the start.
	// One's increases are subnormal floats.
	for i, scale := range []float64{1, 1e3, 0x1p-1060} {
		v := 0.0
		for ts := t0; ts < t0+dataSpan; ts += 15000 {
			switch r := rng.IntN(100); {
			case r < 4:
				continue
			case r < 10:
				v = 0
			default:
				v += float64(rng.IntN(5)) * scale
			}
			add(labels.FromStrings("__name__", "reg_total", "i", fmt.Sprint(i)), storage.Sample{T: ts, V: v})
		}
	}
	// Gauges near the largest float, whose sum overflows: avg goes on
	// as an incremental mean.
	for i := range 3 {
		for ts := t0; ts < t0+dataSpan; ts += 15000 {
			add(labels.FromStrings("__name__", "huge_gauge", "i", fmt.Sprint(i)), storage.Sample{T: ts, V: math.MaxFloat64 * (0.5 + rng.Float64()/2)})
		}
	}
	// A gauge with runs of NaN, for changes.
	for k, ts := 0, t0; ts < t0+dataSpan; k, ts = k+1, ts+15000 {
		v := float64(k % 7)
		if k%11 < 3 {
			v = math.NaN()
		}
		add(labels.FromStrings("__name__", "nan_gauge"), storage.Sample{T: ts, V: v})
	}
	counter(labels.FromStrings("__name__", "dup_total", "x", "1"), 1)
	// One name, and series that differ only in type or unit, which the
	// functions drop with the name.
	counter(labels.FromStrings("__name__", "typed_total", "x", "1"), 1)
	counter(labels.FromStrings("__name__", "typed_total", "__type__", "counter", "x", "1"), 1)
	counter(labels.FromStrings("__name__", "typed_total", "__unit__", "seconds", "x", "2"), 1)
	counter(labels.FromStrings("__name__", "united_total", "__unit__", "seconds", "x", "1"), 1)
	counter(labels.FromStrings("__name__", "united_total", "x", "2"), 1)
	counter(labels.FromStrings("__name__", "dup2_total", "x", "1"), 1)
	for _, le := range []string{"0.1", "0.5", "1", "+Inf"} {
		counter(labels.FromStrings("__name__", "lat_bucket", "le", le, "job", "api"), 1)
	}
	for ts := t0; ts < t0+dataSpan; ts += 30000 {
		n := uint64((ts - t0) / 1000)
		add(labels.FromStrings("__name__", "h_total"), storage.Sample{T: ts, H: &histogram.Histogram{Count: n, ZeroCount: n, Sum: float64(n)}})
		add(labels.FromStrings("__name__", "mixed_total"), storage.Sample{T: ts, V: float64(n)})
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := store.Compact(); err != nil {
		t.Fatal(err)
	}
	return store
}

// diffQueries are the queries of TestAgainstEngine: inners alone, in
// every aggregation, under transparent expressions, and those that must
// run whole.
var diffQueries = []string{
	`rate(a_total[5m])`,
	`rate(many_total[5m])`,
	`sum by (m) (rate(many_total[5m]))`,
	`avg(increase(many_total[3m]))`,
	`increase(a_total[2m])`,
	`rate(a_total{i="1"}[1m] offset 3m)`,
	`rate(a_total[5m] offset -2m)`,
	`sum(rate(a_total[5m]))`,
	`sum by (i) (rate(a_total[5m]))`,
	`sum(rate(a_total[5m])) by (i)`,
	`avg without (j) (increase(a_total[3m]))`,
	`max by (j) (rate(a_total[4m]))`,
	`min(rate(a_total[5m]))`,
	`count by (i) (rate(a_total[90s]))`,
	`group by (i) (rate(a_total[5m]))`,
	`sum by (k) (rate(b_total[5m]))`,
	`avg(rate(big_total[5m]))`,
	`sum(rate(big_total[5m]))`,
	`avg by (i) (increase(big_total[10m]))`,
	`rate(g[5m])`,
	`sum(rate(g[5m]))`,
	`rate({__name__=~"dup_total|dup2_total"}[5m])`,
	`sum(rate({__name__=~"dup_total|dup2_total"}[5m]))`,
	`rate({__name__=~"a_total|g"}[5m])`,
	`rate(typed_total[5m])`,
	`sum by (x) (rate(typed_total{x="1"}[5m]))`,
	`rate(typed_total{x="2"}[5m])`,
	`increase(united_total[5m])`,
	`rate(reg_total[5m])`,
	`increase(reg_total[1m])`,
	`sum(rate(reg_total[2m] offset 15s))`,
	`delta(reg_total[3m])`,
	`histogram_quantile(0.9, sum by (le, job) (rate(lat_bucket[5m])))`,
	`topk(3, rate(a_total[5m]))`,
	`sum(rate(a_total[5m])) / sum(rate(b_total[5m]))`,
	`sum by (i) (rate(a_total[5m])) * on (i) group_left sum by (i) (rate(b_total[5m]))`,
	`abs(-rate(a_total[5m])) > 0.2`,
	`-sum((rate(a_total[5m])))`,
	`label_replace(sum by (i) (rate(a_total[5m])), "x", "$1", "i", "(.*)")`,
	`rate(h_total[5m])`,
	`sum(rate(h_total[5m]))`,
	`sum(rate(mixed_total[5m])) + sum(rate(h_total[5m]))`,
	`rate(nothing_total[5m])`,
	`timestamp(rate(a_total[5m]))`,
	`sum(rate(a_total[5m] @ 1700001000))`,
	`max_over_time(sum(rate(a_total[5m]))[10m:1m])`,
	`quantile(0.5, rate(a_total[5m]))`,
	`sum_over_time(g[5m])`,
	`avg_over_time(g[5m])`,
	`min_over_time(a_total[3m])`,
	`max_over_time(g[10m] offset 1m)`,
	`count_over_time(a_total[2m])`,
	`avg by (i) (avg_over_time(big_total[10m]))`,
	`avg(max_over_time(huge_gauge[10m]))`,
	`avg(huge_gauge)`,
	`sum(huge_gauge)`,
	`sum(sum_over_time(big_total[5m]))`,
	`max by (j) (max_over_time(a_total[4m]))`,
	`min(min_over_time(g[1m]))`,
	`sum_over_time(h_total[5m])`,
	`irate(a_total[5m])`,
	`sum by (i) (irate(a_total[1m]))`,
	`idelta(g[2m])`,
	`delta(g[10m])`,
	`sum(delta(a_total[3m]))`,
	`changes(a_total[5m])`,
	`max by (i) (changes(g[5m]))`,
	`changes(nan_gauge[5m])`,
	`max_over_time(nan_gauge[3m])`,
	`min_over_time(nan_gauge[3m])`,
	`avg_over_time(nan_gauge[2m])`,
	`resets(a_total[10m])`,
	`irate(h_total[5m])`,
	`g`,
	`a_total{i="1"}`,
	`many_total`,
	`nan_gauge`,
	`sum by (j) (a_total)`,
	`avg without (j) (a_total)`,
	`max(g offset 2m)`,
	`count(a_total offset -1m)`,
	`-g > 20`,
	`sum by (i) (a_total) / on (i) g`,
	`h_total`,
	`mixed_total`,
	`rate(dec_total[5m])`,
	`sum by (i) (increase(dec_total[10m]))`,
	`resets(dec_total[10m])`,
	`irate(dec_total[3m])`,
	`delta(dec_gauge[10m])`,
	`idelta(dec_gauge[5m])`,
	`dec_gauge`,
	`max(dec_gauge offset 1m)`,
	`changes(dec_gauge[5m])`,
	`avg_over_time(dec_gauge[5m])`,
}

// TestAgainstEngine runs every diffQueries query, instant and over
// ranges, through Engine and through Prometheus' engine alone, and
// requires the same answers bit for bit (values, labels, order of an
// instant vector), the same warnings and infos, and the same errors.
func TestAgainstEngine(t *testing.T) {
	store := openData(t)
	const maxSamples = 50000000
	prom := newPromEngine(t, maxSamples)
	e := New(Options{Engine: prom, MaxSamples: maxSamples})
	rng := rand.New(rand.NewPCG(3, 4))
	ctx := context.Background()
	run := func(eng promql.QueryEngine, qs string, start, end time.Time, step time.Duration, opts promql.QueryOpts) (*promql.Result, func()) {
		var q promql.Query
		var err error
		if step == 0 {
			q, err = eng.NewInstantQuery(ctx, store, opts, qs, start)
		} else {
			q, err = eng.NewRangeQuery(ctx, store, opts, qs, start, end, step)
		}
		if err != nil {
			return &promql.Result{Err: err}, func() {}
		}
		return q.Exec(ctx), q.Close
	}
	nonEmpty, instantTaken := 0, int64(0)
	for _, qs := range diffQueries {
		for round := range 6 {
			start := t0 + rng.Int64N(dataSpan)
			end := start
			var step time.Duration
			if round > 0 {
				step = []time.Duration{7 * time.Second, 15 * time.Second, time.Minute, 100 * time.Second, 10 * time.Minute}[rng.IntN(5)]
				start = t0 - 5*60000 + rng.Int64N(dataSpan/2)
				end = start + rng.Int64N(dataSpan)
			}
			// The last round's selectors look back 2m, as the query asks.
			var opts promql.QueryOpts
			if round == 5 {
				opts = promql.NewPrometheusQueryOpts(false, 2*time.Minute)
			}
			name := fmt.Sprintf("%s/%d-%d/%s/round %d", qs, start-t0, end-t0, step, round)
			want, closeWant := run(prom, qs, timestamp.Time(start), timestamp.Time(end), step, opts)
			before := e.taken.Load()
			got, closeGot := run(e, qs, timestamp.Time(start), timestamp.Time(end), step, opts)
			if step == 0 {
				instantTaken += e.taken.Load() - before
			}
			if diff := compareResults(qs, got, want); diff != "" {
				t.Errorf("%s: %s", name, diff)
			}
			if points(want) > 0 {
				nonEmpty++
			}
			closeWant()
			closeGot()
		}
	}
	t.Logf("%d queries evaluated inners, %d of them instant; %d answers had points", e.taken.Load(), instantTaken, nonEmpty)
	if n := e.taken.Load(); n < int64(len(diffQueries))*3 {
		t.Errorf("only %d queries evaluated inners", n)
	}
	if instantTaken < int64(len(diffQueries))/2 {
		t.Errorf("only %d instant queries evaluated inners", instantTaken)
	}
	if nonEmpty < len(diffQueries)*4 {
		t.Errorf("only %d answers had points", nonEmpty)
	}
}

// points counts the points of a result.
func points(r *promql.Result) int {
	switch v := r.Value.(type) {
	case promql.Matrix:
		n := 0
		for _, s := range v {
			n += len(s.Floats) + len(s.Histograms)
		}
		return n
	case promql.Vector:
		return len(v)
	}
	return 0
}

// compareResults describes how got differs from want, or returns "".
func compareResults(qs string, got, want *promql.Result) string {
	if (got.Err == nil) != (want.Err == nil) || (got.Err != nil && got.Err.Error() != want.Err.Error()) {
		return fmt.Sprintf("error %v, want %v", got.Err, want.Err)
	}
	gw, gi := got.Warnings.AsStrings(qs, 0, 0)
	ww, wi := want.Warnings.AsStrings(qs, 0, 0)
	slices.Sort(gw)
	slices.Sort(ww)
	slices.Sort(gi)
	slices.Sort(wi)
	if !slices.Equal(gw, ww) || !slices.Equal(gi, wi) {
		return fmt.Sprintf("warnings %q infos %q, want %q %q", gw, gi, ww, wi)
	}
	if got.Err != nil {
		return ""
	}
	g, w := got.Value, want.Value
	if g.Type() != w.Type() {
		return fmt.Sprintf("%s, want %s", g.Type(), w.Type())
	}
	switch w := w.(type) {
	case promql.Matrix:
		g := g.(promql.Matrix)
		if len(g) != len(w) {
			return fmt.Sprintf("%d series, want %d", len(g), len(w))
		}
		for i := range w {
			if !labels.Equal(g[i].Metric, w[i].Metric) || len(g[i].Floats) != len(w[i].Floats) || len(g[i].Histograms) != len(w[i].Histograms) {
				return fmt.Sprintf("series %d: %s with %d points, want %s with %d", i, g[i].Metric, len(g[i].Floats), w[i].Metric, len(w[i].Floats))
			}
			for j := range w[i].Floats {
				if g[i].Floats[j].T != w[i].Floats[j].T || math.Float64bits(g[i].Floats[j].F) != math.Float64bits(w[i].Floats[j].F) {
					return fmt.Sprintf("%s point %d: %v, want %v", w[i].Metric, j, g[i].Floats[j], w[i].Floats[j])
				}
			}
		}
	case promql.Vector:
		g := g.(promql.Vector)
		if len(g) != len(w) {
			return fmt.Sprintf("%d samples, want %d", len(g), len(w))
		}
		for i := range w {
			if !labels.Equal(g[i].Metric, w[i].Metric) || g[i].T != w[i].T || math.Float64bits(g[i].F) != math.Float64bits(w[i].F) || (g[i].H == nil) != (w[i].H == nil) {
				return fmt.Sprintf("sample %d: %s %v, want %s %v", i, g[i].Metric, g[i].F, w[i].Metric, w[i].F)
			}
		}
	case promql.Scalar:
		if math.Float64bits(g.(promql.Scalar).V) != math.Float64bits(w.V) {
			return fmt.Sprintf("%v, want %v", g, w)
		}
	}
	return ""
}

// TestPlan checks which parts of a query Engine evaluates and that the
// rewritten query keeps every position.
func TestPlan(t *testing.T) {
	p := parser.NewParser(parser.Options{})
	for qs, want := range map[string][]string{
		`rate(a_total[5m])`:                                         {`rate(a_total[5m])`},
		`sum by (i) (rate(a_total[5m])) > 1`:                        {`sum by (i) (rate(a_total[5m]))`},
		`sum(rate(a_total[5m])) by (i)`:                             {`sum(rate(a_total[5m])) by (i)`},
		`topk(3, sum by (i) (increase(a_total[5m])))`:               {`sum by (i) (increase(a_total[5m]))`},
		`topk(3, rate(a_total[5m]))`:                                {`rate(a_total[5m])`},
		`histogram_quantile(0.9, sum by (le) (rate(x_bucket[5m])))`: {`sum by (le) (rate(x_bucket[5m]))`},
		`sum(rate(a_total[5m])) / sum(rate(b_total[5m]))`:           {`sum(rate(a_total[5m]))`, `sum(rate(b_total[5m]))`},
		`rate(x[1m])`:                             {`rate(x[1m])`},
		`up`:                                      nil, // too short for its marker
		`node_load1`:                              {`node_load1`},
		`sum by (i) (node_load1)`:                 {`sum by (i) (node_load1)`},
		`node_load1 offset 5m > 1`:                {`node_load1 offset 5m`},
		`topk(3, node_load1)`:                     {`node_load1`},
		`node_free_bytes / node_size_bytes`:       {`node_free_bytes`, `node_size_bytes`},
		`timestamp(node_load1)`:                   nil,
		`absent(node_load1)`:                      nil,
		`node_load1 @ 100`:                        nil,
		`node_load1 smoothed`:                     nil,
		`rate(a_total[5m]) + on () {__r="0"}`:     nil, // a selector on the marker label
		`timestamp(rate(a_total[5m]))`:            nil,
		`absent(rate(a_total[5m]))`:               nil,
		`irate(a_total[5m])`:                      {`irate(a_total[5m])`},
		`deriv(a_total[5m])`:                      nil,
		`stddev(rate(a_total[5m]))`:               {`rate(a_total[5m])`},
		`rate(a_total[5m] @ 100)`:                 nil,
		`sum(rate(a_total[5m])) + up @ 100`:       nil,
		`max_over_time(rate(a_total[5m])[1h:])`:   nil,
		`count_values("v", rate(a_total[5m]))`:    {`rate(a_total[5m])`},
		`rate(a_total[5m] offset (1m+1m))`:        nil,
		`sum by (i) (rate(a_total[(5m+1m)]))`:     nil,
		`rate(a_total[5m] anchored)`:              nil,
		"sum(\n  rate(a_total[5m])\n) by (i) * 2": {"sum(\n  rate(a_total[5m])\n) by (i)"},
	} {
		pl := newPlan(p, qs, false)
		var got []string
		if pl != nil {
			for _, in := range pl.inners {
				got = append(got, qs[in.pos.Start:in.pos.End])
			}
			if len(pl.rewritten) != len(qs) {
				t.Errorf("%s: rewritten to %q, of another length", qs, pl.rewritten)
			}
			if _, err := p.ParseExpr(pl.rewritten); err != nil {
				t.Errorf("%s: rewritten to %q: %v", qs, pl.rewritten, err)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: inners %q, want %q", qs, got, want)
		}
	}
	// With start timestamps, the functions that read them are the
	// engine's.
	for qs, want := range map[string][]string{
		`sum(rate(a_total[5m]))`:                                  nil,
		`increase(a_total[5m]) + irate(a_total[5m])`:              nil,
		`resets(a_total[5m])`:                                     nil,
		`sum(rate(a_total[5m])) / sum(delta(a_total[5m]))`:        {`sum(delta(a_total[5m]))`},
		`max_over_time(a_total[5m]) - changes(a_total[5m])`:       {`max_over_time(a_total[5m])`, `changes(a_total[5m])`},
		`sum by (i) (node_load1) * on (i) sum(rate(x_total[1m]))`: {`sum by (i) (node_load1)`},
	} {
		var got []string
		if pl := newPlan(p, qs, true); pl != nil {
			for _, in := range pl.inners {
				got = append(got, qs[in.pos.Start:in.pos.End])
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s with start timestamps: inners %q, want %q", qs, got, want)
		}
	}
}

// failingQueryable fails every querier it is asked for.
type failingQueryable struct{}

func (failingQueryable) Querier(int64, int64) (promstorage.Querier, error) {
	return nil, errors.New("disk on fire")
}

// TestErrorsAsEngine checks that a failing storage and a canceled query
// give the errors Prometheus' engine gives: the query runs whole there.
func TestErrorsAsEngine(t *testing.T) {
	store := openData(t)
	prom := newPromEngine(t, 50000000)
	e := New(Options{Engine: prom, MaxSamples: 50000000})
	const qs = `sum by (i) (rate(a_total[5m]))`
	start, end := timestamp.Time(t0), timestamp.Time(t0+dataSpan)
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for name, c := range map[string]struct {
		ctx context.Context
		q   promstorage.Queryable
	}{
		"storage":  {context.Background(), failingQueryable{}},
		"canceled": {canceled, store},
	} {
		var results [2]*promql.Result
		for i, eng := range []promql.QueryEngine{prom, e} {
			q, err := eng.NewRangeQuery(c.ctx, c.q, nil, qs, start, end, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			results[i] = q.Exec(c.ctx)
			defer q.Close()
		}
		if results[0].Err == nil {
			t.Fatalf("%s: no error from the engine", name)
		}
		if diff := compareResults(qs, results[1], results[0]); diff != "" {
			t.Errorf("%s: %s", name, diff)
		}
	}
}

// TestDuplicates checks the duplicate check on results whose hashes
// collide: equal hashes alone are not duplicates, equal labels are,
// wherever they are among the results.
func TestDuplicates(t *testing.T) {
	a, b, c := labels.FromStrings("x", "1"), labels.FromStrings("x", "2"), labels.FromStrings("x", "3")
	for _, tc := range []struct {
		outs []output
		want bool
	}{
		{nil, false},
		{[]output{{1, a}, {2, b}, {3, c}}, false},
		{[]output{{7, a}, {7, b}, {7, c}}, false},
		{[]output{{7, a}, {7, b}, {7, a}}, true},
		{[]output{{9, c}, {7, a}, {8, b}, {7, b}, {7, a}}, true},
		{[]output{{5, a}, {6, b}, {5, c}, {6, a}}, false},
	} {
		if got := duplicates(slices.Clone(tc.outs)); got != tc.want {
			t.Errorf("duplicates(%v) = %v, want %v", tc.outs, got, tc.want)
		}
	}
}

// TestSearch checks search against a linear scan, from every start, for
// times before, between, at and after the samples.
func TestSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 5, 6, 40, 300} {
		ts := make([]int64, n)
		for i := range ts {
			ts[i] = int64(i)*10 + rng.Int64N(3)*3
		}
		for lo := 0; lo <= n; lo++ {
			for tt := int64(-5); tt <= int64(n)*10+5; tt += 2 {
				want := lo
				for want < n && ts[want] <= tt {
					want++
				}
				if got := search(ts, lo, tt); got != want {
					t.Fatalf("n %d: search(from %d, t %d) = %d, want %d", n, lo, tt, got, want)
				}
			}
		}
	}
}

// TestRateZeroFar checks that where zeroFar says a counter's zero is not
// nearer than the start, Prometheus' computation of it agrees: for
// windows' times of every kind and increases over the whole range of
// floats, subnormal ones included, with the first value where zeroFar
// begins to say so, and a little above and below it.
func TestRateZeroFar(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	far := 0
	for range 200000 {
		var rt rateTimes
		rt.setSpan(1+rng.Int64N(600000), 2+rng.IntN(40))
		rt.setEnds(1+rng.Int64N(60000), rng.Int64N(60000), true, 300)
		result := math.Ldexp(1+rng.Float64(), rng.IntN(2100)-1074)
		// The first value at which zeroFar begins to say so.
		edge := result * rt.toZero / rt.sampledInterval
		for _, first := range []float64{edge, math.Nextafter(edge, math.Inf(1)), math.Nextafter(edge, 0), edge * (1 + rng.Float64()*1e-5), edge * (1 - rng.Float64()*1e-5)} {
			if !(first >= 0) || !rt.zeroFar(first, result) {
				continue
			}
			far++
			if durationToZero := rt.sampledInterval * (first / result); durationToZero < rt.durationToStart {
				t.Fatalf("%+v: first %v, increase %v: zeroFar, but durationToZero %v < durationToStart %v", rt, first, result, durationToZero, rt.durationToStart)
			}
		}
	}
	if far < 100000 {
		t.Errorf("zeroFar only %d times", far)
	}
}

// TestRateTimesKept checks that extrapolatedRate answers the same with
// the times it keeps from window to window as with none kept: over a
// counter scraped every 15 s with gaps, from zero and back, windows of
// each function at steps that keep the samples' places and that do not.
func TestRateTimesKept(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	var ts []int64
	var vals stratachunkenc.Values
	v := 0.0
	for tt := int64(0); tt < 3600000; tt += 15000 {
		if rng.IntN(5) == 0 {
			continue
		}
		if rng.IntN(20) == 0 {
			v = 0
		}
		v += float64(rng.IntN(4))
		ts = append(ts, tt)
		vals.Append(v)
	}
	ts, resets := vals.DropStale(ts, nil)
	kept := 0
	for _, rng := range []time.Duration{time.Minute, 5 * time.Minute} {
		for _, step := range []int64{15000, 30000, 29937, 7000} {
			for _, fn := range [][2]bool{{true, true}, {true, false}, {false, false}} {
				w := window{ts: ts, vals: &vals, resets: resets, rangeMs: rng.Milliseconds(), rangeSeconds: rng.Seconds()}
				for at := int64(0); at < 3700000; at += step {
					w.at, w.lo, w.hi, w.r = at, 0, 0, 0
					for w.hi < len(ts) && ts[w.hi] <= at {
						w.hi++
					}
					for w.lo < w.hi && ts[w.lo] <= at-w.rangeMs {
						w.lo++
					}
					fresh := w
					fresh.rate = rateTimes{}
					want, wantOK := fresh.extrapolatedRate(fn[0], fn[1])
					ends := w.rate.ends
					got, ok := w.extrapolatedRate(fn[0], fn[1])
					if ok != wantOK || math.Float64bits(got) != math.Float64bits(want) {
						t.Fatalf("range %s, step %d ms, %v, at %d: %v, %v; want %v, %v", rng, step, fn, at, got, ok, want, wantOK)
					}
					if ends && w.rate == fresh.rate {
						kept++
					}
				}
			}
		}
	}
	if kept < 500 {
		t.Errorf("times kept for only %d windows", kept)
	}
}

// TestPlanShared checks that a worker that windows series one after
// another, and finds the windows of a series with the last one's sample
// times where that one's were (seriesEval.plan), answers as a worker
// that windows each series afresh: for every function, over series that
// share their times with resets, NaN and counters whose zero is near,
// among series whose times differ by one sample or end early.
func TestPlanShared(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	var base []int64
	for tt := int64(0); tt < 3600000; tt += 15000 {
		if rng.IntN(8) != 0 {
			base = append(base, tt+rng.Int64N(500))
		}
	}
	type series struct {
		ts   []int64
		vals []float64
	}
	var set []series
	add := func(ts []int64, val func(i int, last float64) float64) {
		vals := make([]float64, len(ts))
		last := 0.0
		for i := range ts {
			vals[i] = val(i, last)
			last = vals[i]
		}
		set = append(set, series{ts: ts, vals: vals})
	}
	counter := func(i int, last float64) float64 {
		switch r := rng.IntN(40); {
		case r == 0:
			return 0
		case r == 1:
			return math.NaN()
		}
		if math.IsNaN(last) {
			last = 0
		}
		return last + float64(rng.IntN(3))
	}
	gauge := func(int, float64) float64 { return float64(rng.IntN(200)-100) / 10 }
	stale := func(i int, last float64) float64 {
		if i%17 == 3 {
			return math.Float64frombits(value.StaleNaN)
		}
		return counter(i, last)
	}
	for range 4 {
		add(base, counter)
	}
	for range 3 {
		add(base, gauge)
	}
	// Staleness markers, which the functions' series drop and the
	// selector's keep; one sample fewer, then the times again; a series
	// that ends early; one sample 5 s later; every sample 7 s later.
	add(base, stale)
	add(base, stale)
	drop := rng.IntN(len(base))
	add(slices.Delete(slices.Clone(base), drop, drop+1), counter)
	add(base, counter)
	add(base[:len(base)/2], counter)
	add(base, counter)
	moved := slices.Clone(base)
	moved[len(moved)/3] += 5000
	add(moved, counter)
	later := slices.Clone(base)
	for i := range later {
		later[i] += 7000
	}
	add(later, counter)
	add(base, counter)
	windowFuncs["selector"] = selectorFunc
	defer delete(windowFuncs, "selector")
	planned := 0
	for name, fn := range windowFuncs {
		// One worker for all steps: a plan is for one windowing only.
		shared := &seriesEval{}
		for _, stepMs := range []int64{15000, 29937, 7000, 60000} {
			wd := windowing{st: steps{start: 200000, end: 3700000, interval: stepMs}, rng: 5 * time.Minute, offset: 30 * time.Second, fn: fn, id: windowings.Add(1)}
			for i, s := range set {
				var got, want seriesSlot
				load := func(se *seriesEval) {
					se.ts, se.resets = append(se.ts[:0], s.ts...), se.resets[:0]
					se.vals.Reset()
					for _, v := range s.vals {
						se.vals.Append(v)
					}
					if !fn.keepStale {
						se.ts, se.resets = se.vals.DropStale(se.ts, se.resets)
					}
				}
				fresh := &seriesEval{}
				load(fresh)
				want.got = fresh.windows(&want, wd)
				load(shared)
				if shared.planned && wd.id == shared.planID && slices.Equal(shared.ts, shared.planTs) {
					planned++
				}
				got.got = shared.windows(&got, wd)
				if got.got != want.got || !slices.Equal(got.has, want.has) {
					t.Fatalf("%s, step %d, series %d: %d steps with a value, want %d", name, stepMs, i, got.got, want.got)
				}
				for k := range want.vals {
					if want.has[k] && math.Float64bits(got.vals[k]) != math.Float64bits(want.vals[k]) {
						t.Fatalf("%s, step %d, series %d, step %d: %v, want %v", name, stepMs, i, k, got.vals[k], want.vals[k])
					}
				}
			}
		}
	}
	if planned < len(windowFuncs)*4*5 {
		t.Errorf("the windows of only %d series were planned", planned)
	}
}

// TestAlone checks that a query that is one inner is answered without
// the engine, with the engine's answer (TestAgainstEngine) and the
// statistics of the samples the engine would have read, and that other
// queries are not.
func TestAlone(t *testing.T) {
	store := openData(t)
	prom := newPromEngine(t, 50000000)
	e := New(Options{Engine: prom, MaxSamples: 50000000})
	ctx := context.Background()
	start := timestamp.Time(t0 + dataSpan/2)
	for qs, alone := range map[string]bool{
		`rate(a_total[5m])`:               true,
		` sum by (i) (rate(a_total[5m]))`: true,
		`nan_gauge`:                       true,
		`(nan_gauge)`:                     false,
		`sum(rate(a_total[5m])) > 0`:      false,
		`rate(h_total[5m])`:               true, // but runs whole: histograms
	} {
		for _, step := range []time.Duration{0, time.Minute} {
			var q promql.Query
			var err error
			if step == 0 {
				q, err = e.NewInstantQuery(ctx, store, nil, qs, start)
			} else {
				q, err = e.NewRangeQuery(ctx, store, nil, qs, start, start.Add(20*time.Minute), step)
			}
			if err != nil {
				t.Fatal(err)
			}
			rq, ok := q.(*query)
			if !ok || rq.plan.alone != alone {
				t.Fatalf("%q: alone %v, want %v", qs, ok && rq.plan.alone, alone)
			}
			res := q.Exec(ctx)
			if res.Err != nil {
				t.Fatalf("%q: %v", qs, res.Err)
			}
			answered := rq.stats != nil
			if want := alone && qs != `rate(h_total[5m])`; answered != want {
				t.Errorf("%q step %v: answered without the engine %v, want %v", qs, step, answered, want)
			}
			if st := q.Stats().Samples; answered && (st.TotalSamples != int64(points(res)) || st.PeakSamples != points(res) || points(res) == 0) {
				t.Errorf("%q step %v: %d samples, peak %d; %d points", qs, step, st.TotalSamples, st.PeakSamples, points(res))
			}
			q.Close()
		}
	}
}

// TestAloneNoFallback checks which queries Engine says are an inner
// alone, and that under NoFallback one it leaves to the engine fails
// with ErrNotTaken instead.
func TestAloneNoFallback(t *testing.T) {
	store := openData(t)
	prom := newPromEngine(t, 50000000)
	e := New(Options{Engine: prom, MaxSamples: 50000000})
	for qs, want := range map[string]bool{
		`sum by (i) (rate(a_total[5m]))`: true,
		`many_total`:                     true,
		`rate(h_total[5m])`:              true, // until its histograms are read
		`histogram_quantile(0.9, sum by (le, job) (rate(lat_bucket[5m])))`: false,
		`sum(rate(a_total[5m])) / sum(rate(b_total[5m]))`:                  false,
		`(rate(a_total[5m]))`:                      false,
		`max_over_time(rate(a_total[5m])[10m:1m])`: false,
		`rate(a_total[5m] @ 1700001000)`:           false,
	} {
		if got := e.Alone(qs); got != want {
			t.Errorf("Alone(%q) = %v, want %v", qs, got, want)
		}
	}
	ctx := context.Background()
	start := timestamp.Time(t0)
	for _, qs := range []string{`rate(h_total[5m])`, `rate(a_total[5m])`} {
		q, err := e.NewRangeQuery(ctx, store, nil, qs, start, start.Add(time.Hour), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		res := q.Exec(NoFallback(ctx))
		if notTaken := qs == `rate(h_total[5m])`; errors.Is(res.Err, ErrNotTaken) != notTaken || (!notTaken && res.Err != nil) {
			t.Errorf("%s under NoFallback: %v", qs, res.Err)
		}
		q.Close()
		q, err = e.NewRangeQuery(ctx, store, nil, qs, start, start.Add(time.Hour), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if res := q.Exec(ctx); res.Err != nil {
			t.Errorf("%s: %v", qs, res.Err)
		}
		q.Close()
	}
}
