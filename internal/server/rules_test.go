package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
)

// fakeAlertmanager is an HTTP server with Alertmanager's API v2 alerts
// endpoint; it keeps every alert posted to it.
type fakeAlertmanager struct {
	srv    *httptest.Server
	mu     sync.Mutex
	alerts []postedAlert
}

// postedAlert is an alert as Alertmanager's API v2 takes it.
type postedAlert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL"`
	received     time.Time
}

func newFakeAlertmanager(t *testing.T) *fakeAlertmanager {
	am := &fakeAlertmanager{}
	am.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/api/v2/alerts" {
			http.NotFound(w, r)
			return
		}
		var as []postedAlert
		if err := json.NewDecoder(r.Body).Decode(&as); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		am.mu.Lock()
		for _, a := range as {
			a.received = time.Now()
			am.alerts = append(am.alerts, a)
		}
		am.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(am.srv.Close)
	return am
}

// waitFor polls the alerts received until one satisfies ok.
func (am *fakeAlertmanager) waitFor(t *testing.T, what string, ok func(postedAlert) bool) postedAlert {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		am.mu.Lock()
		for _, a := range am.alerts {
			if ok(a) {
				am.mu.Unlock()
				return a
			}
		}
		am.mu.Unlock()
	}
	am.mu.Lock()
	defer am.mu.Unlock()
	t.Fatalf("Alertmanager received no %s; it received %+v", what, am.alerts)
	return postedAlert{}
}

// writeFiles writes name -> content under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// apiData returns the data of an API answer, failing on any other.
func apiData(t *testing.T, u string) json.RawMessage {
	t.Helper()
	code, body := get(t, u)
	var r struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil || code != 200 || r.Status != "success" {
		t.Fatalf("GET %s: %d %s", u, code, body)
	}
	return r.Data
}

// pollQuery evaluates query until its answer contains want.
func pollQuery(t *testing.T, base, query, want string) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		last = string(apiData(t, base+"/api/v1/query?query="+url.QueryEscape(query)))
		if strings.Contains(last, want) {
			return
		}
	}
	t.Fatalf("%s never answered with %s; last: %s", query, want, last)
}

func writeX(t *testing.T, base string, v float64) {
	t.Helper()
	remoteWrite(t, base, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{
		Labels:  []prompb.Label{{Name: "__name__", Value: "x"}, {Name: "instance", Value: "i"}, {Name: "job", Value: "a"}},
		Samples: []prompb.Sample{{Value: v, Timestamp: time.Now().UnixMilli()}},
	}}})
}

const testRuleFile = `groups:
- name: test
  interval: 100ms
  rules:
  - record: job:x:sum
    expr: sum by (job) (x)
  - alert: XHigh
    expr: x > 5
    labels:
      severity: page
    annotations:
      summary: 'x is {{ $value }} on {{ $labels.instance }}'
`

