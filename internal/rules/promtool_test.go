package rules

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	promrules "github.com/prometheus/prometheus/rules"
	promstorage "github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/util/teststorage"
	"go.yaml.in/yaml/v2"

	"github.com/strata-db/strata/internal/db"
	"github.com/strata-db/strata/internal/promstore"
	"github.com/strata-db/strata/internal/rollup"
	"github.com/strata-db/strata/internal/vfs/crashfs"
)

// unitTestFile is the part of a `promtool test rules` file that says what
// to load and evaluate: the series, the rule files, and the times at
// which the tests look at alerts and expressions.
type unitTestFile struct {
	RuleFiles          []string       `yaml:"rule_files"`
	EvaluationInterval model.Duration `yaml:"evaluation_interval"`
	GroupEvalOrder     []string       `yaml:"group_eval_order"`
	Tests              []struct {
		Name           string            `yaml:"name"`
		Interval       model.Duration    `yaml:"interval"`
		ExternalLabels map[string]string `yaml:"external_labels"`
		InputSeries    []struct {
			Series string `yaml:"series"`
			Values string `yaml:"values"`
		} `yaml:"input_series"`
		AlertRuleTests []struct {
			EvalTime model.Duration `yaml:"eval_time"`
		} `yaml:"alert_rule_test"`
		PromqlExprTests []struct {
			Expr     string         `yaml:"expr"`
			EvalTime model.Duration `yaml:"eval_time"`
		} `yaml:"promql_expr_test"`
	} `yaml:"tests"`
}

