package rules

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	promrules "github.com/prometheus/prometheus/rules"
)

// The rule evaluation benchmark's load: 100k series scraped every 15 s
// for an hour (20 jobs of 100 instances, each with 5 handlers' request
// counters for two status codes and an 8-bucket latency histogram), and
// 500 recording rules and 200 alerting rules over them in 10 groups.
const (
	benchJobs      = 20
	benchInstances = 100
	benchHandlers  = 5
	benchStep      = 15 * time.Second
	benchSpan      = time.Hour
)

var benchBuckets = []string{"0.01", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "+Inf"}

// benchSeries returns the load's series with the value of sample i.
func benchSeries() (lsets []labels.Labels, value []func(i int) float64) {
	for j := range benchJobs {
		for in := range benchInstances {
			for h := range benchHandlers {
				base := labels.FromStrings("job", fmt.Sprintf("job%d", j), "instance", fmt.Sprintf("host%d:9100", in), "handler", fmt.Sprintf("/api/h%d", h))
				b := labels.NewBuilder(base)
				for c, code := range []string{"200", "500"} {
					b.Set(labels.MetricName, "http_requests_total").Set("code", code)
					lsets = append(lsets, b.Labels())
					rate := float64(10 + (j+in+h)%7)
					if c == 1 {
						rate /= 50
					}
					value = append(value, func(i int) float64 { return rate * float64(i) * 15 })
				}
				b.Del("code")
				for k, le := range benchBuckets {
					b.Set(labels.MetricName, "http_request_duration_seconds_bucket").Set("le", le)
					lsets = append(lsets, b.Labels())
					share := float64(k+1) / float64(len(benchBuckets))
					value = append(value, func(i int) float64 { return share * 12 * float64(i) * 15 })
				}
			}
		}
	}
	return lsets, value
}

