package run

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/common/model"

	"github.com/strata-db/strata/internal/bench/client"
	"github.com/strata-db/strata/internal/bench/report"
	"github.com/strata-db/strata/internal/bench/stats"
	"github.com/strata-db/strata/internal/bench/workload"
)

// ScrapeOptions configure the scrape workload.
type ScrapeOptions struct {
	// Targets is how many targets the harness serves, each with
	// SeriesPerTarget series (rounded up to whole node catalogs of
	// workload.SeriesPerInstance), scraped every Interval.
	Targets         int
	SeriesPerTarget int
	Interval        time.Duration
	// Warmup is how long the server scrapes before it is measured,
	// Duration how long it is measured.
	Warmup, Duration time.Duration
	Seed             uint64
}

// DefaultScrapeOptions are 1,000 targets of 1,000 series at 15s, measured
// for 5 minutes after a minute (targets are discovered and spread over
// the interval first).
func DefaultScrapeOptions() ScrapeOptions {
	return ScrapeOptions{Targets: 1000, SeriesPerTarget: 1000, Interval: 15 * time.Second, Warmup: time.Minute, Duration: 5 * time.Minute, Seed: 1}
}

// QuickScrapeOptions are 20 targets of 200 series at 2s.
func QuickScrapeOptions() ScrapeOptions {
	return ScrapeOptions{Targets: 20, SeriesPerTarget: 200, Interval: 2 * time.Second, Warmup: 10 * time.Second, Duration: 10 * time.Second, Seed: 1}
}

// Scrape measures scraping: the harness serves the targets on loopback,
// node-exporter-like text exposition whose counters move at every
// scrape, and the server scrapes them with the scrape configuration the
// harness writes ({config}: one job, the targets behind relabelling, as
// for a blackbox exporter, so that one listener serves them all). The
// figures are the server's CPU per scraped sample, its memory, the
// scrapes it missed and the scrape durations it recorded.
type Scrape struct {
	opts       ScrapeOptions
	shards     int
	configPath string
	targets    *targetServer
}

// NewScrape validates o and returns the workload.
func NewScrape(o ScrapeOptions) (*Scrape, error) {
	switch {
	case o.Targets < 1:
		return nil, errors.New("targets must be at least 1")
	case o.SeriesPerTarget < 1:
		return nil, errors.New("series per target must be at least 1")
	case o.Interval < 100*time.Millisecond:
		return nil, errors.New("the scrape interval must be at least 100ms")
	case o.Duration < o.Interval:
		return nil, errors.New("the measurement must last at least one interval")
	case o.Warmup < 0:
		return nil, errors.New("the warm-up must not be negative")
	}
	return &Scrape{opts: o, shards: workload.TargetShards(o.SeriesPerTarget)}, nil
}

func (w *Scrape) Name() string { return "scrape" }

func (w *Scrape) series() int { return w.shards * workload.SeriesPerInstance() }

func (w *Scrape) Params() []report.Param {
	return []report.Param{
		{Name: "targets", Value: strconv.Itoa(w.opts.Targets)},
		{Name: "series per target", Value: strconv.Itoa(w.series())},
		{Name: "series", Value: strconv.Itoa(w.opts.Targets * w.series())},
		{Name: "scrape interval", Value: w.opts.Interval.String()},
		{Name: "warm-up", Value: w.opts.Warmup.String()},
		{Name: "measured", Value: w.opts.Duration.String()},
		{Name: "seed", Value: strconv.FormatUint(w.opts.Seed, 10)},
	}
}

func (w *Scrape) Chart() report.Chart {
	return report.Chart{Title: "Scraping: CPU per million samples", Keys: []string{"cpu_per_million"}}
}

// Prepare starts serving the targets and writes the configuration file.
func (w *Scrape) Prepare(_ context.Context, env *Env) error {
	ts, err := startTargets(w.opts.Targets, w.shards, w.opts.Seed)
	if err != nil {
		return err
	}
	w.targets = ts
	env.cleanups = append(env.cleanups, ts.close)
	names := make([]string, w.opts.Targets)
	for i := range names {
		names[i] = strconv.Quote("t" + strconv.Itoa(i))
	}
	timeout := min(10*time.Second, w.opts.Interval*9/10)
	cfg := fmt.Sprintf(`global:
  scrape_interval: %s
  scrape_timeout: %s
scrape_configs:
  - job_name: bench
    static_configs:
      - targets: [%s]
    relabel_configs:
      - {source_labels: [__address__], target_label: __param_target}
      - {source_labels: [__param_target], target_label: instance}
      - {target_label: __address__, replacement: %q}
`, model.Duration(w.opts.Interval), model.Duration(timeout), strings.Join(names, ", "), ts.addr)
	w.configPath = filepath.Join(env.WorkDir, "scrape.yml")
	if err := os.WriteFile(w.configPath, []byte(cfg), 0o644); err != nil {
		return err
	}
	if env.Vars == nil {
		env.Vars = map[string]string{}
	}
	env.Vars["config"] = w.configPath
	return nil
}

