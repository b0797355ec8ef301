package scrape

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/discovery"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql"
	promscrape "github.com/prometheus/prometheus/scrape"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"google.golang.org/protobuf/proto"

	"github.com/strata-db/strata/internal/db"
	"github.com/strata-db/strata/internal/vfs/crashfs"
)

func openStore(t *testing.T) *db.DB {
	t.Helper()
	opts := db.DefaultOptions()
	opts.Dir = "data"
	opts.FS = crashfs.New()
	opts.CompactionInterval = 0
	opts.RetentionTime = 0
	store := db.Open(opts)
	if err := store.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

// newScraper runs a scraper into store with conf, applying target
// updates at once.
func newScraper(t *testing.T, store *db.DB, conf string) *Scraper {
	t.Helper()
	s, err := New(Options{Appendable: store, DiscoveryInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(conf, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ApplyConfig(c); err != nil {
		t.Fatal(err)
	}
	s.Run()
	t.Cleanup(s.Stop)
	return s
}

// exposition serves the text format, a counter moving at each scrape.
func exposition(t *testing.T) *httptest.Server {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintf(w, "# HELP app_requests_total Requests served.\n# TYPE app_requests_total counter\napp_requests_total{code=\"200\"} %d\napp_requests_total{code=\"500\"} 1\n# TYPE app_temperature_celsius gauge\napp_temperature_celsius 21.5\n", n.Add(1))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func host(srv *httptest.Server) string {
	u, _ := url.Parse(srv.URL)
	return u.Host
}

// last returns the newest sample of the one series matching sel.
func last(t *testing.T, store *db.DB, sel ...string) (float64, bool) {
	t.Helper()
	ps := samples(t, store, sel...)
	if len(ps) == 0 {
		return 0, false
	}
	return ps[len(ps)-1].F, true
}

// waitFor polls cond until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// target returns the active target of pool.
func target(t *testing.T, s *Scraper, pool string) *promscrape.Target {
	t.Helper()
	ts := s.TargetsActive()[pool]
	if len(ts) != 1 {
		t.Fatalf("pool %s: %d active targets, want 1", pool, len(ts))
	}
	return ts[0]
}

// TestScrape scrapes a target into the store: its samples with the
// target's labels, metric relabelling, the report series, and the
// metadata; and targets that fail in every way a target can, each with
// its reason and nothing else harmed.
func TestScrape(t *testing.T) {
	store := openStore(t)
	ok := exposition(t)
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	defer failing.Close()
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, "app_up{ 1\n")
	}))
	defer garbage.Close()
	hangs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer hangs.Close()
	conf := fmt.Sprintf(`global:
  scrape_interval: 200ms
  scrape_timeout: 150ms
scrape_configs:
  - job_name: app
    static_configs: [{targets: [%q], labels: {team: web}}]
    metric_relabel_configs:
      - {source_labels: [code], regex: "500", action: drop}
  - job_name: failing
    static_configs: [{targets: [%q]}]
  - job_name: garbage
    static_configs: [{targets: [%q]}]
  - job_name: hangs
    static_configs: [{targets: [%q]}]
  - job_name: toobig
    body_size_limit: 20B
    static_configs: [{targets: [%q]}]
  - job_name: limited
    sample_limit: 1
    static_configs: [{targets: [%q]}]
  - job_name: labels
    label_limit: 3
    static_configs: [{targets: [%q]}]
`, host(ok), host(failing), host(garbage), host(hangs), host(ok), host(ok), host(ok))
	s := newScraper(t, store, conf)

	waitFor(t, "two scrapes of app", func() bool {
		v, ok := last(t, store, "__name__", "app_requests_total", "job", "app", "code", "200")
		return ok && v >= 2
	})
	inst := host(ok)
	if _, found := last(t, store, "__name__", "app_requests_total", "job", "app", "instance", inst, "team", "web", "code", "200"); !found {
		t.Error("the scraped series lacks the target's labels")
	}
	if _, found := last(t, store, "__name__", "app_requests_total", "job", "app", "code", "500"); found {
		t.Error("metric_relabel_configs did not drop code=500")
	}
	for name, want := range map[string]float64{"up": 1, "scrape_samples_scraped": 3, "scrape_samples_post_metric_relabeling": 2} {
		if v, _ := last(t, store, "__name__", name, "job", "app"); v != want {
			t.Errorf("%s{job=app} = %v, want %v", name, v, want)
		}
	}
	if md := store.Metadata("app_requests_total"); md["app_requests_total"].Type != "counter" || md["app_requests_total"].Help != "Requests served." {
		t.Errorf("metadata of app_requests_total: %+v", md)
	}

	for pool, want := range map[string]string{
		"failing": "500 Internal Server Error",
		"garbage": "expected",
		"hangs":   "context deadline exceeded",
		"toobig":  "body size limit",
		"limited": "sample limit exceeded",
		"labels":  "label_limit exceeded",
	} {
		waitFor(t, pool+" to fail", func() bool {
			err := target(t, s, pool).LastError()
			return err != nil && strings.Contains(err.Error(), want)
		})
		if h := target(t, s, pool).Health(); h != promscrape.HealthBad {
			t.Errorf("%s: health %s, want down", pool, h)
		}
		waitFor(t, "up{job="+pool+"} = 0", func() bool {
			v, found := last(t, store, "__name__", "up", "job", pool)
			return found && v == 0
		})
	}
	if _, found := last(t, store, "__name__", "app_temperature_celsius", "job", "limited"); found {
		t.Error("a scrape over sample_limit stored samples")
	}
	if v, _ := last(t, store, "__name__", "up", "job", "app"); v != 1 {
		t.Errorf("up{job=app} = %v after the other targets failed", v)
	}
}

// TestScrapeStaleness discovers targets from a file and changes it: a
// target that goes has its series and up marked stale, as Prometheus
// marks them; a reload that drops the job stops its scrapes.
func TestScrapeStaleness(t *testing.T) {
	store := openStore(t)
	a, b := exposition(t), exposition(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "targets.json")
	writeTargets := func(hosts ...string) {
		t.Helper()
		q := make([]string, len(hosts))
		for i, h := range hosts {
			q[i] = fmt.Sprintf("%q", h)
		}
		if err := os.WriteFile(file+".tmp", []byte(`[{"targets": [`+strings.Join(q, ",")+`]}]`), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(file+".tmp", file); err != nil {
			t.Fatal(err)
		}
	}
	writeTargets(host(a), host(b))
	conf := fmt.Sprintf(`global:
  scrape_interval: 200ms
  scrape_timeout: 150ms
scrape_configs:
  - job_name: files
    file_sd_configs: [{files: [%q], refresh_interval: 100ms}]
`, file)
	s := newScraper(t, store, conf)
	for _, h := range []string{host(a), host(b)} {
		waitFor(t, "a scrape of "+h, func() bool {
			v, found := last(t, store, "__name__", "up", "instance", h)
			return found && v == 1
		})
	}
	writeTargets(host(a))
	waitFor(t, "the stale markers of "+host(b), func() bool {
		v, _ := last(t, store, "__name__", "up", "instance", host(b))
		return value.IsStaleNaN(v)
	})
	if v, _ := last(t, store, "__name__", "app_requests_total", "instance", host(b), "code", "200"); !value.IsStaleNaN(v) {
		t.Errorf("the last sample of the gone target's counter is %v, not a stale marker", v)
	}
	if v, _ := last(t, store, "__name__", "up", "instance", host(a)); v != 1 {
		t.Errorf("up of the target that stays = %v", v)
	}

	// A reload without the job stops its scrapes. (Prometheus writes no
	// staleness markers for a job that leaves the configuration.)
	c, err := config.Load("global:\n  scrape_interval: 200ms\n", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ApplyConfig(c); err != nil {
		t.Fatal(err)
	}
	if pools := s.ScrapePools(); len(pools) != 0 {
		t.Errorf("scrape pools after the reload: %v", pools)
	}
	waitFor(t, "the last scrape of "+host(a), func() bool {
		before, _ := last(t, store, "__name__", "app_requests_total", "instance", host(a), "code", "200")
		time.Sleep(500 * time.Millisecond)
		after, _ := last(t, store, "__name__", "app_requests_total", "instance", host(a), "code", "200")
		return before == after
	})
}

func TestSelfConfig(t *testing.T) {
	for addr, want := range map[string]string{
		"[::]:9201":      "localhost:9201",
		"0.0.0.0:9201":   "localhost:9201",
		":9201":          "localhost:9201",
		"127.0.0.1:9301": "127.0.0.1:9301",
	} {
		c, err := SelfConfig(addr)
		if err != nil {
			t.Fatal(err)
		}
		scfgs, err := c.GetScrapeConfigs()
		if err != nil || len(scfgs) != 1 || scfgs[0].JobName != "strata" || time.Duration(scfgs[0].ScrapeInterval) != 15*time.Second {
			t.Fatalf("%s: %v %+v", addr, err, scfgs)
		}
		sc, ok := scfgs[0].ServiceDiscoveryConfigs[0].(discovery.StaticConfig)
		if !ok || len(sc) != 1 || len(sc[0].Targets) != 1 || string(sc[0].Targets[0][model.AddressLabel]) != want {
			t.Errorf("%s: targets %v, want %s", addr, scfgs[0].ServiceDiscoveryConfigs, want)
		}
	}
	if _, err := SelfConfig("nonsense"); err == nil {
		t.Error("an address without a port gave a configuration")
	}
}

// TestScrapeFormats scrapes OpenMetrics with an exemplar and explicit
// timestamps, and protobuf with a native histogram: the timestamps are
// honoured, the exemplar and the histogram stored.
func TestScrapeFormats(t *testing.T) {
	store := openStore(t)
	at := time.Now().Add(-time.Minute).Truncate(time.Second)
	om := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/openmetrics-text; version=1.0.0; charset=utf-8")
		ts := strconv.FormatInt(at.Unix(), 10)
		fmt.Fprintf(w, "# TYPE om_requests counter\n# HELP om_requests Requests.\nom_requests_total{path=\"/a\"} 5 %s # {trace_id=\"abc\"} 1.0 %s\n# EOF\n", ts, ts)
	}))
	defer om.Close()
	pb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		format := expfmt.NewFormat(expfmt.TypeProtoDelim)
		w.Header().Set("Content-Type", string(format))
		h := &dto.Histogram{
			SampleCount: proto.Uint64(10), SampleSum: proto.Float64(12.5),
			Schema: proto.Int32(0), ZeroThreshold: proto.Float64(1e-128), ZeroCount: proto.Uint64(1),
			PositiveSpan:  []*dto.BucketSpan{{Offset: proto.Int32(0), Length: proto.Uint32(2)}},
			PositiveDelta: []int64{4, 1},
		}
		mf := &dto.MetricFamily{Name: proto.String("nh_latency_seconds"), Help: proto.String("Latency."), Type: dto.MetricType_HISTOGRAM.Enum(), Metric: []*dto.Metric{{Histogram: h}}}
		if err := expfmt.NewEncoder(w, format).Encode(mf); err != nil {
			t.Error(err)
		}
	}))
	defer pb.Close()
	newScraper(t, store, fmt.Sprintf(`global:
  scrape_interval: 200ms
  scrape_timeout: 150ms
scrape_configs:
  - job_name: om
    scrape_protocols: [OpenMetricsText1.0.0]
    static_configs: [{targets: [%q]}]
  - job_name: pb
    scrape_protocols: [PrometheusProto]
    scrape_native_histograms: true
    static_configs: [{targets: [%q]}]
`, host(om), host(pb)))

	waitFor(t, "the OpenMetrics sample", func() bool {
		_, found := last(t, store, "__name__", "om_requests_total", "job", "om")
		return found
	})
	q, err := store.Querier(0, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "om_requests_total"))
	for ss.Next() {
		it := ss.At().Iterator(nil)
		for it.Next() != chunkenc.ValNone {
			if ts, v := it.At(); ts != at.UnixMilli() || v != 5 {
				t.Errorf("om_requests_total sample %v at %d, want 5 at %d (the exposition's timestamp)", v, ts, at.UnixMilli())
			}
		}
	}
	waitFor(t, "the exemplar", func() bool {
		eq, err := store.ExemplarQuerier(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		res, err := eq.Select(0, math.MaxInt64, []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "om_requests_total")})
		if err != nil {
			t.Fatal(err)
		}
		return len(res) == 1 && len(res[0].Exemplars) == 1 && res[0].Exemplars[0].Labels.Get("trace_id") == "abc" && res[0].Exemplars[0].Ts == at.UnixMilli()
	})

	waitFor(t, "the native histogram", func() bool {
		q, err := store.Querier(0, math.MaxInt64)
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close()
		ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "nh_latency_seconds"))
		for ss.Next() {
			it := ss.At().Iterator(nil)
			for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
				if vt != chunkenc.ValHistogram {
					t.Fatalf("nh_latency_seconds holds a %v sample, want a histogram", vt)
				}
				_, h := it.AtHistogram(nil)
				if h.Count == 10 && h.Sum == 12.5 && h.ZeroCount == 1 {
					return true
				}
			}
		}
		return false
	})
}

