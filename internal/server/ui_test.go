package server

import (
	"context"
	"fmt"
	"net/url"
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

// firstPanel selects the query page's first panel.
const firstPanel = ".panel:nth-child(1)"

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
	step(chromedp.WaitVisible(chromedp.CSS(firstPanel + " .expr-input")))
	title := str(chromedp.Title())
	// Completion: once the page has the names, part of one, then Tab
	// takes the suggestion.
	for deadline := time.Now().Add(10 * time.Second); num(`names.metrics.length`) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the page did not load the metric names")
		}
		time.Sleep(10 * time.Millisecond)
	}
	step(chromedp.SendKeys(chromedp.CSS(firstPanel+" .expr-input"), "ui_req"))
	step(chromedp.WaitVisible(chromedp.CSS(firstPanel + " .suggest li")))
	if got := str(chromedp.Text(chromedp.CSS(firstPanel + " .suggest li"))); got != "ui_requests_total" {
		t.Errorf("first suggestion %q, want ui_requests_total", got)
	}
	step(chromedp.SendKeys(chromedp.CSS(firstPanel+" .expr-input"), "\t"))
	if got := str(chromedp.Evaluate[string](`document.querySelector(".panel .expr-input").value`)); got != "ui_requests_total" {
		t.Fatalf("after Tab the query is %q", got)
	}
	step(chromedp.Click(chromedp.CSS(firstPanel + " .run")))
	step(chromedp.WaitVisible(chromedp.CSS(firstPanel + " .graph .uplot canvas")))
	toGraph := num(`performance.now()`)
	legend := num(`document.querySelectorAll(".panel .legend div").length`)
	// The page's own files, and the answers of the API it read.
	transfer := num(`performance.getEntriesByType("navigation").concat(performance.getEntriesByType("resource")).filter((e) => !e.name.includes("/api/")).reduce((n, e) => n + (e.transferSize || e.encodedBodySize || 0), 0)`)
	answers := num(`performance.getEntriesByType("resource").filter((e) => e.name.includes("/api/")).reduce((n, e) => n + (e.transferSize || e.encodedBodySize || 0), 0)`)
	queryInfo := str(chromedp.Text(chromedp.CSS(firstPanel + " .query-info")))
	step(chromedp.Click(chromedp.CSS(firstPanel + " input.mode[value=table]")))
	step(chromedp.Click(chromedp.CSS(firstPanel + " .run")))
	step(chromedp.WaitVisible(chromedp.CSS(firstPanel + " table.result tbody tr")))
	rows := num(`document.querySelectorAll(".panel table.result tbody tr").length`)
	first := str(chromedp.Text(chromedp.CSS(firstPanel + " table.result tbody tr td")))
	if path := os.Getenv("STRATA_UI_SCREENSHOT"); path != "" {
		// The README's picture: the graph of a few series.
		num(`(document.querySelector(".panel .expr-input").value = "ui_requests_total{pod=~\"pod-000[1-6]\"}", 1)`)
		step(chromedp.Click(chromedp.CSS(firstPanel + " input.mode[value=graph]")))
		step(chromedp.Click(chromedp.CSS(firstPanel + " .run")))
		step(chromedp.WaitVisible(chromedp.CSS(firstPanel + " .graph .uplot canvas")))
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

// TestUIStatusInBrowser opens the Status, Cardinality and TSDB pages:
// the store's readiness, the WAL's figures and the flags are shown, the
// cardinality tables are filled, and the head, compactions, retention
// and blocks are shown, with no console error.
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
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/#tsdb"),
		chromedp.WaitVisible(chromedp.CSS("#tsdb-compaction tbody tr")),
	); err != nil {
		t.Fatal(err)
	}
	tsdb, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("page-tsdb")))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"series\t1", "retention", "compactions failed", "No blocks yet"} {
		if !strings.Contains(tsdb, want) {
			t.Errorf("TSDB page lacks %q:\n%s", want, tsdb)
		}
	}
	for _, p := range problems() {
		t.Error(p)
	}
}

