package api

import (
	"errors"
	"net/url"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/scrape"
)

// fakeTargets is a TargetsSource of fixed targets.
type fakeTargets struct {
	active, dropped map[string][]*scrape.Target
	droppedCounts   map[string]int
}

func (f fakeTargets) TargetsActive() map[string][]*scrape.Target  { return f.active }
func (f fakeTargets) TargetsDropped() map[string][]*scrape.Target { return f.dropped }
func (f fakeTargets) TargetsDroppedCounts() map[string]int        { return f.droppedCounts }
func (f fakeTargets) ScrapePools() []string {
	var ps []string
	for p := range f.active {
		ps = append(ps, p)
	}
	return ps
}

// fakeTargetMetadata is a target's metadata of its last scrape.
type fakeTargetMetadata []scrape.MetricMetadata

func (f fakeTargetMetadata) ListMetadata() []scrape.MetricMetadata { return f }
func (f fakeTargetMetadata) GetMetadata(name string) (scrape.MetricMetadata, bool) {
	for _, m := range f {
		if m.MetricFamily == name {
			return m, true
		}
	}
	return scrape.MetricMetadata{}, false
}
func (f fakeTargetMetadata) SizeMetadata() int   { return 0 }
func (f fakeTargetMetadata) LengthMetadata() int { return len(f) }

func scrapeConfig(job string) *config.ScrapeConfig {
	return &config.ScrapeConfig{JobName: job, ScrapeInterval: model.Duration(15 * time.Second), ScrapeTimeout: model.Duration(10 * time.Second), MetricsPath: "/metrics", Scheme: "http"}
}

// newTarget is a target as the scrape manager makes it: its labels after
// relabelling and those it was discovered with.
func newTarget(job, addr string, extra ...string) *scrape.Target {
	cfg := scrapeConfig(job)
	ls := labels.FromStrings(append([]string{
		model.AddressLabel, addr, model.SchemeLabel, "http", model.MetricsPathLabel, "/metrics",
		model.ScrapeIntervalLabel, "15s", model.ScrapeTimeoutLabel, "10s",
		model.JobLabel, job, model.InstanceLabel, addr,
	}, extra...)...)
	return scrape.NewTarget(ls, cfg, model.LabelSet{model.AddressLabel: model.LabelValue(addr), "__meta_kind": "static"}, model.LabelSet{model.JobLabel: model.LabelValue(job)})
}

func withTargets(o *Options) {
	self := newTarget("strata", "localhost:9201")
	self.Report(time.Unix(300, 0).UTC(), 12500*time.Microsecond, nil)
	self.SetMetadataStore(fakeTargetMetadata{
		{MetricFamily: "go_goroutines", Type: model.MetricTypeGauge, Help: "Number of goroutines that currently exist."},
		{MetricFamily: "strata_head_series", Type: model.MetricTypeGauge, Help: "Series in the head."},
	})
	node := newTarget("node", "10.0.0.7:9100", "team", "infra")
	node.Report(time.Unix(290, 0).UTC(), 3*time.Second, errors.New(`Get "http://10.0.0.7:9100/metrics": context deadline exceeded`))
	node.SetMetadataStore(fakeTargetMetadata{{MetricFamily: "node_load1", Type: model.MetricTypeGauge, Help: "1m load average."}})
	unscraped := newTarget("node", "10.0.0.8:9100")
	o.Targets = fakeTargets{
		active:        map[string][]*scrape.Target{"strata": {self}, "node": {node, unscraped}},
		dropped:       map[string][]*scrape.Target{"node": {scrape.NewTarget(labels.EmptyLabels(), scrapeConfig("node"), model.LabelSet{model.AddressLabel: "10.0.0.9:22"}, nil)}},
		droppedCounts: map[string]int{"node": 1, "strata": 0},
	}
	o.ExternalURL, _ = url.Parse("https://strata.example.com/")
	o.ListenAddress = "[::]:9201"
}

// targetsGoldenCases are the golden cases of the scrape endpoints.
func targetsGoldenCases() []goldenCase {
	return []goldenCase{
		{name: "targets", path: "/api/v1/targets", status: 200},
		{name: "targets_metadata", path: "/api/v1/targets/metadata", status: 200},
		{name: "scrape_pools_none", path: "/api/v1/scrape_pools", status: 200},
		{name: "targets_some", path: "/api/v1/targets", opts: withTargets, status: 200},
		{name: "targets_active", path: "/api/v1/targets", query: q("state", "Active"), opts: withTargets, status: 200},
		{name: "targets_dropped_pool", path: "/api/v1/targets", query: q("state", "dropped", "scrapePool", "node"), opts: withTargets, status: 200},
		{name: "targets_unknown_state", path: "/api/v1/targets", query: q("state", "gone"), opts: withTargets, status: 200},
		{name: "targets_pool", path: "/api/v1/targets", query: q("scrapePool", "strata"), opts: withTargets, status: 200},
		{name: "targets_metadata_all", path: "/api/v1/targets/metadata", opts: withTargets, status: 200},
		{name: "targets_metadata_metric", path: "/api/v1/targets/metadata", query: q("metric", "node_load1"), opts: withTargets, status: 200},
		{name: "targets_metadata_match", path: "/api/v1/targets/metadata", query: q("match_target", `{job="strata"}`, "limit", "1"), opts: withTargets, status: 200},
		{name: "targets_metadata_bad_match", path: "/api/v1/targets/metadata", query: q("match_target", `{job=`), opts: withTargets, status: 400},
		{name: "targets_metadata_bad_limit", path: "/api/v1/targets/metadata", query: q("limit", "x"), opts: withTargets, status: 400},
		{name: "scrape_pools", path: "/api/v1/scrape_pools", opts: withTargets, status: 200},
	}
}
