package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"

	"github.com/strata-db/strata/internal/bench/client"
	"github.com/strata-db/strata/internal/bench/report"
	"github.com/strata-db/strata/internal/bench/stats"
	"github.com/strata-db/strata/internal/bench/workload"
)

// RulesOptions configure the rules workload.
type RulesOptions struct {
	// Load is the history written before the measurement; it ends at
	// the time the load starts, and one sample per series follows every
	// interval from then on.
	Load LoadOptions
	// Warmup is how long the server runs on live data before the
	// measurement, Duration how long it is measured.
	Warmup, Duration time.Duration
}

// DefaultRulesOptions load an hour of 100,000 series (240 samples each at
// 15s, the window of the rules' longest range) and measure 20 evaluation
// rounds after 2 of warm-up.
func DefaultRulesOptions() RulesOptions {
	wo := workload.DefaultOptions()
	return RulesOptions{
		Load:     LoadOptions{Workload: wo, Protocol: workload.V1, SamplesPerSeries: 240},
		Warmup:   30 * time.Second,
		Duration: 5 * time.Minute,
	}
}

// QuickRulesOptions load ten minutes of 2,000 series and measure three
// rounds.
func QuickRulesOptions() RulesOptions {
	o := DefaultRulesOptions()
	o.Load.Workload.Series = 2000
	o.Load.Workload.SeriesPerRequest = 500
	o.Load.Workload.Senders = 2
	o.Load.SamplesPerSeries = 40
	o.Warmup = 15 * time.Second
	o.Duration = 45 * time.Second
	return o
}

// Rules measures rule evaluation: the server evaluates a fixed rule file
// (workload.RuleFile: 500 recording and 200 alerting rules in 10 groups)
// over a loaded history that live samples extend, and the workload reads
// the CPU the server uses per evaluation round and each group
// evaluation's duration from the server's own metrics.
//
// The server command names the files the workload writes: {config}, a
// Prometheus configuration file with the rule file in rule_files, for
// strata and Prometheus; {rules}, the rule file, for vmalert. A rule
// evaluator beside the store is launched by a script, with {addr2} as its
// address: its CPU and memory count with the store's (the whole process
// tree is measured), and its metrics are read from {addr2}/metrics.
type Rules struct {
	opts       RulesOptions
	configPath string
	rulesPath  string
}

// NewRules validates o and returns the workload.
func NewRules(o RulesOptions) (*Rules, error) {
	if err := o.Load.Validate(); err != nil {
		return nil, err
	}
	wo := o.Load.Workload
	switch {
	case wo.Labels < workload.RuleLabels:
		return nil, fmt.Errorf("the rules select region and cluster, which series carry from %d labels on (got %d)", workload.RuleLabels, wo.Labels)
	case wo.SamplesPerSeries != 1:
		return nil, errors.New("the rules workload sends one sample per series a request, as a scrape would")
	case wo.Churn != 0:
		return nil, errors.New("the rules workload has no churn")
	case o.Duration < time.Duration(wo.Interval)*time.Millisecond:
		return nil, errors.New("the measurement must last at least one interval")
	case o.Warmup < 0:
		return nil, errors.New("the warm-up must not be negative")
	}
	return &Rules{opts: o}, nil
}

func (w *Rules) Name() string { return "rules" }

func (w *Rules) interval() time.Duration {
	return time.Duration(w.opts.Load.Workload.Interval) * time.Millisecond
}

func (w *Rules) Params() []report.Param {
	ps := w.opts.Load.params()
	return append(ps,
		report.Param{Name: "rules", Value: fmt.Sprintf("%d recording, %d alerting, in %d groups at the sample interval", workload.RecordingRules, workload.AlertingRules, workload.RuleGroups)},
		report.Param{Name: "warm-up", Value: w.opts.Warmup.String()},
		report.Param{Name: "measured", Value: w.opts.Duration.String()},
	)
}

func (w *Rules) Chart() report.Chart {
	return report.Chart{Title: "Rule evaluation: CPU per round", Keys: []string{"cpu_per_round"}}
}

