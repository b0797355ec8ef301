package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/prompb"
)

// proc is a strata process started by a test.
type proc struct {
	t    *testing.T
	bin  string
	dir  string
	addr string
	args []string // more flags
	cmd  *exec.Cmd
	logs bytes.Buffer
}

// buildBinary builds cmd/strata into a temporary directory.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "strata")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("build strata: %v\n%s", err, out)
	}
	return bin
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func (s *proc) start() {
	s.t.Helper()
	s.logs.Reset()
	// No OTLP/gRPC on its default port unless a test asks: a collector
	// on this machine may have it. No self-scrape: its series would add
	// to those the tests count.
	s.cmd = exec.Command(s.bin, append([]string{"--listen-address", s.addr, "--data-dir", s.dir, "--log.level", "debug", "--otlp.grpc-listen-address=", "--self-scrape=false"}, s.args...)...)
	s.cmd.Stdout = &s.logs
	s.cmd.Stderr = &s.logs
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			s.cmd.Process.Kill()
			s.cmd.Wait()
		}
	})
	// Poll readiness with a deadline: replay time depends on the machine.
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get("http://" + s.addr + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("strata not ready after 60s; logs:\n%s", s.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *proc) kill() {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		s.t.Fatal(err)
	}
	s.cmd.Wait()
}

func (s *proc) stop() {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		s.t.Fatal(err)
	}
	if err := s.cmd.Wait(); err != nil {
		s.t.Fatalf("strata exited with %v; logs:\n%s", err, s.logs.String())
	}
}

func (s *proc) write(req *prompb.WriteRequest) (int, string) {
	s.t.Helper()
	code, body, err := s.send(req)
	if err != nil {
		s.t.Fatal(err)
	}
	return code, body
}

// tryWrite sends a write and returns its status, or the error if the
// request did not complete; safe to call from any goroutine.
func (s *proc) tryWrite(req *prompb.WriteRequest) (int, error) {
	code, _, err := s.send(req)
	return code, err
}

func (s *proc) send(req *prompb.WriteRequest) (int, string, error) {
	pb, err := req.Marshal()
	if err != nil {
		return 0, "", err
	}
	hreq, _ := http.NewRequest(http.MethodPost, "http://"+s.addr+"/api/v1/write", bytes.NewReader(snappy.Encode(nil, pb)))
	hreq.Header.Set("Content-Type", "application/x-protobuf")
	hreq.Header.Set("Content-Encoding", "snappy")
	hreq.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// get returns the status and body of an API request.
func (s *proc) get(path string, params url.Values) (int, []byte) {
	s.t.Helper()
	resp, err := http.Get("http://" + s.addr + path + "?" + params.Encode())
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return resp.StatusCode, body
}

const (
	e2eSeries   = 300
	e2eSamples  = 40
	e2eInterval = 15000 // ms
	e2eStart    = int64(1_700_000_000_000)
)

// e2eRequests are the writes of the end-to-end test: e2eSeries counters
// that grow by 10 every interval, sent in four requests split by time.
func e2eRequests() []*prompb.WriteRequest {
	var reqs []*prompb.WriteRequest
	for part := range 4 {
		req := &prompb.WriteRequest{}
		for i := range e2eSeries {
			ts := prompb.TimeSeries{Labels: []prompb.Label{
				{Name: "__name__", Value: "http_requests_total"},
				{Name: "instance", Value: fmt.Sprintf("host-%03d", i)},
				{Name: "job", Value: []string{"api", "db", "web"}[i%3]},
			}}
			for j := part * e2eSamples / 4; j < (part+1)*e2eSamples/4; j++ {
				ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: e2eStart + int64(j)*e2eInterval, Value: float64(i + 10*j)})
			}
			req.Timeseries = append(req.Timeseries, ts)
		}
		// Native histograms: per job, one observation of 0.1 s and one
		// of 3 s every interval.
		for i, job := range []string{"api", "db", "web"} {
			ts := prompb.TimeSeries{Labels: []prompb.Label{
				{Name: "__name__", Value: "http_request_duration_seconds"},
				{Name: "job", Value: job},
			}}
			for j := part * e2eSamples / 4; j < (part+1)*e2eSamples/4; j++ {
				n := int64(j + i)
				h := &histogram.Histogram{Schema: 0, ZeroThreshold: 1e-128, Count: uint64(2 * n), Sum: 3.1 * float64(n),
					// Buckets (0.0625,0.125] and (2,4]: indexes -3 and 2.
					PositiveSpans: []histogram.Span{{Offset: -3, Length: 1}, {Offset: 4, Length: 1}}, PositiveBuckets: []int64{n, 0}}
				ts.Histograms = append(ts.Histograms, prompb.FromIntHistogram(e2eStart+int64(j)*e2eInterval, h))
			}
			req.Timeseries = append(req.Timeseries, ts)
		}
		reqs = append(reqs, req)
	}
	return reqs
}