// TestRulesAndAlerts runs a configuration file with a recording rule and
// an alert through a server: the recorded series is written and
// queryable, the alert fires with the file's external labels and reaches
// an Alertmanager, and resolves there when the data falls below the
// threshold; the APIs show the rules, the alert and the Alertmanager.
func TestRulesAndAlerts(t *testing.T) {
	am := newFakeAlertmanager(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"x.rules.yml": testRuleFile,
		"strata.yml": fmt.Sprintf(`global:
  external_labels:
    region: eu
rule_files: [%q]
alerting:
  alertmanagers:
  - static_configs:
    - targets: [%q]
`, filepath.Join(dir, "*.rules.yml"), strings.TrimPrefix(am.srv.URL, "http://")),
	})
	base := startServer(t, func(c *Config) {
		c.ConfigFile = filepath.Join(dir, "strata.yml")
		c.ExternalURL = "http://strata.example:9201/"
		c.Rules.ResendDelay = time.Hour
	})
	// Alerts are sent to the Alertmanagers discovered when they fire, as
	// in Prometheus; the first discovery comes a moment after the start.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if strings.Contains(string(apiData(t, base+"/api/v1/alertmanagers")), am.srv.URL+"/api/v2/alerts") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the Alertmanager was not discovered")
		}
	}

	writeX(t, base, 10)
	pollQuery(t, base, "job:x:sum", `"job":"a"},"value":[`)
	firing := am.waitFor(t, "firing XHigh", func(a postedAlert) bool {
		return a.Labels["alertname"] == "XHigh" && a.EndsAt.After(a.received)
	})
	wantLabels := map[string]string{"alertname": "XHigh", "instance": "i", "job": "a", "severity": "page", "region": "eu"}
	if fmt.Sprint(firing.Labels) != fmt.Sprint(wantLabels) {
		t.Errorf("alert labels %v, want %v", firing.Labels, wantLabels)
	}
	if got := firing.Annotations["summary"]; got != "x is 10 on i" {
		t.Errorf("summary %q", got)
	}
	if !strings.HasPrefix(firing.GeneratorURL, "http://strata.example:9201/graph?g0.expr=") {
		t.Errorf("generator URL %q", firing.GeneratorURL)
	}
	if firing.StartsAt.IsZero() || firing.StartsAt.After(firing.received) {
		t.Errorf("startsAt %v, received %v", firing.StartsAt, firing.received)
	}
	pollQuery(t, base, `ALERTS{alertname="XHigh",alertstate="firing"}`, `"severity":"page"`)

	var alerts struct {
		Alerts []struct {
			Labels map[string]string `json:"labels"`
			State  string            `json:"state"`
			Value  string            `json:"value"`
		} `json:"alerts"`
	}
	if err := json.Unmarshal(apiData(t, base+"/api/v1/alerts"), &alerts); err != nil {
		t.Fatal(err)
	}
	if len(alerts.Alerts) != 1 || alerts.Alerts[0].State != "firing" || alerts.Alerts[0].Value != "1e+01" {
		t.Errorf("/api/v1/alerts: %+v", alerts)
	}
	var rules struct {
		Groups []struct {
			Name  string `json:"name"`
			File  string `json:"file"`
			Rules []struct {
				Name   string `json:"name"`
				Type   string `json:"type"`
				Health string `json:"health"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := json.Unmarshal(apiData(t, base+"/api/v1/rules"), &rules); err != nil {
		t.Fatal(err)
	}
	if len(rules.Groups) != 1 || rules.Groups[0].File != filepath.Join(dir, "x.rules.yml") || len(rules.Groups[0].Rules) != 2 ||
		rules.Groups[0].Rules[0].Type != "recording" || rules.Groups[0].Rules[1].Health != "ok" {
		t.Errorf("/api/v1/rules: %+v", rules)
	}

	writeX(t, base, 1)
	resolved := am.waitFor(t, "resolved XHigh", func(a postedAlert) bool {
		return a.Labels["alertname"] == "XHigh" && !a.EndsAt.After(a.received)
	})
	if !resolved.StartsAt.Equal(firing.StartsAt) {
		t.Errorf("resolved alert starts at %v, the firing one at %v", resolved.StartsAt, firing.StartsAt)
	}
}

// TestReload reloads a configuration file by POST /-/reload and by the
// Reload channel: a broken rule file is refused and keeps the rules in
// effect, with the failure in runtimeinfo and the metrics; a good one
// replaces them.
func TestReload(t *testing.T) {
	dir := t.TempDir()
	rule := func(name string) string {
		return fmt.Sprintf("groups:\n- name: g\n  rules:\n  - record: %s\n    expr: vector(1)\n", name)
	}
	writeFiles(t, dir, map[string]string{
		"r.yml":      rule("first"),
		"strata.yml": fmt.Sprintf("rule_files: [%q]\n", filepath.Join(dir, "r.yml")),
	})
	reload := make(chan struct{})
	base := startServer(t, func(c *Config) {
		c.ConfigFile = filepath.Join(dir, "strata.yml")
		c.EnableLifecycle = true
		c.Reload = reload
	})
	ruleNames := func() string { return string(apiData(t, base+"/api/v1/rules")) }
	post := func() (int, string) {
		resp, err := http.Post(base+"/-/reload", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	runtimeOK := func() bool {
		var ri struct {
			OK bool `json:"reloadConfigSuccess"`
		}
		if err := json.Unmarshal(apiData(t, base+"/api/v1/status/runtimeinfo"), &ri); err != nil {
			t.Fatal(err)
		}
		return ri.OK
	}
	if !strings.Contains(ruleNames(), `"name":"first"`) || !runtimeOK() {
		t.Fatalf("at start: %s", ruleNames())
	}

	writeFiles(t, dir, map[string]string{"r.yml": "groups:\n- name: g\n  rules:\n  - record: second\n    expr: sum(\n"})
	if code, body := post(); code != http.StatusInternalServerError || !strings.Contains(body, "r.yml") {
		t.Errorf("reload of a broken rule file: %d %s", code, body)
	}
	if !strings.Contains(ruleNames(), `"name":"first"`) {
		t.Errorf("a broken rule file replaced the rules: %s", ruleNames())
	}
	if runtimeOK() {
		t.Error("runtimeinfo says the failed reload succeeded")
	}
	if _, m := get(t, base+"/metrics"); !bytes.Contains(m, []byte("prometheus_config_last_reload_successful 0")) {
		t.Error("prometheus_config_last_reload_successful is not 0 after a failed reload")
	}

	writeFiles(t, dir, map[string]string{"r.yml": rule("second")})
	if code, body := post(); code != http.StatusOK {
		t.Errorf("reload: %d %s", code, body)
	}
	if !strings.Contains(ruleNames(), `"name":"second"`) || !runtimeOK() {
		t.Errorf("after reload: %s", ruleNames())
	}

	writeFiles(t, dir, map[string]string{"r.yml": rule("third")})
	reload <- struct{}{}
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(ruleNames(), `"name":"third"`); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a signalled reload did not apply: %s", ruleNames())
		}
	}

	if code, body := getStatus(t, base+"/-/reload"); code != http.StatusMethodNotAllowed {
		t.Errorf("GET /-/reload: %d %s", code, body)
	}
}

func getStatus(t *testing.T, u string) (int, string) {
	code, b := get(t, u)
	return code, string(b)
}

// TestReloadNeedsLifecycle: without EnableLifecycle, /-/reload is
// refused, as in Prometheus.
func TestReloadNeedsLifecycle(t *testing.T) {
	base := startServer(t, nil)
	resp, err := http.Post(base+"/-/reload", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "Lifecycle API is not enabled") {
		t.Errorf("%d %s", resp.StatusCode, b)
	}
}

// TestConfigFileRefused: a configuration file that does not parse, or
// whose rule file does not, refuses the start with the parser's message.
func TestConfigFileRefused(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"bad.yml":      "global:\n  evaluation_interval: soon\n",
		"badrules.yml": fmt.Sprintf("rule_files: [%q]\n", filepath.Join(dir, "r.yml")),
		"r.yml":        "groups:\n- name: g\n  rules:\n  - record: x\n    expr: sum(\n",
		"unknown.yml":  "scrape_interval: 1m\n",
	})
	for file, want := range map[string]string{
		"bad.yml":      "soon",
		"badrules.yml": "r.yml",
		"unknown.yml":  "scrape_interval",
		"missing.yml":  "no such file",
	} {
		t.Run(file, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.ListenAddress = "127.0.0.1:0"
			cfg.DataDir = t.TempDir()
			cfg.ConfigFile = filepath.Join(dir, file)
			err := Run(t.Context(), cfg, nil)
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), file) {
				t.Errorf("got %v, want an error naming %s and %q", err, file, want)
			}
		})
	}
}

// TestConfigFileSections: the file's storage and otlp sections and its
// external labels win over the flags', which are logged; sections strata
// does not act on are named in a warning; /api/v1/status/config shows
// the file with what strata runs with.
func TestConfigFileSections(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"strata.yml": `global:
  external_labels: {region: eu, replica: "1"}
storage:
  tsdb:
    out_of_order_time_window: 30m
  exemplars:
    max_exemplars: 7
otlp:
  promote_resource_attributes: [service.name]
remote_write:
- url: http://example.invalid/write
scrape_configs:
- job_name: x
  static_configs: [{targets: ["localhost:1"]}]
`})
	cfg := DefaultConfig()
	cfg.ExternalLabels = labels.FromStrings("region", "us", "cluster", "c")
	cfg.OutOfOrderWindow = time.Hour
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	conf, err := loadConfigFile(filepath.Join(dir, "strata.yml"), &cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.ExternalLabels.String(); got != `{cluster="c", region="eu", replica="1"}` {
		t.Errorf("external labels %s", got)
	}
	if cfg.OutOfOrderWindow != 30*time.Minute || cfg.MaxExemplars != 7 || len(cfg.OTLP.Translation.PromoteResourceAttributes) != 1 {
		t.Errorf("storage and otlp not applied: window %v, exemplars %d, otlp %+v", cfg.OutOfOrderWindow, cfg.MaxExemplars, cfg.OTLP.Translation)
	}
	for _, want := range []string{
		`external label wins over --external-label" name=region file=eu flag=us`,
		`flag=--storage.out-of-order-window`,
		`sections=[remote_write]`,
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, logs.String())
		}
	}
	if strings.Contains(logs.String(), "--storage.max-exemplars") {
		t.Errorf("a flag left at its default is logged as overridden:\n%s", logs.String())
	}
	y := effectiveFileConfig(conf, cfg)
	if strings.Contains(y, "gogc") {
		t.Errorf("effective configuration shows the runtime section strata does not apply:\n%s", y)
	}
	for _, want := range []string{"region: eu", "cluster: c", "out_of_order_time_window: 30m", "max_exemplars: 7", "- service.name", "job_name: x"} {
		if !strings.Contains(y, want) {
			t.Errorf("effective configuration lacks %q:\n%s", want, y)
		}
	}
}

