package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestScrapeSurvivesKill scrapes a target every 100 ms and kills the
// server with SIGKILL three times: every scraped sample a query saw
// before a kill is there after the restart, once, in order.
func TestScrapeSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server")
	}
	var n atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "# TYPE probe_scrapes_total counter\nprobe_scrapes_total %d\n", n.Add(1))
	}))
	defer target.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "strata.yml")
	conf := fmt.Sprintf("global:\n  scrape_interval: 100ms\n  scrape_timeout: 90ms\nscrape_configs:\n  - job_name: probe\n    static_configs: [{targets: [%q]}]\n", strings.TrimPrefix(target.URL, "http://"))
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &proc{t: t, bin: buildBinary(t), dir: filepath.Join(dir, "data"), addr: freeAddr(t), args: []string{"--config.file", cfg, "--scrape.discovery-reload-interval", "100ms"}}
	s.start()
	const sel = `probe_scrapes_total{job="probe"}[1h]`
	var seen []float64
	for round := range 3 {
		for deadline := time.Now().Add(30 * time.Second); len(seen) < 20*(round+1); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %d scraped samples after 30s; logs:\n%s", round, len(seen), s.logs.String())
			}
			seen = s.timestamps(sel)
		}
		s.kill()
		s.start()
		after := s.timestamps(sel)
		if !containsAll(after, seen) {
			t.Fatalf("after restart %d, of %d scraped samples seen before the kill %d are there", round+1, len(seen), countIn(after, seen))
		}
		for i := 1; i < len(after); i++ {
			if after[i] <= after[i-1] {
				t.Fatalf("scraped samples out of order or repeated at %v", after[i])
			}
		}
		seen = after
	}
}