func (w *Scrape) Run(ctx context.Context, env *Env, t Target) (report.Figures, []string, error) {
	if !t.Launched() {
		return nil, nil, errors.New("scrape launches the server with its scrape configuration: give --server-cmd")
	}
	if !strings.Contains(t.Command, "{config}") {
		return nil, nil, errors.New("the server command does not name {config}: the server would scrape nothing")
	}
	w.targets.reset()
	srv, err := open(ctx, env, t)
	if err != nil {
		return nil, nil, err
	}
	defer env.removeRun(srv.dataDir)
	defer srv.kill()
	env.logf("scrape: %d targets of %d series; warming up for %v", w.opts.Targets, w.series(), w.opts.Warmup)
	if err := sleep(ctx, srv, w.opts.Warmup); err != nil {
		return nil, nil, err
	}
	if w.targets.scrapes.Load() == 0 {
		return nil, nil, fmt.Errorf("no target was scraped in the %v of warm-up", w.opts.Warmup)
	}
	env.logf("scrape: measuring for %v", w.opts.Duration)
	cpu0, err := srv.cpu()
	if err != nil {
		return nil, nil, err
	}
	scrapes0 := w.targets.scrapes.Load()
	t0 := time.Now()
	if err := sleep(ctx, srv, w.opts.Duration); err != nil {
		return nil, nil, err
	}
	cpu1, err := srv.cpu()
	if err != nil {
		return nil, nil, err
	}
	scrapes := w.targets.scrapes.Load() - scrapes0
	t1 := time.Now()
	wall := t1.Sub(t0)

	samples := float64(scrapes) * float64(w.series())
	due := float64(w.opts.Targets) * wall.Seconds() / w.opts.Interval.Seconds()
	var figs report.Figures
	if samples > 0 {
		figs.Add("cpu_per_million", "server CPU per million scraped samples", "CPU s", report.Lower, (cpu1-cpu0).Seconds()/samples*1e6)
	}
	figs.Add("cpu_cores", "server CPU in use", "cores", report.Neither, (cpu1-cpu0).Seconds()/wall.Seconds())
	figs.Add("samples_per_second", "samples scraped per second", "samples/s", report.Neither, samples/wall.Seconds())
	figs.Add("scrapes", "scrapes served", "scrapes", report.Neither, float64(scrapes))
	figs.Add("scrapes_due", "scrapes due", "scrapes", report.Neither, due)
	if peak, err := srv.peakRSS(); err == nil {
		figs.Add("peak_rss", "server peak RSS", "MiB", report.Lower, mib(peak))
	}
	if m, ok := srv.meanRSS(t0, t1); ok {
		figs.Add("mean_rss", "server RSS while measured", "MiB", report.Lower, mib(m))
	}
	var notes []string
	// The scrape durations the server recorded over the measurement
	// (VictoriaMetrics shows its writes of the last 30s later).
	api := client.NewAPI(srv.queryBase, srv.http)
	window := strconv.FormatInt(wall.Milliseconds(), 10) + "ms"
	durs, err := api.QueryValues(ctx, `scrape_duration_seconds{job="bench"}[`+window+`]`, t1)
	switch {
	case err != nil:
		notes = append(notes, "scrape durations: "+err.Error())
	case len(durs) == 0:
		notes = append(notes, "the server recorded no scrape_duration_seconds in the measurement")
	default:
		slices.Sort(durs)
		figs.Add("scrape_p50", "scrape duration p50", "ms", report.Lower, 1000*stats.Percentile(durs, 50))
		figs.Add("scrape_p99", "scrape duration p99", "ms", report.Lower, 1000*stats.Percentile(durs, 99))
	}
	// The series stored, 40s back where every server shows them, or at
	// the end of a measurement shorter than that.
	at := t1.Add(-40 * time.Second)
	if at.Before(t0) {
		at = t1
	}
	if r, err := api.Query(ctx, `count({job="bench",__name__=~"node_.+|http_request_duration_seconds_.+"})`, at); err == nil {
		figs.Add("series_stored", "scraped series stored", "series", report.Neither, orZero(r.Value))
	} else {
		notes = append(notes, "count stored series: "+err.Error())
	}
	return figs, notes, nil
}

// targetServer serves every target of the scrape workload on one
// loopback listener: the target is the "target" URL parameter the
// relabelling sets, t0, t1, ..., and each target's counters move with
// the number of times it was scraped.
type targetServer struct {
	addr    string
	srv     *http.Server
	seed    uint64
	shards  int
	counts  []atomic.Int64
	scrapes atomic.Int64
	bufs    sync.Pool
}

func startTargets(n, shards int, seed uint64) (*targetServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for the targets: %w", err)
	}
	ts := &targetServer{addr: ln.Addr().String(), seed: seed, shards: shards, counts: make([]atomic.Int64, n)}
	ts.bufs.New = func() any { return new([]byte) }
	ts.srv = &http.Server{Handler: http.HandlerFunc(ts.serve), ReadHeaderTimeout: 10 * time.Second}
	go ts.srv.Serve(ln)
	return ts, nil
}

func (ts *targetServer) serve(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("target")
	i, err := strconv.Atoi(strings.TrimPrefix(name, "t"))
	if !strings.HasPrefix(name, "t") || err != nil || i < 0 || i >= len(ts.counts) {
		http.Error(w, "no target "+strconv.Quote(name), http.StatusNotFound)
		return
	}
	k := ts.counts[i].Add(1)
	buf := ts.bufs.Get().(*[]byte)
	*buf = workload.AppendExposition((*buf)[:0], ts.seed, uint64(i), ts.shards, k)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(*buf)))
	if _, err := w.Write(*buf); err == nil {
		ts.scrapes.Add(1)
	}
	ts.bufs.Put(buf)
}

// reset starts every target's counters again, for the next server.
func (ts *targetServer) reset() {
	for i := range ts.counts {
		ts.counts[i].Store(0)
	}
	ts.scrapes.Store(0)
}

func (ts *targetServer) close() { ts.srv.Close() }