// TestUIPanelsInBrowser opens a link in the forms of Prometheus' UIs
// with two panels and checks that each takes its expression, tab, range,
// end and step from it and runs; that a panel added goes into the URL,
// that a reload brings all three back, and that removing one leaves the
// others in order, with no console error.
func TestUIPanelsInBrowser(t *testing.T) {
	exe := browser(t)
	base := startServer(t, nil)
	end := time.Now().Truncate(time.Minute)
	req := &prompb.WriteRequest{}
	for _, name := range []string{"ui_a", "ui_b"} {
		ts := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: name}, {Name: "k", Value: "1"}}}
		for i := range 30 {
			ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: end.Add(-time.Duration(30-i) * time.Minute).UnixMilli(), Value: float64(i)})
		}
		req.Timeseries = append(req.Timeseries, ts)
	}
	remoteWrite(t, base, req)
	endInput := end.UTC().Format("2006-01-02 15:04:05")
	// The first panel as Prometheus' first UI wrote them, the second as
	// its second does (/query, res_step over step_input).
	link := base + "/query?" + url.Values{
		"g0.expr": {"ui_a"}, "g0.tab": {"1"},
		"g1.expr": {"ui_b"}, "g1.tab": {"graph"}, "g1.range_input": {"30m"}, "g1.end_input": {endInput}, "g1.moment_input": {endInput},
		"g1.step_input": {"15"}, "g1.res_type": {"fixed"}, "g1.res_step": {"60"}, "g1.show_tree": {"0"}, "g1.display_mode": {"lines"},
	}.Encode()

	ctx, problems := openBrowser(t, exe)
	do := func(actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatal(err)
		}
	}
	str := func(expr string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	panel := func(i int) string { return fmt.Sprintf(".panel:nth-child(%d)", i) }
	param := func(name string) string { return str(`new URLSearchParams(location.search).get("` + name + `") || ""`) }
	do(chromedp.Navigate(link),
		chromedp.WaitVisible(chromedp.CSS(panel(1)+" table.result tbody tr")),
		chromedp.WaitVisible(chromedp.CSS(panel(2)+" .graph .uplot canvas")))
	if got := str(`String(document.querySelectorAll(".panel").length)`); got != "2" {
		t.Fatalf("%s panels from the link, want 2", got)
	}
	if got := str(`document.querySelector("` + panel(1) + ` table.result td").textContent`); got != `ui_a{k="1"}` {
		t.Errorf("first panel's table starts with %q", got)
	}
	for sel, want := range map[string]string{
		panel(1) + " input.mode[value=table]": "true", panel(2) + " input.mode[value=graph]": "true",
	} {
		if got := str(`String(document.querySelector("` + sel + `").checked)`); got != want {
			t.Errorf("%s checked: %s", sel, got)
		}
	}
	for sel, want := range map[string]string{panel(2) + " .range": "30m", panel(2) + " .step": "60", panel(2) + " .expr-input": "ui_b"} {
		if got := str(`document.querySelector("` + sel + `").value`); got != want {
			t.Errorf("%s is %q, want %q", sel, got, want)
		}
	}
	// The graph spans the link's 30 minutes up to its end, at its step.
	if got := str(`String(panels[1].plot.data[0].length)`); got != "31" {
		t.Errorf("second panel's graph has %s steps, want 31", got)
	}
	if got := param("g1.end_input"); got != endInput {
		t.Errorf("g1.end_input in the URL is %q, want %q", got, endInput)
	}

	do(chromedp.Click(chromedp.ID("add-panel")),
		chromedp.WaitVisible(chromedp.CSS(panel(3)+" .expr-input")))
	str(`document.querySelector("` + panel(3) + ` .expr-input").value = "sum(ui_a)"`)
	do(chromedp.Click(chromedp.CSS(panel(3)+" .run")),
		chromedp.WaitVisible(chromedp.CSS(panel(3)+" .graph .uplot canvas")))
	if got := param("g2.expr"); got != "sum(ui_a)" {
		t.Errorf("g2.expr in the URL is %q", got)
	}
	if got := param("g1.range_input") + " " + param("g0.tab"); got != "30m 1" {
		t.Errorf("the URL lost the first panels' state: %q", got)
	}

	do(chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS(panel(3)+" .graph .uplot canvas")),
		chromedp.WaitVisible(chromedp.CSS(panel(1)+" table.result tbody tr")))
	do(chromedp.Click(chromedp.CSS(panel(1) + " .remove")))
	if got := param("g0.expr") + "|" + param("g1.expr") + "|" + param("g2.expr"); got != "ui_b|sum(ui_a)|" {
		t.Errorf("after removing the first panel the URL holds %q", got)
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
