package run

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/strata-db/strata/internal/bench/client"
	"github.com/strata-db/strata/internal/bench/report"
	"github.com/strata-db/strata/internal/bench/stats"
	"github.com/strata-db/strata/internal/bench/workload"
)

// querySpec is one query of the fixed set.
type querySpec struct {
	key, name string
	expr      string
	// ranged queries run over the whole loaded span; the others are
	// instant queries at its end.
	ranged bool
}

// querySet is what a dashboard over node-exporter data asks: raw
// selectors, regex matchers, rates, aggregations, topk and a latency
// percentile from a classic histogram's _bucket series, instant and over
// a range. It is fixed so that runs and servers compare.
var querySet = []querySpec{
	{"selector", "instant selector", `node_memory_MemAvailable_bytes`, false},
	{"regex", "instant regex matchers", `node_cpu_seconds_total{mode=~"user|system|iowait",cpu="0"}`, false},
	{"rate", "instant rate", `rate(node_network_receive_bytes_total[5m])`, false},
	{"sum_by_rate", "instant sum by rate", `sum by (mode) (rate(node_cpu_seconds_total[5m]))`, false},
	{"topk", "instant topk, negative regex", `topk(10, node_filesystem_avail_bytes{mountpoint!~"/boot.*"})`, false},
	{"hist_quantile", "instant histogram_quantile", `histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket[5m])))`, false},
	{"range_selector", "range selector", `node_load1`, true},
	{"range_sum_by_rate", "range sum by rate", `sum by (instance) (rate(node_network_transmit_bytes_total{device="eth0"}[5m]))`, true},
	{"range_avg_regex", "range avg by, regex", `avg by (mode) (rate(node_cpu_seconds_total{mode!~"idle|iowait"}[5m]))`, true},
	{"range_topk", "range topk rate", `topk(5, rate(node_disk_read_bytes_total[5m]))`, true},
	{"range_hist_quantile", "range histogram_quantile", `histogram_quantile(0.9, sum by (le, job) (rate(http_request_duration_seconds_bucket[5m])))`, true},
}

// rangePoints is the number of steps of a range query: about what a
// Grafana panel asks for at a common width.
const rangePoints = 240

// QueryOptions configure the query workload.
type QueryOptions struct {
	Load LoadOptions
	// Iterations is how many times each query is timed.
	Iterations int
}

// DefaultQueryOptions load 10,000 series with two hours of samples each
// (480 at 15s: 4.8 million samples) and time each query 50 times, enough
// for a p99 that is not just the maximum of a handful.
func DefaultQueryOptions() QueryOptions {
	wo := workload.DefaultOptions()
	wo.Series = 10_000
	return QueryOptions{Load: LoadOptions{Workload: wo, Protocol: workload.V1, SamplesPerSeries: 480}, Iterations: 50}
}

// QuickQueryOptions load 1,000 series over an hour and time each query 5
// times.
func QuickQueryOptions() QueryOptions {
	o := DefaultQueryOptions()
	o.Load.Workload.Series = 1000
	o.Load.Workload.SeriesPerRequest = 500
	o.Load.Workload.Senders = 2
	o.Load.SamplesPerSeries = 240
	o.Iterations = 5
	return o
}

// Query measures PromQL latency over a loaded data set.
type Query struct{ opts QueryOptions }

// NewQuery validates o and returns the workload.
func NewQuery(o QueryOptions) (*Query, error) {
	if o.Iterations < 1 {
		return nil, fmt.Errorf("iterations must be at least 1")
	}
	if err := o.Load.Validate(); err != nil {
		return nil, err
	}
	return &Query{opts: o}, nil
}

func (w *Query) Name() string                        { return "query" }
func (w *Query) Prepare(context.Context, *Env) error { return nil }

func (w *Query) Params() []report.Param {
	p := w.opts.Load.params()
	p = append(p, report.Param{Name: "iterations per query", Value: strconv.Itoa(w.opts.Iterations) + " (after one untimed warm-up)"})
	for _, q := range querySet {
		kind := "instant"
		if q.ranged {
			kind = fmt.Sprintf("range, %d steps", rangePoints)
		}
		p = append(p, report.Param{Name: "query " + q.key, Value: fmt.Sprintf("`%s` (%s)", q.expr, kind)})
	}
	return p
}

