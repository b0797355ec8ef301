package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// targetsAnswer is the part of /api/v1/targets the tests read.
type targetsAnswer struct {
	Active []struct {
		Labels     map[string]string `json:"labels"`
		ScrapePool string            `json:"scrapePool"`
		ScrapeURL  string            `json:"scrapeUrl"`
		Health     string            `json:"health"`
		LastError  string            `json:"lastError"`
	} `json:"activeTargets"`
}

func targetsOf(t *testing.T, base string) targetsAnswer {
	t.Helper()
	var a targetsAnswer
	if err := json.Unmarshal(apiData(t, base+"/api/v1/targets"), &a); err != nil {
		t.Fatal(err)
	}
	return a
}

// TestSelfScrape: without a configuration file strata scrapes its own
// /metrics as job "strata", which the targets API shows, and the flag
// turns it off.
func TestSelfScrape(t *testing.T) {
	base := startServer(t, func(c *Config) { c.SelfScrape = true })
	pollQuery(t, base, `up{job="strata"}`, `"1"]`)
	pollQuery(t, base, `strata_head_series{job="strata"}`, `"instance":"127.0.0.1:`)
	ts := targetsOf(t, base)
	if len(ts.Active) != 1 || ts.Active[0].ScrapePool != "strata" || ts.Active[0].Health != "up" || ts.Active[0].ScrapeURL != base+"/metrics" {
		t.Errorf("targets: %+v", ts)
	}
	if pools := string(apiData(t, base+"/api/v1/scrape_pools")); pools != `{"scrapePools":["strata"]}` {
		t.Errorf("scrape pools: %s", pools)
	}

	off := startServer(t, func(c *Config) { c.SelfScrape = false })
	if ts := targetsOf(t, off); len(ts.Active) != 0 {
		t.Errorf("targets with self-scrape off: %+v", ts)
	}
	if pools := string(apiData(t, off+"/api/v1/scrape_pools")); pools != `{"scrapePools":[]}` {
		t.Errorf("scrape pools with self-scrape off: %s", pools)
	}
}

// TestScrapeConfigFile scrapes the targets of a configuration file's
// scrape_configs, with no self-scrape beside them, and a reload replaces
// them.
func TestScrapeConfigFile(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, "# HELP app_jobs_total Jobs done.\n# TYPE app_jobs_total counter\napp_jobs_total 7\n")
	}))
	defer target.Close()
	addr := strings.TrimPrefix(target.URL, "http://")
	dir := t.TempDir()
	conf := func(job string) string {
		return fmt.Sprintf("global:\n  scrape_interval: 200ms\n  scrape_timeout: 100ms\nscrape_configs:\n  - job_name: %s\n    static_configs: [{targets: [%q]}]\n", job, addr)
	}
	writeFiles(t, dir, map[string]string{"strata.yml": conf("app")})
	base := startServer(t, func(c *Config) {
		c.ConfigFile = filepath.Join(dir, "strata.yml")
		c.EnableLifecycle = true
		c.SelfScrape = true
	})
	pollQuery(t, base, `app_jobs_total{job="app"}`, `"7"]`)
	ts := targetsOf(t, base)
	if len(ts.Active) != 1 || ts.Active[0].Labels["job"] != "app" || ts.Active[0].Labels["instance"] != addr {
		t.Errorf("targets: %+v", ts)
	}
	md := string(apiData(t, base+"/api/v1/targets/metadata?metric=app_jobs_total"))
	if !strings.Contains(md, `"type":"counter","help":"Jobs done."`) {
		t.Errorf("target metadata: %s", md)
	}
	if m := string(apiData(t, base+"/api/v1/metadata?metric=app_jobs_total")); !strings.Contains(m, `"type":"counter"`) {
		t.Errorf("stored metadata: %s", m)
	}

	writeFiles(t, dir, map[string]string{"strata.yml": conf("renamed")})
	resp, err := http.Post(base+"/-/reload", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("reload: %d", resp.StatusCode)
	}
	pollQuery(t, base, `app_jobs_total{job="renamed"}`, `"7"]`)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		ts := targetsOf(t, base)
		if len(ts.Active) == 1 && ts.Active[0].ScrapePool == "renamed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("targets after the reload: %+v", ts)
		}
	}
}

// TestUITargetsInBrowser opens the Targets and Service discovery pages
// over a server scraping a target that answers, one that fails and one
// that relabelling drops.
func TestUITargetsInBrowser(t *testing.T) {
	exe := browser(t)
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "app_up 1\n")
	}))
	defer ok.Close()
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no", http.StatusServiceUnavailable)
	}))
	defer failing.Close()
	okAddr, failAddr := strings.TrimPrefix(ok.URL, "http://"), strings.TrimPrefix(failing.URL, "http://")
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"strata.yml": fmt.Sprintf(`global:
  scrape_interval: 200ms
  scrape_timeout: 100ms
scrape_configs:
  - job_name: app
    static_configs: [{targets: [%q, %q, "10.0.0.9:22"], labels: {team: web}}]
    relabel_configs:
      - {source_labels: [__address__], regex: ".*:22", action: drop}
`, okAddr, failAddr)})
	base := startServer(t, func(c *Config) { c.ConfigFile = filepath.Join(dir, "strata.yml") })
	pollQuery(t, base, `up{job="app"} == 0`, failAddr)
	pollQuery(t, base, `up{job="app"} == 1`, okAddr)
	ctx, problems := openBrowser(t, exe)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/#targets"),
		chromedp.WaitVisible(chromedp.CSS("#targets-pools tr.target-down")),
		chromedp.WaitVisible(chromedp.CSS("#targets-pools tr.target-up")),
	); err != nil {
		t.Fatal(err)
	}
	page, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("page-targets")))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1 of 2 targets up", "app (1/2 up)", ok.URL + "/metrics", `team="web"`, "503 Service Unavailable"} {
		if !strings.Contains(page, want) {
			t.Errorf("targets page lacks %q:\n%s", want, page)
		}
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/#discovery"),
		chromedp.WaitVisible(chromedp.CSS("#discovery-pools tr.target-dropped")),
	); err != nil {
		t.Fatal(err)
	}
	page, err = chromedp.Run(ctx, chromedp.Text(chromedp.ID("page-discovery")))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"3 targets discovered in 1 scrape pools", "app (2 active, 1 dropped)", `__address__="10.0.0.9:22"`, "dropped by relabelling", `instance="` + okAddr + `"`} {
		if !strings.Contains(page, want) {
			t.Errorf("service discovery page lacks %q:\n%s", want, page)
		}
	}
	for _, p := range problems() {
		t.Error(p)
	}
}