// TestEndToEndCrashRecovery writes through remote-write, queries over the
// HTTP API, kills the process with SIGKILL, restarts it and expects the
// same answers; then it stops it cleanly and checks again. With 2 minute
// blocks, the 10 minutes of data go to blocks when the restarted server
// compacts its head, so the answers after the restart come from blocks
// and the head together.
func TestEndToEndCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server")
	}
	s := &proc{t: t, bin: buildBinary(t), dir: t.TempDir(), addr: freeAddr(t), args: []string{"--storage.block-duration", "2m"}}
	s.start()

	for i, req := range e2eRequests() {
		if code, body := s.write(req); code != http.StatusNoContent {
			t.Fatalf("write %d: status %d: %s", i, code, body)
		}
	}

	end := e2eStart + (e2eSamples-1)*e2eInterval
	evalTime := strconv.FormatFloat(float64(end)/1000, 'f', 3, 64)
	queries := []struct {
		path   string
		params url.Values
		check  func(t *testing.T, data json.RawMessage)
	}{
		{"/api/v1/query", url.Values{"query": {"count(http_requests_total)"}, "time": {evalTime}},
			scalarVector(e2eSeries)},
		{"/api/v1/query", url.Values{"query": {"sum(http_requests_total)"}, "time": {evalTime}},
			// sum over i of (i + 10*(e2eSamples-1))
			scalarVector(float64(e2eSeries*(e2eSeries-1)/2 + e2eSeries*10*(e2eSamples-1)))},
		{"/api/v1/query", url.Values{"query": {"sum(rate(http_requests_total[5m]))"}, "time": {evalTime}},
			// every series grows by 10 per 15s
			scalarVector(float64(e2eSeries) * 10 / 15)},
		{"/api/v1/query", url.Values{"query": {`sum by (job) (http_requests_total{job=~"api|db"})`}, "time": {evalTime}},
			vectorLen(2)},
		{"/api/v1/query_range", url.Values{"query": {"count(http_requests_total)"},
			"start": {strconv.FormatInt(e2eStart/1000, 10)}, "end": {evalTime}, "step": {"60"}},
			matrixPoints(1, 10)},
		{"/api/v1/series", url.Values{"match[]": {`http_requests_total{job="web"}`},
			"start": {strconv.FormatInt(e2eStart/1000, 10)}, "end": {evalTime}},
			arrayLen(e2eSeries / 3)},
		{"/api/v1/label/job/values", nil, arrayLen(3)},
		{"/api/v1/query", url.Values{"query": {"sum(histogram_count(rate(http_request_duration_seconds[5m])))"}, "time": {evalTime}},
			// three series gaining 2 observations per 15s
			scalarVector(3 * 2.0 / 15)},
		{"/api/v1/query", url.Values{"query": {`histogram_quantile(1, http_request_duration_seconds{job="db"})`}, "time": {evalTime}},
			// the upper bound of the highest bucket with observations
			scalarVector(4)},
		{"/api/v1/query", url.Values{"query": {"http_request_duration_seconds"}, "time": {evalTime}},
			vectorLen(3)},
	}
	answers := func() [][]byte {
		var out [][]byte
		for _, q := range queries {
			code, body := s.get(q.path, q.params)
			if code != http.StatusOK {
				t.Fatalf("%s %v: status %d: %s", q.path, q.params, code, body)
			}
			var resp struct {
				Status string          `json:"status"`
				Data   json.RawMessage `json:"data"`
			}
			if err := json.Unmarshal(body, &resp); err != nil || resp.Status != "success" {
				t.Fatalf("%s %v: %s (%v)", q.path, q.params, body, err)
			}
			t.Run(q.path+" "+q.params.Get("query")+q.params.Get("match[]"), func(t *testing.T) { q.check(t, resp.Data) })
			out = append(out, body)
		}
		return out
	}
	before := answers()

	s.kill()
	s.start()
	after := answers()
	for i := range before {
		if !bytes.Equal(before[i], after[i]) {
			t.Fatalf("query %d differs after kill -9 and restart:\nbefore %s\nafter  %s", i, before[i], after[i])
		}
	}

	// More writes after the restart land too, and a clean stop keeps them.
	more := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{
		Labels:  []prompb.Label{{Name: "__name__", Value: "after_restart"}},
		Samples: []prompb.Sample{{Timestamp: end, Value: 42}},
	}}}
	if code, body := s.write(more); code != http.StatusNoContent {
		t.Fatalf("write after restart: %d %s", code, body)
	}
	s.stop()
	s.start()
	code, body := s.get("/api/v1/query", url.Values{"query": {"after_restart"}, "time": {evalTime}})
	if code != http.StatusOK || !bytes.Contains(body, []byte(`"42"`)) {
		t.Fatalf("after clean restart: %d %s", code, body)
	}
	if !bytes.Equal(before[0], answers()[0]) {
		t.Fatal("answers changed after clean restart")
	}

	// The head's cardinality, in Prometheus' shape.
	code, body = s.get("/api/v1/status/tsdb", url.Values{"limit": {"1"}})
	var status struct {
		Data struct {
			HeadStats struct {
				NumSeries int `json:"numSeries"`
			} `json:"headStats"`
			SeriesCountByMetricName []struct {
				Name  string `json:"name"`
				Value int    `json:"value"`
			} `json:"seriesCountByMetricName"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &status); code != http.StatusOK || err != nil {
		t.Fatalf("/api/v1/status/tsdb: %d %s (%v)", code, body, err)
	}
	if st := status.Data; st.HeadStats.NumSeries != e2eSeries+4 || len(st.SeriesCountByMetricName) != 1 ||
		st.SeriesCountByMetricName[0].Name != "http_requests_total" || st.SeriesCountByMetricName[0].Value != e2eSeries {
		t.Errorf("/api/v1/status/tsdb: %s", body)
	}

	// The blocks, listed while the server runs.
	out, err := exec.Command(s.bin, "tsdb", "list", "--data-dir", s.dir, "--human=false").CombinedOutput()
	if err != nil {
		t.Fatalf("strata tsdb list: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "BLOCK ULID") {
		t.Fatalf("strata tsdb list: want a header and blocks, got\n%s", out)
	}
	for _, l := range lines[1:] {
		// ULID, min time, max time, duration, series, samples, chunks,
		// bytes, level
		if f := strings.Fields(l); len(f) != 9 || f[4] != fmt.Sprint(e2eSeries+3) {
			t.Errorf("strata tsdb list line %q: want 9 fields and %d series", l, e2eSeries+3)
		}
	}
	out, err = exec.Command(s.bin, "tsdb", "analyze", "--data-dir", s.dir, "--limit", "3").CombinedOutput()
	if err != nil {
		t.Fatalf("strata tsdb analyze: %v\n%s", err, out)
	}
	for _, want := range []string{
		fmt.Sprintf("%10d http_requests_total\n", e2eSeries),
		fmt.Sprintf("%10d instance\n", e2eSeries),
		fmt.Sprintf("%10d job=api\n", e2eSeries/3+1),
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("strata tsdb analyze: no line %q in\n%s", want, out)
		}
	}
}

// TestServerRejectsBadFlags checks that a bad flag is reported, not
// ignored.
func TestServerRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--log.level", "loud"},
		{"--query.timeout", "-1s"},
		{"--query.range-parallelism", "0"},
		{"--query.engine", "vectorised"},
		{"--query.max-concurrency", "-1"},
		{"--no-such-flag"},
		{"extra-arg"},
		{"--wal.sync", "sometimes"},
		{"--storage.block-duration", "10s"},
		{"--storage.block-duration", "2h", "--storage.max-block-duration", "1h"},
		{"--retention.time", "15 days"},
		{"--storage.out-of-order-window", "soon"},
		{"--storage.out-of-order-window", "-30m"},
		{"--retention.size", "10XB"},
		{"--retention.size", "-5"},
		{"--otlp.translation-strategy", "Underscores"},
		{"--otlp.delta", "cumulative-please"},
		{"--otlp.delta.max-stale", "0s"},
		{"--otlp.delta.max-streams", "-1"},
		{"--otlp.max-request-bytes", "0"},
		{"--otlp.promote-resource-attributes", "a", "--otlp.promote-all-resource-attributes"},
		{"--otlp.ignore-resource-attributes", "a"},
		{"--otlp.promote-resource-attributes", "a,b,a"},
		{"--auto-gomemlimit.ratio", "0"},
		{"--auto-gomemlimit.ratio", "1.5"},
		{"--auto-gomemlimit.ratio", "NaN"},
		{"--external-label", "replica"},
		{"--external-label", "replica="},
		{"--external-label", "=a"},
		{"--external-label", "__name__=up"},
		{"--external-label", "__replica__=a"},
		{"--external-label", "region=eu", "--external-label", "region=us"},
		{"--external-label", "region=\xff"},
		{"--store.limits.request-series", "-1"},
		{"--store.limits.request-chunks", "-5"},
		{"--wal.checkpoint-bytes", "1024"},
	} {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("parseFlags(%q) accepted", args)
		}
	}
	cfg, err := parseFlags([]string{"--enable-feature=promql-experimental-functions,promql-duration-expr", "--enable-feature", "promql-delayed-name-removal,nope,use-start-timestamps"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.memLimitRatio != 0.9 {
		t.Errorf("GOMEMLIMIT ratio %g by default, want 0.9", cfg.memLimitRatio)
	}
	for args, want := range map[[2]string]float64{{"--auto-gomemlimit.ratio", "0.5"}: 0.5, {"--auto-gomemlimit=false", "--auto-gomemlimit.ratio=0.5"}: 0} {
		if c, err := parseFlags(args[:], io.Discard); err != nil || c.memLimitRatio != want {
			t.Errorf("parseFlags(%q): ratio %g, %v; want %g", args, c.memLimitRatio, err, want)
		}
	}
	if !cfg.server.ParserOptions.EnableExperimentalFunctions || !cfg.server.ParserOptions.ExperimentalDurationExpr || !cfg.server.DelayedNameRemoval ||
		!cfg.server.UseStartTimestamps || cfg.server.ParserOptions.EnableExtendedRangeSelectors || len(cfg.unknownFeatures) != 1 {
		t.Fatalf("features parsed wrong: %+v", cfg)
	}
	cfg, err = parseFlags([]string{"--retention.time", "30d", "--retention.size", "512MB", "--storage.block-duration", "1h", "--storage.out-of-order-window", "30m"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if sc := cfg.server; sc.RetentionTime != 30*24*time.Hour || sc.RetentionSize != 512<<20 || sc.BlockDuration != time.Hour || sc.OutOfOrderWindow != 30*time.Minute {
		t.Errorf("storage flags parsed wrong: %s %d %s %s", sc.RetentionTime, sc.RetentionSize, sc.BlockDuration, sc.OutOfOrderWindow)
	}
	if f := cfg.server.Flags; f["storage.out-of-order-window"] != "30m" || f["retention.size"] != "512MB" || f["listen-address"] == "" {
		t.Errorf("flags for /api/v1/status/flags: %v", f)
	}
	cfg, err = parseFlags([]string{"--external-label", "replica=a", "--external-label", "cluster=eu-1=blue", "--external-label", "k8s.region=west"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.server.ExternalLabels.String(); got != `{cluster="eu-1=blue", "k8s.region"="west", replica="a"}` {
		t.Errorf("external labels %s", got)
	}
	cfg, err = parseFlags([]string{"--otlp.translation-strategy", "NoUTF8EscapingWithSuffixes", "--otlp.promote-resource-attributes", " k8s.pod.name, region ",
		"--otlp.delta", "as-is", "--otlp.promote-scope-metadata", "--otlp.convert-histograms-to-nhcb"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o := cfg.server.OTLP; o.Translation.TranslationStrategy != "NoUTF8EscapingWithSuffixes" || !slices.Equal(o.Translation.PromoteResourceAttributes, []string{"k8s.pod.name", "region"}) ||
		o.Delta != "as-is" || !o.Translation.PromoteScopeMetadata || !o.Translation.ConvertHistogramsToNHCB || o.Translation.PromoteAllResourceAttributes {
		t.Errorf("OTLP flags parsed wrong: %+v", o)
	}
}

type vectorResult struct {
	ResultType string `json:"resultType"`
	Result     []struct {
		Metric map[string]string `json:"metric"`
		Value  [2]any            `json:"value"`
		Values [][2]any          `json:"values"`
	} `json:"result"`
}

func scalarVector(want float64) func(*testing.T, json.RawMessage) {
	return func(t *testing.T, data json.RawMessage) {
		var r vectorResult
		if err := json.Unmarshal(data, &r); err != nil || r.ResultType != "vector" || len(r.Result) != 1 {
			t.Fatalf("want a one-element vector, got %s", data)
		}
		got, err := strconv.ParseFloat(r.Result[0].Value[1].(string), 64)
		if err != nil || math.Abs(got-want) > 1e-9*math.Abs(want) {
			t.Fatalf("got %s, want %v", data, want)
		}
	}
}

func vectorLen(n int) func(*testing.T, json.RawMessage) {
	return func(t *testing.T, data json.RawMessage) {
		var r vectorResult
		if err := json.Unmarshal(data, &r); err != nil || r.ResultType != "vector" || len(r.Result) != n {
			t.Fatalf("want %d elements, got %s", n, data)
		}
	}
}

func matrixPoints(series, points int) func(*testing.T, json.RawMessage) {
	return func(t *testing.T, data json.RawMessage) {
		var r vectorResult
		if err := json.Unmarshal(data, &r); err != nil || r.ResultType != "matrix" || len(r.Result) != series {
			t.Fatalf("want %d series, got %s", series, data)
		}
		if len(r.Result[0].Values) != points {
			t.Fatalf("want %d points, got %s", points, data)
		}
	}
}

func arrayLen(n int) func(*testing.T, json.RawMessage) {
	return func(t *testing.T, data json.RawMessage) {
		var r []any
		if err := json.Unmarshal(data, &r); err != nil || len(r) != n {
			t.Fatalf("want %d entries, got %s", n, data)
		}
	}
}