// Prepare writes the rule file and a configuration file naming it.
func (w *Rules) Prepare(_ context.Context, env *Env) error {
	w.rulesPath = filepath.Join(env.WorkDir, "rules.yml")
	w.configPath = filepath.Join(env.WorkDir, "prometheus.yml")
	if err := os.WriteFile(w.rulesPath, []byte(workload.RuleFile(w.interval())), 0o644); err != nil {
		return err
	}
	cfg := fmt.Sprintf("global:\n  evaluation_interval: %s\nrule_files:\n  - %s\n", model.Duration(w.interval()), strconv.Quote(w.rulesPath))
	if err := os.WriteFile(w.configPath, []byte(cfg), 0o644); err != nil {
		return err
	}
	if env.Vars == nil {
		env.Vars = map[string]string{}
	}
	env.Vars["rules"], env.Vars["config"] = w.rulesPath, w.configPath
	return nil
}

// pollEvery is how often the server's rule metrics are read: often
// enough to see every evaluation of a group at a 15s interval.
const pollEvery = time.Second

func (w *Rules) Run(ctx context.Context, env *Env, t Target) (report.Figures, []string, error) {
	if !t.Launched() {
		return nil, nil, errors.New("rules launches the server with its rule file: give --server-cmd")
	}
	if !strings.Contains(t.Command, "{config}") && !strings.Contains(t.Command, "{rules}") {
		return nil, nil, errors.New("the server command names neither {config} nor {rules}: the server would evaluate no rules")
	}
	srv, err := open(ctx, env, t)
	if err != nil {
		return nil, nil, err
	}
	defer env.removeRun(srv.dataDir)
	defer srv.kill()
	metricsURLs := []string{srv.queryBase + "/metrics"}
	if strings.Contains(t.Command, "{addr2}") {
		metricsURLs = append(metricsURLs, "http://"+srv.proc.Addr2+"/metrics")
	}

	ld, err := loadAt(ctx, env, srv, w.opts.Load, time.Now())
	if err != nil {
		return nil, nil, err
	}
	live, err := w.startLive(ctx, srv, ld)
	if err != nil {
		return nil, nil, err
	}
	defer live.stop()

	env.logf("rules: warming up for %v", w.opts.Warmup)
	if err := sleep(ctx, srv, w.opts.Warmup); err != nil {
		return nil, nil, err
	}
	first, err := readRuleMetrics(ctx, srv, metricsURLs)
	if err != nil {
		return nil, nil, err
	}
	if n := len(first.groups); n != workload.RuleGroups {
		return nil, nil, fmt.Errorf("the server reports %d rule groups, want %d: does its command load {config} or {rules}?", n, workload.RuleGroups)
	}
	env.logf("rules: measuring for %v", w.opts.Duration)
	cpu0, err := srv.cpu()
	if err != nil {
		return nil, nil, err
	}
	t0 := time.Now()
	var durations []float64
	prev := first
	for time.Since(t0) < w.opts.Duration {
		if err := sleep(ctx, srv, min(pollEvery, w.opts.Duration-time.Since(t0))); err != nil {
			return nil, nil, err
		}
		cur, err := readRuleMetrics(ctx, srv, metricsURLs)
		if err != nil {
			return nil, nil, err
		}
		durations = cur.evaluationsSince(prev, durations)
		prev = cur
	}
	cpu1, err := srv.cpu()
	if err != nil {
		return nil, nil, err
	}
	wall := time.Since(t0)
	t1 := time.Now()
	sent := live.stop()

	rounds := wall.Seconds() / w.interval().Seconds()
	var figs report.Figures
	figs.Add("cpu_per_round", "server CPU per evaluation round", "CPU s", report.Lower, (cpu1-cpu0).Seconds()/rounds)
	figs.Add("cpu_cores", "server CPU in use", "cores", report.Neither, (cpu1-cpu0).Seconds()/wall.Seconds())
	slices.Sort(durations)
	if len(durations) > 0 {
		figs.Add("group_p50", "group evaluation p50", "ms", report.Lower, 1000*stats.Percentile(durations, 50))
		figs.Add("group_p99", "group evaluation p99", "ms", report.Lower, 1000*stats.Percentile(durations, 99))
		figs.Add("group_max", "group evaluation max", "ms", report.Lower, 1000*durations[len(durations)-1])
	}
	figs.Add("evaluations", "group evaluations seen", "evaluations", report.Neither, float64(len(durations)))
	figs.Add("evaluations_due", "group evaluations due", "evaluations", report.Neither, float64(workload.RuleGroups)*rounds)
	figs.Add("missed", "missed group evaluations", "evaluations", report.Lower, prev.missed-first.missed)
	figs.Add("failures", "failed rule evaluations", "evaluations", report.Lower, prev.failures-first.failures)
	if peak, err := srv.peakRSS(); err == nil {
		figs.Add("peak_rss", "server peak RSS", "MiB", report.Lower, mib(peak))
	}
	if m, ok := srv.meanRSS(t0, t1); ok {
		figs.Add("mean_rss", "server RSS while measured", "MiB", report.Lower, mib(m))
	}
	var notes []string
	notes = append(notes, fmt.Sprintf("the CPU includes the ingest of one sample per series every %v (%d samples a round), the same for every server", w.interval(), w.opts.Load.Workload.Series))
	if sent.failed() > 0 {
		notes = append(notes, fmt.Sprintf("live samples: %d requests failed; %s", sent.failed(), strings.Join(sent.errorSummary(), "; ")))
	}
	// What the rules made, as a check that every server did the same
	// work: the recorded series and the firing alerts 40s back, where
	// every server shows its writes (VictoriaMetrics hides the last 30s),
	// or at the end of a measurement shorter than that.
	api := client.NewAPI(srv.queryBase, srv.http)
	at := time.Now().Add(-40 * time.Second)
	if at.Before(t0) {
		at = t1
	}
	if r, err := api.Query(ctx, `count(last_over_time({__name__=~"[a-z_]+:[a-z0-9_:]+"}[2m]))`, at); err == nil {
		figs.Add("recorded_series", "recorded series", "series", report.Neither, orZero(r.Value))
	} else {
		notes = append(notes, "count recorded series: "+err.Error())
	}
	// Pending and firing apart: when an alert's `for` began depends on
	// when the server first saw the load's newest samples.
	for _, state := range []string{"pending", "firing"} {
		if r, err := api.Query(ctx, `count(ALERTS{alertstate="`+state+`"})`, at); err == nil {
			figs.Add(state+"_alerts", state+" alerts", "alerts", report.Neither, orZero(r.Value))
		} else {
			notes = append(notes, "count "+state+" alerts: "+err.Error())
		}
	}
	return figs, notes, nil
}