// promtoolTestdata is Prometheus' cmd/promtool/testdata in the module
// cache, where `go build` put it.
func promtoolTestdata(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/prometheus/prometheus").Output()
	if err != nil {
		t.Skipf("Prometheus' module is not in the module cache: %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "cmd", "promtool", "testdata")
}

// TestPromtoolFilesAgainstPrometheus evaluates the rule unit test files
// of promtool's own tests with Prometheus' rule manager twice, over
// strata's store and query path (the rollup engine) and over Prometheus'
// TSDB and engine, as `promtool test rules` would: the test's series
// loaded, each rule group evaluated at every evaluation interval up to
// the last time a test looks at. At every evaluation the alerts (labels,
// state, active since, value) must be the same; at the end, every series
// in the two stores (the input, the recorded series, ALERTS and
// ALERTS_FOR_STATE, stale markers) must hold the same samples, and each
// test expression must answer the same.
func TestPromtoolFilesAgainstPrometheus(t *testing.T) {
	dir := promtoolTestdata(t)
	files, err := filepath.Glob(filepath.Join(dir, "*.yml"))
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var utf unitTestFile
		if yaml.Unmarshal(b, &utf) != nil || len(utf.Tests) == 0 || len(utf.RuleFiles) == 0 {
			continue // not a rule unit test file
		}
		if filepath.Base(file) == "features.yml" {
			continue // needs PromQL features promtool turns on by flag
		}
		var ruleFiles []string
		for _, rf := range utf.RuleFiles {
			ruleFiles = append(ruleFiles, filepath.Join(dir, rf))
		}
		for i, tc := range utf.Tests {
			name := fmt.Sprintf("%s/%d", filepath.Base(file), i)
			t.Run(name, func(t *testing.T) {
				interval := time.Duration(utf.EvaluationInterval)
				if interval == 0 {
					interval = time.Minute
				}
				seriesInterval := time.Duration(tc.Interval)
				if seriesInterval == 0 {
					seriesInterval = interval
				}
				var maxt time.Duration
				for _, a := range tc.AlertRuleTests {
					maxt = max(maxt, time.Duration(a.EvalTime))
				}
				var exprs []string
				var exprTimes []time.Duration
				for _, e := range tc.PromqlExprTests {
					maxt = max(maxt, time.Duration(e.EvalTime))
					exprs, exprTimes = append(exprs, e.Expr), append(exprTimes, time.Duration(e.EvalTime))
				}
				ext := labels.FromMap(tc.ExternalLabels)
				p := parser.NewParser(parser.Options{})
				var series []loadedSeries
				for _, s := range tc.InputSeries {
					lset, vals, err := p.ParseSeriesDesc(s.Series + " " + s.Values)
					if err != nil {
						t.Skipf("input series %q: %v (a file promtool refuses)", s.Series, err)
					}
					series = append(series, loadedSeries{lset, vals})
				}
				sides := []*ruleSide{newStrataSide(t, interval), newPrometheusSide(t, interval)}
				for _, s := range sides {
					if err := s.loadGroups(interval, ext, ruleFiles, utf.GroupEvalOrder); err != nil {
						t.Skipf("rule files: %v (a file promtool refuses)", err)
					}
				}
				// As promtool, the series are loaded as the evaluations
				// reach them.
				loaded := time.Duration(-1)
				// (Durations end in 2262, where long-period.yml's
				// evaluations do: ts+interval may not be computed.)
				for ts := time.Duration(0); ; ts += interval {
					for _, s := range sides {
						s.load(t, series, seriesInterval, loaded, ts)
					}
					loaded = ts
					at := time.Unix(0, 0).UTC().Add(ts)
					strata, prom := sides[0].eval(at), sides[1].eval(at)
					if strata != prom {
						t.Fatalf("alerts after evaluating at %v differ:\nstrata:\n%s\nPrometheus:\n%s", ts, strata, prom)
					}
					if ts > maxt-interval {
						break
					}
				}
				for _, s := range sides {
					s.load(t, series, seriesInterval, loaded, math.MaxInt64)
				}
				for i, e := range exprs {
					strata, prom := sides[0].query(e, exprTimes[i]), sides[1].query(e, exprTimes[i])
					if strata != prom {
						t.Errorf("%s at %v: strata answers\n%s\nPrometheus\n%s", e, exprTimes[i], strata, prom)
					}
				}
				strata, prom := sides[0].dump(t), sides[1].dump(t)
				if strata != prom {
					t.Errorf("the stores differ:\nstrata:\n%s\nPrometheus:\n%s", strata, prom)
				}
				ran++
			})
		}
	}
	if ran < 10 {
		t.Errorf("%d tests of promtool's files ran, want 10 at least: were they moved?", ran)
	}
}

type loadedSeries struct {
	lset labels.Labels
	vals []parser.SequenceValue
}

// ruleSide is a store with an engine over it and a rule manager's groups
// evaluating into it.
type ruleSide struct {
	appendable promstorage.Appendable
	queryable  promstorage.Queryable
	engine     promql.QueryEngine
	groups     []*promrules.Group
	manager    *promrules.Manager
}

// engineOpts are promtool's for rule unit tests, but for delayed name
// removal, which strata's server leaves off by default, as Prometheus
// does, and with which the rollup engine steps aside.
func engineOpts(interval time.Duration) promql.EngineOpts {
	return promql.EngineOpts{
		MaxSamples:               50000000,
		Timeout:                  100 * time.Second,
		NoStepSubqueryIntervalFn: func(int64) int64 { return interval.Milliseconds() },
		EnableAtModifier:         true,
		EnableNegativeOffset:     true,
	}
}

func newStrataSide(t testing.TB, interval time.Duration) *ruleSide {
	opts := db.DefaultOptions()
	opts.Dir = "data"
	opts.FS = crashfs.New()
	opts.CompactionInterval = 0 // everything stays in the head
	opts.RetentionTime = 0
	store := db.Open(opts)
	if err := store.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	eo := engineOpts(interval)
	engine := promql.NewEngine(eo)
	return &ruleSide{
		appendable: promstore.Appendable(store),
		queryable:  store,
		engine: rollup.New(rollup.Options{
			Engine: engine, Parser: parser.NewParser(parser.Options{}), MaxSamples: eo.MaxSamples,
			DelayedNameRemoval: eo.EnableDelayedNameRemoval, LookbackDelta: 5 * time.Minute,
		}),
	}
}

func newPrometheusSide(t testing.TB, interval time.Duration) *ruleSide {
	s := teststorage.New(t)
	return &ruleSide{appendable: s, queryable: s, engine: promql.NewEngine(engineOpts(interval))}
}

// load appends the samples of series in (after, till].
func (s *ruleSide) load(t *testing.T, series []loadedSeries, interval, after, till time.Duration) {
	t.Helper()
	app := s.appendable.Appender(context.Background())
	for _, ls := range series {
		for i, v := range ls.vals {
			at := time.Duration(i) * interval
			if v.Omitted || at <= after || at > till {
				continue
			}
			ts := at.Milliseconds()
			var err error
			if v.Histogram != nil {
				_, err = app.AppendHistogram(0, ls.lset, ts, nil, v.Histogram)
			} else {
				_, err = app.Append(0, ls.lset, ts, v.Value)
			}
			if err != nil {
				t.Fatalf("load %s at %d: %v", ls.lset, ts, err)
			}
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
}

func (s *ruleSide) loadGroups(interval time.Duration, ext labels.Labels, files, order []string) error {
	s.manager = promrules.NewManager(&promrules.ManagerOptions{
		Appendable:      s.appendable,
		Queryable:       s.queryable,
		QueryFunc:       promrules.EngineQueryFunc(s.engine, s.queryable),
		NotifyFunc:      func(context.Context, string, ...*promrules.Alert) {},
		Context:         context.Background(),
		Logger:          slog.New(slog.DiscardHandler),
		OutageTolerance: time.Hour,
		ForGracePeriod:  10 * time.Minute,
	})
	groups, errs := s.manager.LoadGroups(interval, ext, "", nil, false, files...)
	if len(errs) > 0 {
		return errs[0]
	}
	for _, g := range groups {
		s.groups = append(s.groups, g)
	}
	// promtool's order: group_eval_order's, then the rest by name.
	rank := func(g *promrules.Group) int {
		if i := slices.Index(order, g.Name()); i >= 0 {
			return i
		}
		return len(order)
	}
	slices.SortFunc(s.groups, func(a, b *promrules.Group) int {
		if d := rank(a) - rank(b); d != 0 {
			return d
		}
		return strings.Compare(promrules.GroupKey(a.File(), a.Name()), promrules.GroupKey(b.File(), b.Name()))
	})
	return nil
}

// eval evaluates every group at ts and describes the alerts then.
func (s *ruleSide) eval(ts time.Time) string {
	var out []string
	for _, g := range s.groups {
		g.Eval(context.Background(), ts)
		for _, r := range g.AlertingRules() {
			for _, a := range r.ActiveAlerts() {
				out = append(out, fmt.Sprintf("%s %s %s since %v value %s health %s err %v",
					g.Name(), a.Labels, a.State, a.ActiveAt.Sub(time.Unix(0, 0)), fmtFloat(a.Value), r.Health(), r.LastError()))
			}
		}
		for _, r := range g.Rules() {
			if r.LastError() != nil {
				out = append(out, fmt.Sprintf("%s %s: %v", g.Name(), r.Name(), r.LastError()))
			}
		}
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

func (s *ruleSide) query(expr string, at time.Duration) string {
	q, err := s.engine.NewInstantQuery(context.Background(), s.queryable, nil, expr, time.Unix(0, 0).Add(at))
	if err != nil {
		return "error: " + err.Error()
	}
	defer q.Close()
	res := q.Exec(context.Background())
	if res.Err != nil {
		return "error: " + res.Err.Error()
	}
	return res.Value.String()
}

// dump lists every sample of the store, series by series.
func (s *ruleSide) dump(t *testing.T) string {
	t.Helper()
	q, err := s.queryable.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	set := q.Select(context.Background(), true, nil, labels.MustNewMatcher(labels.MatchRegexp, labels.MetricName, ".+"))
	var b strings.Builder
	var it chunkenc.Iterator
	for set.Next() {
		series := set.At()
		b.WriteString(series.Labels().String())
		it = series.Iterator(it)
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			switch vt {
			case chunkenc.ValFloat:
				ts, v := it.At()
				fmt.Fprintf(&b, " %d:%s", ts, fmtFloat(v))
			case chunkenc.ValHistogram, chunkenc.ValFloatHistogram:
				var fh *histogram.FloatHistogram
				ts, fh := it.AtFloatHistogram(fh)
				fmt.Fprintf(&b, " %d:%s", ts, fh.String())
			}
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		b.WriteByte('\n')
	}
	if err := set.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// fmtFloat writes v so that NaNs of different bits (stale markers) differ.
func fmtFloat(v float64) string {
	if math.IsNaN(v) {
		return "NaN:" + strconv.FormatUint(math.Float64bits(v), 16)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
