package server

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/prometheus/prometheus/prompb"
)

// browser returns the path of a Chromium to drive, or skips the test.
func browser(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium found: the UI's browser test needs one (apt-get install chromium); .ci/run installs it")
	return ""
}

// TestUIInBrowser loads the UI in a headless Chromium, types a query of
// 1,000 series into it, and checks that the graph and the table show
// them, with no console error on the way. It logs the page's transfer
// size and the time from loading the page to the graph drawn.
func TestUIInBrowser(t *testing.T) {
	exe := browser(t)
	base := startServer(t, nil)
	const series, samples = 1000, 60
	now := time.Now().Truncate(time.Minute).UnixMilli()
	req := &prompb.WriteRequest{}
	for s := range series {
		ts := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "ui_requests_total"}, {Name: "pod", Value: fmt.Sprintf("pod-%04d", s)}}}
		for i := range samples {
			ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: now - int64(samples-i)*60_000, Value: float64(i * s)})
		}
		req.Timeseries = append(req.Timeseries, ts)
	}
	remoteWrite(t, base, req)

	ctx, problems := openBrowser(t, exe)

	step := func(a chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	num := func(expr string) int {
		t.Helper()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[float64](expr))
		if err != nil {
			t.Fatal(err)
		}
		return int(n)
	}
	str := func(a chromedp.Action[string]) string {
		t.Helper()
		s, err := chromedp.Run(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	step(chromedp.Navigate(base + "/"))
	step(chromedp.WaitVisible(chromedp.ID("expr")))
	title := str(chromedp.Title())
	// Completion: once the page has the names, part of one, then Tab
	// takes the suggestion.
	for deadline := time.Now().Add(10 * time.Second); num(`names.metrics.length`) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the page did not load the metric names")
		}
		time.Sleep(10 * time.Millisecond)
	}
	step(chromedp.SendKeys(chromedp.ID("expr"), "ui_req"))
	step(chromedp.WaitVisible(chromedp.CSS("#suggest li")))
	if got := str(chromedp.Text(chromedp.CSS("#suggest li"))); got != "ui_requests_total" {
		t.Errorf("first suggestion %q, want ui_requests_total", got)
	}
	step(chromedp.SendKeys(chromedp.ID("expr"), "\t"))
	if got := str(chromedp.Evaluate[string](`document.getElementById("expr").value`)); got != "ui_requests_total" {
		t.Fatalf("after Tab the query is %q", got)
	}
	step(chromedp.Click(chromedp.ID("run")))
	step(chromedp.WaitVisible(chromedp.CSS("#graph .uplot canvas")))
	toGraph := num(`performance.now()`)
	legend := num(`document.querySelectorAll("#legend div").length`)
	// The page's own files, and the answers of the API it read.
	transfer := num(`performance.getEntriesByType("navigation").concat(performance.getEntriesByType("resource")).filter((e) => !e.name.includes("/api/")).reduce((n, e) => n + (e.transferSize || e.encodedBodySize || 0), 0)`)
	answers := num(`performance.getEntriesByType("resource").filter((e) => e.name.includes("/api/")).reduce((n, e) => n + (e.transferSize || e.encodedBodySize || 0), 0)`)
	queryInfo := str(chromedp.Text(chromedp.ID("query-info")))
	step(chromedp.Click(chromedp.CSS(`input[name=mode][value=table]`)))
	step(chromedp.Click(chromedp.ID("run")))
	step(chromedp.WaitVisible(chromedp.CSS("#table tbody tr")))
	rows := num(`document.querySelectorAll("#table tbody tr").length`)
	first := str(chromedp.Text(chromedp.CSS("#table tbody tr td")))
	if path := os.Getenv("STRATA_UI_SCREENSHOT"); path != "" {
		// The README's picture: the graph of a few series.
		num(`(document.getElementById("expr").value = "ui_requests_total{pod=~\"pod-000[1-6]\"}", 1)`)
		step(chromedp.Click(chromedp.CSS(`input[name=mode][value=graph]`)))
		step(chromedp.Click(chromedp.ID("run")))
		step(chromedp.WaitVisible(chromedp.CSS("#graph .uplot canvas")))
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if title != "strata" {
		t.Errorf("title %q", title)
	}
	if legend != series {
		t.Errorf("graph legend has %d series, want %d (%s)", legend, series, queryInfo)
	}
	if rows != series {
		t.Errorf("table has %d rows, want %d", rows, series)
	}
	if want := `ui_requests_total{pod="pod-0000"}`; first != want {
		t.Errorf("first row %q, want %q", first, want)
	}
	for _, p := range problems() {
		t.Error(p)
	}
	t.Logf("page transfer %d bytes (API answers %d more); %d-series range query graphed %d ms after navigation (%s)", transfer, answers, series, toGraph, queryInfo)
}

// TestUIStatusInBrowser opens the Status and Cardinality pages: the
// store's readiness, the WAL's figures and the flags are shown, and the
// cardinality tables are filled, with no console error.
func TestUIStatusInBrowser(t *testing.T) {
	exe := browser(t)
	base := startServer(t, func(c *Config) { c.Flags = map[string]string{"listen-address": "127.0.0.1:0"} })
	remoteWrite(t, base, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{
		Labels:  []prompb.Label{{Name: "__name__", Value: "up"}, {Name: "job", Value: "a"}},
		Samples: []prompb.Sample{{Timestamp: time.Now().UnixMilli(), Value: 1}},
	}}})
	ctx, problems := openBrowser(t, exe)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/#status"),
		chromedp.WaitVisible(chromedp.CSS("#status-flags tbody tr")),
		chromedp.WaitVisible(chromedp.CSS("#status-store tbody tr")),
	); err != nil {
		t.Fatal(err)
	}
	status, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("page-status")))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ready", "yes", "strata_wal_bytes_written_total", "listen-address", "goroutineCount"} {
		if !strings.Contains(status, want) {
			t.Errorf("status page lacks %q", want)
		}
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/#cardinality"),
		chromedp.WaitVisible(chromedp.CSS("#card-metrics tbody tr")),
	); err != nil {
		t.Fatal(err)
	}
	card, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("card-metrics")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(card, "up") {
		t.Errorf("cardinality lists %q, want up", card)
	}
	for _, p := range problems() {
		t.Error(p)
	}
}

// openBrowser starts a headless Chromium at exe for the test, and
// returns its context and what reports the console errors, warnings and
// uncaught exceptions seen so far.
func openBrowser(t *testing.T, exe string) (context.Context, func() []string) {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.WindowSize(1280, 900))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	ctx, cancel = context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(cancel)
	var (
		mu       sync.Mutex
		problems []string
	)
	err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning {
				var args []string
				for _, a := range e.Args {
					args = append(args, string(a.Value))
				}
				problems = append(problems, fmt.Sprintf("console %s: %s", e.Type, strings.Join(args, " ")))
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, fmt.Sprintf("exception: %s at %s:%d", e.ExceptionDetails.Text, e.ExceptionDetails.URL, e.ExceptionDetails.LineNumber))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(problems)
	}
}