func (w *Query) Chart() report.Chart {
	c := report.Chart{Title: "PromQL latency p50"}
	for _, q := range querySet {
		c.Keys = append(c.Keys, q.key+"_p50")
	}
	return c
}

func (w *Query) Run(ctx context.Context, env *Env, t Target) (report.Figures, []string, error) {
	srv, err := open(ctx, env, t)
	if err != nil {
		return nil, nil, err
	}
	defer env.removeRun(srv.dataDir)
	defer srv.kill()
	ld, err := load(ctx, env, srv, w.opts.Load)
	if err != nil {
		return nil, nil, err
	}
	got, err := ld.waitVisible(ctx, srv)
	if err != nil {
		return nil, nil, err
	}
	var notes []string
	if got.series < int64(ld.opts.Workload.Series) || got.samples < ld.opts.samples() {
		notes = append(notes, fmt.Sprintf("only %d series and %d samples of %d and %d were visible to queries", got.series, got.samples, ld.opts.Workload.Series, ld.opts.samples()))
	}
	idle, settled, err := srv.settle(ctx)
	if err != nil {
		return nil, nil, err
	}
	if !settled {
		notes = append(notes, fmt.Sprintf("still busy %v after the load: queries timed while it worked in the background", idle.Round(time.Second)))
	}
	peakFromQueries := false
	if srv.sampler != nil {
		// Measure the memory the queries take, not the load's.
		peakFromQueries = srv.sampler.Reset() == nil
	}

	api := client.NewAPI(srv.queryBase, srv.http)
	end := time.UnixMilli(ld.end())
	start := time.UnixMilli(ld.start())
	step := max(end.Sub(start)/rangePoints, time.Duration(ld.opts.Workload.Interval)*time.Millisecond)
	run := func(q querySpec) (client.QueryResult, error) {
		if q.ranged {
			return api.QueryRange(ctx, q.expr, start, end, step)
		}
		return api.Query(ctx, q.expr, end)
	}
	env.logf("query: %d queries, %d times each", len(querySet), w.opts.Iterations)
	latencies := make([][]time.Duration, len(querySet))
	results := make([]client.QueryResult, len(querySet))
	// Round-robin over the set, as a dashboard refresh does, so no query
	// runs with caches warmed by many repetitions of itself alone. The
	// first pass warms up and is not timed.
	for it := -1; it < w.opts.Iterations; it++ {
		for i, q := range querySet {
			r, err := run(q)
			if err != nil {
				if aerr := srv.alive(); aerr != nil {
					return nil, nil, aerr
				}
				return nil, nil, fmt.Errorf("query %s %s: %w", q.key, q.expr, err)
			}
			if it >= 0 {
				latencies[i] = append(latencies[i], r.Latency)
			}
			results[i] = r
		}
	}

	var figs report.Figures
	for i, q := range querySet {
		s := stats.Summarize(latencies[i])
		figs.Add(q.key+"_p50", q.name+" p50", "ms", report.Lower, ms(s.P50))
	}
	for i, q := range querySet {
		s := stats.Summarize(latencies[i])
		figs.Add(q.key+"_p99", q.name+" p99", "ms", report.Lower, ms(s.P99))
	}
	if srv.measured() {
		figs.Add("idle_after", "time to idle after the load", "s", report.Lower, idle.Seconds())
		if peak, err := srv.peakRSS(); err == nil {
			label := "server peak RSS while querying"
			if !peakFromQueries {
				label = "server peak RSS (load included)"
			}
			figs.Add("peak_rss", label, "MiB", report.Lower, mib(peak))
		}
	}
	for i, q := range querySet {
		figs.Add(q.key+"_series", q.name+": series returned", "series", report.Neither, float64(results[i].Series))
		if results[i].Series == 0 {
			notes = append(notes, fmt.Sprintf("query %s returned no series", q.key))
		}
	}
	if err := srv.stop(env); err != nil {
		notes = append(notes, "stop: "+err.Error())
	}
	return figs, notes, nil
}
