package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/bench/report"
	"github.com/strata-db/strata/internal/server"
)

// helperEnv makes the test binary a strata server: the replay and compare
// tests launch it with --server-cmd, which needs a process to kill, and
// re-running this binary avoids building cmd/strata.
const helperEnv = "STRATA_BENCH_TEST_SERVER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "1":
		os.Exit(serveHelper(os.Args[len(os.Args)-2], os.Args[len(os.Args)-1], ""))
	case "config":
		os.Exit(serveHelper(os.Args[len(os.Args)-2], os.Args[len(os.Args)-1], os.Args[len(os.Args)-3]))
	}
	os.Exit(m.Run())
}

// serveHelper runs strata on addr with its data in dir and, if not
// empty, the configuration file config.
func serveHelper(addr, dir, config string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	cfg := server.DefaultConfig()
	cfg.ListenAddress, cfg.DataDir, cfg.ConfigFile = addr, dir, config
	if err := server.Run(ctx, cfg, nil); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 1
	}
	return 0
}

// helperCommand returns a --server-cmd that runs this test binary as a
// strata server.
func helperCommand(t *testing.T) string {
	t.Helper()
	t.Setenv(helperEnv, "1")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return "'" + strings.ReplaceAll(exe, "'", `'\''`) + "' -test.run=^$ {addr} {data}"
}

// helperConfigCommand is helperCommand for a strata server given the
// rules workload's configuration file.
func helperConfigCommand(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(helperEnv, "config")
	return "'" + strings.ReplaceAll(exe, "'", `'\''`) + "' -test.run=^$ {config} {addr} {data}"
}

// startStrata runs strata in-process on 127.0.0.1:0 until the test ends
// and returns its address.
func startStrata(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cfg := server.DefaultConfig()
	cfg.ListenAddress = "127.0.0.1:0"
	cfg.DataDir = t.TempDir()
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- server.Run(ctx, cfg, func(a net.Addr) { addr <- a.String() }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("strata: %v", err)
		}
	})
	select {
	case a := <-addr:
		return a
	case err := <-done:
		t.Fatalf("strata did not start: %v", err)
	}
	return ""
}

// runCLI runs the command and returns its parsed JSON result.
func runCLI(t *testing.T, args ...string) (*report.Result, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "result.json")
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args = append(args, "--json", path, "--work-dir", t.TempDir())
	if code := cli(ctx, args, &stdout, &stderr); code != 0 {
		t.Fatalf("strata-bench %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var res report.Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	return &res, stdout.String()
}

func figure(t *testing.T, r report.Run, key string) float64 {
	t.Helper()
	f, ok := r.Figures.Get(key)
	if !ok {
		t.Fatalf("%s: no figure %q in %+v", r.Server, key, r.Figures)
	}
	return f.Value
}

// TestIngestSince pushes a history: with --since 6h the data starts six
// hours ago, which a query at that time finds.
func TestIngestSince(t *testing.T) {
	addr := startStrata(t)
	start := time.Now().Add(-6 * time.Hour)
	res, out := runCLI(t, "ingest", "--quick", "--since", "6h", "--requests", "40", "--url", "http://"+addr+"/api/v1/write")
	if v := figure(t, res.Runs[0], "errors"); v != 0 {
		t.Fatalf("%v failed requests: %v\n%s", v, res.Runs[0].Notes, out)
	}
	u := fmt.Sprintf("http://%s/api/v1/query?query=count({__name__=~\".%%2B\"})&time=%d", addr, start.Add(time.Minute).Unix())
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), `"2000"`) {
		t.Fatalf("series six hours ago: %s", body)
	}
}

// TestIngestQuick is the smoke test: ingest --quick against a strata
// that is already running.
func TestIngestQuick(t *testing.T) {
	addr := startStrata(t)
	res, out := runCLI(t, "ingest", "--quick", "--url", "http://"+addr+"/api/v1/write")
	if len(res.Runs) != 1 {
		t.Fatalf("%d runs", len(res.Runs))
	}
	r := res.Runs[0]
	if v := figure(t, r, "samples_per_second"); v <= 0 {
		t.Fatalf("samples/s = %v\n%s", v, out)
	}
	if v := figure(t, r, "errors"); v != 0 {
		t.Fatalf("%v failed requests: %v", v, r.Notes)
	}
	if figure(t, r, "samples_accepted") != figure(t, r, "samples_sent") {
		t.Fatalf("not every sample was accepted\n%s", out)
	}
	if !strings.Contains(out, "samples/s accepted") {
		t.Fatalf("no samples/s in the table:\n%s", out)
	}
}

func TestQueryQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("loads data and runs every query")
	}
	addr := startStrata(t)
	res, _ := runCLI(t, "query", "--quick", "--iterations", "2", "--url", "http://"+addr+"/api/v1/write")
	r := res.Runs[0]
	for _, key := range []string{"selector", "hist_quantile", "range_hist_quantile", "range_topk"} {
		if figure(t, r, key+"_series") == 0 {
			t.Errorf("query %s returned no series", key)
		}
		if figure(t, r, key+"_p50") <= 0 {
			t.Errorf("query %s has no latency", key)
		}
	}
}

func TestReplayQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("launches, kills and restarts a server")
	}
	res, _ := runCLI(t, "replay", "--quick", "--name", "strata", "--server-cmd", helperCommand(t))
	r := res.Runs[0]
	if figure(t, r, "samples_lost") != 0 || figure(t, r, "samples_found") != figure(t, r, "samples_loaded") {
		t.Fatalf("data lost: %+v, notes %v", r.Figures, r.Notes)
	}
	if figure(t, r, "time_to_ready") <= 0 || figure(t, r, "replay_peak_rss") <= 0 {
		t.Fatalf("no restart figures: %+v", r.Figures)
	}
}

func TestDiskQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("launches and stops a server")
	}
	res, _ := runCLI(t, "disk", "--quick", "--samples", "20000", "--server-cmd", helperCommand(t))
	r := res.Runs[0]
	if v := figure(t, r, "wal_bytes_per_sample"); v <= 0 || v != figure(t, r, "bytes_per_sample") {
		t.Fatalf("strata keeps everything in its WAL: %+v", r.Figures)
	}
}

func TestCompareQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("launches four servers")
	}
	cmd := helperCommand(t)
	dir := t.TempDir()
	res, out := runCLI(t, "compare", "ingest", "--quick", "--duration", "1s",
		"--server", "a="+cmd, "--server", "b="+cmd, "--report", dir)
	if len(res.Runs) != 2 || len(res.Runs[0].Rounds) != 2 {
		t.Fatalf("runs %+v", res.Runs)
	}
	for _, r := range res.Runs {
		if figure(t, r, "samples_per_second") <= 0 || figure(t, r, "cpu_per_million") <= 0 || figure(t, r, "peak_rss") <= 0 {
			t.Fatalf("%s: %+v", r.Server, r.Figures)
		}
	}
	if !strings.Contains(out, "b/a") {
		t.Fatalf("no ratio column:\n%s", out)
	}
	for _, f := range []string{"report.md", "chart.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRulesQuick runs the rules workload against strata with a second
// between samples and evaluations: every group is evaluated, none fails,
// and the rules record series.
func TestRulesQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("launches a server")
	}
	res, _ := runCLI(t, "rules", "--quick", "--interval", "1s", "--warmup", "2s", "--duration", "4s", "--name", "strata", "--server-cmd", helperConfigCommand(t))
	r := res.Runs[0]
	if figure(t, r, "evaluations") < 10 || figure(t, r, "failures") != 0 || figure(t, r, "recorded_series") <= 0 || figure(t, r, "cpu_per_round") <= 0 {
		t.Fatalf("%+v, notes %v", r.Figures, r.Notes)
	}
}

// TestScrapeQuick runs the scrape workload against strata: it scrapes
// the harness' targets, and the figures come from both sides.
func TestScrapeQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("launches a server")
	}
	res, _ := runCLI(t, "scrape", "--quick", "--interval", "1s", "--warmup", "7s", "--duration", "3s", "--name", "strata", "--server-cmd", helperConfigCommand(t))
	r := res.Runs[0]
	if figure(t, r, "scrapes") < 20 || figure(t, r, "cpu_per_million") <= 0 || figure(t, r, "scrape_p99") <= 0 || figure(t, r, "series_stored") != 20*224 {
		t.Fatalf("%+v, notes %v", r.Figures, r.Notes)
	}
}