// samples returns the float samples of the one series matching sel.
func samples(t *testing.T, store *db.DB, sel ...string) []promql.FPoint {
	t.Helper()
	var ms []*labels.Matcher
	for i := 0; i < len(sel); i += 2 {
		ms = append(ms, labels.MustNewMatcher(labels.MatchEqual, sel[i], sel[i+1]))
	}
	q, err := store.Querier(0, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ss := q.Select(context.Background(), false, nil, ms...)
	var ps []promql.FPoint
	for n := 0; ss.Next(); n++ {
		if n > 0 {
			t.Fatalf("%v matches more than one series", sel)
		}
		it := ss.At().Iterator(nil)
		for it.Next() == chunkenc.ValFloat {
			ts, v := it.At()
			ps = append(ps, promql.FPoint{T: ts, F: v})
		}
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	return ps
}

// TestScrapeOptions scrapes one target under the options that change
// what is stored: honor_labels, honor_timestamps, track_timestamps_staleness
// and the conversion of classic histograms to native ones with custom
// buckets, the target found by HTTP discovery.
func TestScrapeOptions(t *testing.T) {
	store := openStore(t)
	stamped := time.Now().Add(-time.Minute).Truncate(time.Second)
	var gone atomic.Bool
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, "# TYPE app_info gauge\napp_info{job=\"exported\",instance=\"elsewhere\"} 1\n")
		if !gone.Load() {
			fmt.Fprintf(w, "# TYPE app_stamped gauge\napp_stamped 7 %d\n", stamped.UnixMilli())
		}
		fmt.Fprint(w, "# TYPE app_latency_seconds histogram\napp_latency_seconds_bucket{le=\"0.1\"} 1\napp_latency_seconds_bucket{le=\"1\"} 3\napp_latency_seconds_bucket{le=\"+Inf\"} 4\napp_latency_seconds_sum 2.5\napp_latency_seconds_count 4\n")
	}))
	defer app.Close()
	sd := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `[{"targets": [%q], "labels": {"team": "web"}}]`, host(app))
	}))
	defer sd.Close()
	job := func(name, options string) string {
		return fmt.Sprintf("  - job_name: %s\n    http_sd_configs: [{url: %q, refresh_interval: 100ms}]\n%s", name, sd.URL, options)
	}
	newScraper(t, store, "global:\n  scrape_interval: 200ms\n  scrape_timeout: 150ms\nscrape_configs:\n"+
		job("honored", "    honor_labels: true\n    track_timestamps_staleness: true\n")+
		job("plain", "    honor_timestamps: false\n    convert_classic_histograms_to_nhcb: true\n")+
		job("untracked", "    always_scrape_classic_histograms: true\n    convert_classic_histograms_to_nhcb: true\n"))

	waitFor(t, "a scrape of every job", func() bool {
		for _, job := range []string{"honored", "plain", "untracked"} {
			if v, _ := last(t, store, "__name__", "up", "job", job, "team", "web"); v != 1 {
				return false
			}
		}
		return true
	})
	if _, found := last(t, store, "__name__", "app_info", "job", "exported", "instance", "elsewhere", "team", "web"); !found {
		t.Error("honor_labels: the exposition's job and instance were not kept")
	}
	if _, found := last(t, store, "__name__", "app_info", "job", "plain", "instance", host(app), "exported_job", "exported", "exported_instance", "elsewhere"); !found {
		t.Error("without honor_labels, the exposition's job and instance did not become exported_job and exported_instance")
	}
	if ps := samples(t, store, "__name__", "app_stamped", "job", "honored"); len(ps) != 1 || ps[0].T != stamped.UnixMilli() {
		t.Errorf("honor_timestamps: app_stamped holds %v, want one sample at the exposition's %d", ps, stamped.UnixMilli())
	}
	for _, p := range samples(t, store, "__name__", "app_stamped", "job", "plain") {
		if p.T == stamped.UnixMilli() {
			t.Errorf("honor_timestamps false: a sample stored at the exposition's timestamp")
		}
	}

	// Classic histograms: converted to one native histogram with custom
	// buckets, and kept as well where always_scrape_classic_histograms
	// says so.
	for _, job := range []string{"plain", "untracked"} {
		q, err := store.Querier(0, math.MaxInt64)
		if err != nil {
			t.Fatal(err)
		}
		ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "app_latency_seconds"), labels.MustNewMatcher(labels.MatchEqual, "job", job))
		if !ss.Next() {
			t.Fatalf("%s: no app_latency_seconds", job)
		}
		it := ss.At().Iterator(nil)
		if vt := it.Next(); vt != chunkenc.ValFloatHistogram && vt != chunkenc.ValHistogram {
			t.Fatalf("%s: app_latency_seconds holds a %v sample, want a histogram", job, vt)
		}
		_, h := it.AtFloatHistogram(nil)
		if h.Schema != histogram.CustomBucketsSchema || h.Count != 4 || h.Sum != 2.5 || !slices.Equal(h.CustomValues, []float64{0.1, 1}) {
			t.Errorf("%s: app_latency_seconds = %v (schema %d, bounds %v), want 4 observations summing to 2.5 over bounds 0.1 and 1", job, h, h.Schema, h.CustomValues)
		}
		q.Close()
	}
	if _, found := last(t, store, "__name__", "app_latency_seconds_bucket", "job", "plain", "le", "1.0"); found {
		t.Error("a converted classic histogram kept its bucket series")
	}
	if v, _ := last(t, store, "__name__", "app_latency_seconds_bucket", "job", "untracked", "le", "1.0"); v != 3 {
		t.Errorf("always_scrape_classic_histograms: bucket le=1.0 = %v, want 3", v)
	}

	// A series with its own timestamps that goes is marked stale only
	// with track_timestamps_staleness; one whose timestamps are not
	// honoured is marked as any other.
	gone.Store(true)
	waitFor(t, "the stale markers of app_stamped", func() bool {
		a, _ := last(t, store, "__name__", "app_stamped", "job", "honored")
		b, _ := last(t, store, "__name__", "app_stamped", "job", "plain")
		return value.IsStaleNaN(a) && value.IsStaleNaN(b)
	})
	scraped := len(samples(t, store, "__name__", "up", "job", "untracked"))
	waitFor(t, "two more scrapes of untracked", func() bool {
		return len(samples(t, store, "__name__", "up", "job", "untracked")) >= scraped+2
	})
	if ps := samples(t, store, "__name__", "app_stamped", "job", "untracked"); len(ps) != 1 || ps[0].F != 7 {
		t.Errorf("without track_timestamps_staleness, app_stamped holds %v, want only the exposition's sample", ps)
	}
}