// TestUIRulesInBrowser opens the Alerts and Rules pages over a server
// evaluating testRuleFile: the firing alert with its labels and
// annotation, and both rules with their health.
func TestUIRulesInBrowser(t *testing.T) {
	exe := browser(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"x.rules.yml": testRuleFile,
		"strata.yml":  fmt.Sprintf("rule_files: [%q]\n", filepath.Join(dir, "x.rules.yml")),
	})
	base := startServer(t, func(c *Config) { c.ConfigFile = filepath.Join(dir, "strata.yml") })
	writeX(t, base, 10)
	pollQuery(t, base, `ALERTS{alertname="XHigh"}`, `"alertstate":"firing"`)
	ctx, problems := openBrowser(t, exe)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/#alerts"),
		chromedp.WaitVisible(chromedp.CSS("#alerts-rules tr.rule-firing")),
	); err != nil {
		t.Fatal(err)
	}
	alerts, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("page-alerts")))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Firing: 1", "XHigh (firing, 1 active", `instance="i"`, `severity="page"`, `summary="x is 10 on i"`, "x > 5"} {
		if !strings.Contains(alerts, want) {
			t.Errorf("alerts page lacks %q:\n%s", want, alerts)
		}
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/#rules"),
		chromedp.WaitVisible(chromedp.CSS("#rules-groups table.rules")),
	); err != nil {
		t.Fatal(err)
	}
	rules, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("page-rules")))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"test (" + filepath.Join(dir, "x.rules.yml") + "), every 0.1s", "record: job:x:sum", "sum by (job) (x)", "alert: XHigh", "ok"} {
		if !strings.Contains(rules, want) {
			t.Errorf("rules page lacks %q:\n%s", want, rules)
		}
	}
	for _, p := range problems() {
		t.Error(p)
	}
}