// sleep waits for d, or until ctx ends or the server dies.
func sleep(ctx context.Context, srv *server, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-srv.gone():
		return srv.alive()
	}
}

// liveSender sends the rounds after a load, each when the wall clock
// reaches its timestamp.
type liveSender struct {
	cancel context.CancelFunc
	done   chan struct{}
	result tally
}

func (w *Rules) startLive(ctx context.Context, srv *server, ld *loaded) (*liveSender, error) {
	cw, err := client.NewWriter(srv.writeURL, ld.opts.Protocol, srv.http)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	l := &liveSender{cancel: cancel, done: make(chan struct{})}
	src := &pacedSource{encodeSource: newEncodeSource(ld.sched, ld.opts.Protocol, 1<<40), sched: ld.sched, ctx: ctx}
	// Start past the loaded rounds.
	for c := range src.q {
		src.q[c] = ld.opts.rounds() * int64(ld.sched.BatchesPerRound(c))
	}
	go func() {
		defer close(l.done)
		defer cw.Close()
		l.result, _, _ = send(ctx, srv, cw, src, newLimiter(ld.sched.Senders(), ld.sched), ld.sched.Senders(), time.Time{})
	}()
	return l, nil
}

// stop stops sending and returns what was sent.
func (l *liveSender) stop() tally {
	l.cancel()
	<-l.done
	return l.result
}

// pacedSource holds each round's requests back until the wall clock has
// reached the round's timestamp.
type pacedSource struct {
	*encodeSource
	sched *workload.Schedule
	ctx   context.Context
}

func (p *pacedSource) next(c int) (request, bool) {
	r, ok := p.encodeSource.next(c)
	if !ok {
		return r, false
	}
	wait := time.Until(time.UnixMilli(p.sched.Timestamp(r.round, 0)))
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-p.ctx.Done():
			return request{}, false
		}
	}
	return r, true
}