// benchRuleFile writes the 500 recording and 200 alerting rules: per job,
// 25 recording rules (request rates by code, handler and instance,
// latency quantiles) and 10 alerting rules (error ratios and latency
// over thresholds), the jobs split over 10 groups.
func benchRuleFile(t testing.TB) string {
	var b strings.Builder
	b.WriteString("groups:\n")
	for g := range 10 {
		fmt.Fprintf(&b, "- name: g%d\n  interval: 15s\n  rules:\n", g)
		for j := g * benchJobs / 10; j < (g+1)*benchJobs/10; j++ {
			sel := fmt.Sprintf(`job="job%d"`, j)
			rec := func(name, expr string) { fmt.Fprintf(&b, "  - record: %s\n    expr: '%s'\n", name, expr) }
			rec("job:http_requests:rate5m", fmt.Sprintf(`sum by (job) (rate(http_requests_total{%s}[5m]))`, sel))
			rec("job_code:http_requests:rate5m", fmt.Sprintf(`sum by (job, code) (rate(http_requests_total{%s}[5m]))`, sel))
			rec("job_instance:http_requests:rate5m", fmt.Sprintf(`sum by (job, instance) (rate(http_requests_total{%s}[5m]))`, sel))
			rec("job_handler:http_requests:rate1m", fmt.Sprintf(`sum by (job, handler) (rate(http_requests_total{%s}[1m]))`, sel))
			rec("job:http_requests:increase1h", fmt.Sprintf(`sum by (job) (increase(http_requests_total{%s}[1h]))`, sel))
			for h := range benchHandlers {
				hs := fmt.Sprintf(`%s,handler="/api/h%d"`, sel, h)
				rec("job_handler_code:http_requests:rate5m", fmt.Sprintf(`sum by (job, handler, code) (rate(http_requests_total{%s}[5m]))`, hs))
				rec("job_handler:http_errors:ratio5m", fmt.Sprintf(`sum by (job, handler) (rate(http_requests_total{%s,code="500"}[5m])) / sum by (job, handler) (rate(http_requests_total{%s}[5m]))`, hs, hs))
			}
			for _, q := range []string{"0.5", "0.9", "0.99"} {
				rec("job:http_request_duration_seconds:p"+strings.TrimPrefix(q, "0."), fmt.Sprintf(`histogram_quantile(%s, sum by (job, le) (rate(http_request_duration_seconds_bucket{%s}[5m])))`, q, sel))
			}
			for h := range benchHandlers {
				rec("job_handler:http_request_duration_seconds:p99", fmt.Sprintf(`histogram_quantile(0.99, sum by (job, handler, le) (rate(http_request_duration_seconds_bucket{%s,handler="/api/h%d"}[5m])))`, sel, h))
			}
			rec("job:http_requests_per_instance:avg5m", fmt.Sprintf(`avg by (job) (sum by (job, instance) (rate(http_requests_total{%s}[5m])))`, sel))
			rec("job:http_instances:count", fmt.Sprintf(`count by (job) (count by (job, instance) (http_requests_total{%s}))`, sel))
			alert := func(name, expr, dur string) {
				fmt.Fprintf(&b, "  - alert: %s\n    expr: '%s'\n    for: %s\n    labels: {severity: page}\n    annotations: {summary: \"{{ $labels.job }} at {{ $value }}\"}\n", name, expr, dur)
			}
			for k, th := range []string{"0.001", "0.01", "0.05", "0.1", "0.5"} {
				alert(fmt.Sprintf("HighErrorRatio%d", k), fmt.Sprintf(`sum by (job, instance) (rate(http_requests_total{%s,code="500"}[5m])) / sum by (job, instance) (rate(http_requests_total{%s}[5m])) > %s`, sel, sel, th), "5m")
			}
			for k, th := range []string{"0.1", "0.25", "0.5", "1", "2"} {
				alert(fmt.Sprintf("HighLatency%d", k), fmt.Sprintf(`histogram_quantile(0.99, sum by (job, instance, le) (rate(http_request_duration_seconds_bucket{%s}[5m]))) > %s`, sel, th), "10m")
			}
		}
	}
	path := filepath.Join(t.TempDir(), "bench.rules.yml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// processCPU is the CPU time the process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkEvalRound evaluates every group of the load's 700 rules once
// per op, each op 15 s after the last, over the last half hour of the
// data: recorded samples and alert state go to the store, as they would
// in a server. store=strata is strata's store, appender and rollup
// engine; store=prometheus Prometheus' TSDB and engine. cpu-s/op is the
// process's CPU time per round (the collector's included).
//
//	go test ./internal/rules -run '^$' -bench BenchmarkEvalRound -benchtime 40x -count 6 | benchstat -col /store -
func BenchmarkEvalRound(b *testing.B) {
	lsets, values := benchSeries()
	rules := benchRuleFile(b)
	samples := int(benchSpan / benchStep)
	for _, store := range []string{"strata", "prometheus"} {
		b.Run("store="+store, func(b *testing.B) {
			var side *ruleSide
			if store == "strata" {
				side = newStrataSide(b, benchStep)
			} else {
				side = newPrometheusSide(b, benchStep)
			}
			for i := range samples {
				app := side.appendable.Appender(context.Background())
				for s, l := range lsets {
					if _, err := app.Append(0, l, int64(i)*benchStep.Milliseconds(), values[s](i)); err != nil {
						b.Fatal(err)
					}
				}
				if err := app.Commit(); err != nil {
					b.Fatal(err)
				}
			}
			if err := side.loadGroups(benchStep, labels.EmptyLabels(), []string{rules}, nil); err != nil {
				b.Fatal(err)
			}
			n := 0
			for _, g := range side.groups {
				n += len(g.Rules())
			}
			if n != 700 {
				b.Fatalf("%d rules, want 700", n)
			}
			// Evaluations start half-way into the data; 120 of them
			// reach its end.
			start := time.Unix(0, 0).Add(benchSpan / 2)
			i := 0
			b.ReportAllocs()
			cpu0 := processCPU(b)
			for b.Loop() {
				ts := start.Add(time.Duration(i%120) * benchStep)
				if i >= 120 {
					b.Fatal("more evaluations than the data has room for: use -benchtime 120x or less")
				}
				for _, g := range side.groups {
					g.Eval(context.Background(), ts)
				}
				i++
			}
			// The rollup reads series on every core: CPU, not the
			// time of a round, is what a server pays for it.
			b.ReportMetric((processCPU(b)-cpu0).Seconds()/float64(i), "cpu-s/op")
			for _, g := range side.groups {
				for _, r := range g.Rules() {
					if err := r.LastError(); err != nil {
						b.Fatalf("%s: %v", r.Name(), err)
					}
				}
			}
			var firing int
			for _, g := range side.groups {
				for _, r := range g.AlertingRules() {
					if r.State() == promrules.StateFiring || r.State() == promrules.StatePending {
						firing++
					}
				}
			}
			b.ReportMetric(float64(firing), "active-alert-rules")
		})
	}
}