// The rule metrics of Prometheus' rule manager (strata and Prometheus)
// and of vmalert.
const (
	promLastEval = "prometheus_rule_group_last_evaluation_timestamp_seconds"
	promLastDur  = "prometheus_rule_group_last_duration_seconds"
	promMissed   = "prometheus_rule_group_iterations_missed_total"
	promFailures = "prometheus_rule_evaluation_failures_total"
	vmDuration   = "vmalert_iteration_duration_seconds"
	vmMissed     = "vmalert_iteration_missed_total"
	vmFailures   = "vmalert_execution_errors_total"
)

// ruleMetrics is one reading of a server's rule metrics.
type ruleMetrics struct {
	groups           map[string]groupReading
	missed, failures float64
}

// groupReading is what the metrics say of a group's evaluations:
// Prometheus gives the last one's time and duration, vmalert a summary's
// count and sum.
type groupReading struct {
	lastEval, lastDuration float64
	count, sum             float64
	summary                bool
}

// evaluationsSince appends the durations of the evaluations between prev
// and m to dst, in seconds.
func (m ruleMetrics) evaluationsSince(prev ruleMetrics, dst []float64) []float64 {
	for name, g := range m.groups {
		p := prev.groups[name]
		switch {
		case g.summary && g.count > p.count:
			mean := (g.sum - p.sum) / (g.count - p.count)
			for range int(g.count - p.count) {
				dst = append(dst, mean)
			}
		case !g.summary && g.lastEval > p.lastEval:
			dst = append(dst, g.lastDuration)
		}
	}
	return dst
}

// readRuleMetrics reads and merges the rule metrics at urls.
func readRuleMetrics(ctx context.Context, srv *server, urls []string) (ruleMetrics, error) {
	m := ruleMetrics{groups: map[string]groupReading{}}
	for _, u := range urls {
		fams, err := client.Metrics(ctx, srv.http, u)
		if err != nil {
			if err := srv.alive(); err != nil {
				return m, err
			}
			return m, fmt.Errorf("read rule metrics: %w", err)
		}
		m.add(fams)
	}
	return m, nil
}

func (m *ruleMetrics) add(fams map[string]*dto.MetricFamily) {
	each := func(name string, f func(*dto.Metric, float64)) {
		fam := fams[name]
		if fam == nil {
			return
		}
		for _, mt := range fam.Metric {
			var v float64
			switch {
			case mt.Counter != nil:
				v = mt.Counter.GetValue()
			case mt.Gauge != nil:
				v = mt.Gauge.GetValue()
			case mt.Untyped != nil:
				v = mt.Untyped.GetValue()
			}
			f(mt, v)
		}
	}
	group := func(mt *dto.Metric) string {
		for _, l := range mt.Label {
			switch l.GetName() {
			case "rule_group": // file;name
				_, name, _ := strings.Cut(l.GetValue(), ";")
				return name
			case "group":
				return l.GetValue()
			}
		}
		return ""
	}
	update := func(mt *dto.Metric, f func(*groupReading)) {
		name := group(mt)
		if name == "" {
			return
		}
		g := m.groups[name]
		f(&g)
		m.groups[name] = g
	}
	each(promLastEval, func(mt *dto.Metric, v float64) { update(mt, func(g *groupReading) { g.lastEval = v }) })
	each(promLastDur, func(mt *dto.Metric, v float64) { update(mt, func(g *groupReading) { g.lastDuration = v }) })
	each(promMissed, func(_ *dto.Metric, v float64) { m.missed += v })
	each(promFailures, func(_ *dto.Metric, v float64) { m.failures += v })
	each(vmMissed, func(_ *dto.Metric, v float64) { m.missed += v })
	each(vmFailures, func(_ *dto.Metric, v float64) { m.failures += v })
	// vmalert writes its summaries without TYPE lines: _sum and _count
	// are families of their own.
	each(vmDuration+"_sum", func(mt *dto.Metric, v float64) {
		update(mt, func(g *groupReading) { g.sum, g.summary = v, true })
	})
	each(vmDuration+"_count", func(mt *dto.Metric, v float64) {
		update(mt, func(g *groupReading) { g.count, g.summary = v, true })
	})
	if fam := fams[vmDuration]; fam != nil {
		for _, mt := range fam.Metric {
			if s := mt.Summary; s != nil {
				update(mt, func(g *groupReading) { g.sum, g.count, g.summary = s.GetSampleSum(), float64(s.GetSampleCount()), true })
			}
		}
	}
}
