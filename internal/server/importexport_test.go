package server

import (
	"bytes"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/prompb"
)

func get(t *testing.T, u string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// TestExportImportRoundTrip exports what remote-write wrote, imports it
// into a fresh server, and checks that the second server exports the
// same lines and answers queries the same: stale markers, NaN and
// infinities included.
func TestExportImportRoundTrip(t *testing.T) {
	a := startServer(t, nil)
	t0 := time.Now().Add(-time.Hour).Truncate(time.Minute).UnixMilli()
	req := &prompb.WriteRequest{}
	for s := range 20 {
		ts := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "requests_total"}, {Name: "code", Value: "2xx"}, {Name: "pod", Value: string(rune('a' + s))}}}
		for i := range 300 {
			v := float64(i*s) + 0.25
			switch {
			case s == 1 && i == 100:
				v = math.Float64frombits(value.StaleNaN)
			case s == 2 && i == 7:
				v = math.NaN()
			case s == 3 && i == 9:
				v = math.Inf(1)
			}
			ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: t0 + int64(i)*15000, Value: v})
		}
		req.Timeseries = append(req.Timeseries, ts)
	}
	remoteWrite(t, a, req)

	code, exported := get(t, a+"/api/v1/export")
	if code != http.StatusOK || strings.Count(string(exported), "\n") != 20 {
		t.Fatalf("export: status %d, %d lines", code, strings.Count(string(exported), "\n"))
	}
	if !strings.Contains(string(exported), "null") || !strings.Contains(string(exported), `"NaN"`) || !strings.Contains(string(exported), `"Infinity"`) {
		t.Errorf("export lacks the stale marker, NaN or infinity: %.300s", exported)
	}

	b := startServer(t, nil)
	resp, err := http.Post(b+"/api/v1/import", "application/json", bytes.NewReader(exported))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("import: status %d", resp.StatusCode)
	}
	if _, again := get(t, b+"/api/v1/export"); !bytes.Equal(again, exported) {
		t.Errorf("exported again differs:\n%.500s\nwas\n%.500s", again, exported)
	}
	for _, q := range []string{`sum(rate(requests_total[5m]))`, `requests_total`, `count_over_time(requests_total[10m])`, `max by (pod) (requests_total)`} {
		v := url.Values{"query": {q}, "start": {fmtSec(t0)}, "end": {fmtSec(t0 + 300*15000)}, "step": {"30"}}
		_, ra := get(t, a+"/api/v1/query_range?"+v.Encode())
		_, rb := get(t, b+"/api/v1/query_range?"+v.Encode())
		if !bytes.Equal(ra, rb) {
			t.Errorf("%s: answers differ:\n%.300s\n%.300s", q, ra, rb)
		}
	}
	// A selection by match[] and time.
	v := url.Values{"match[]": {`requests_total{pod="c"}`}, "start": {fmtSec(t0)}, "end": {fmtSec(t0 + 9*15000)}}
	if _, sel := get(t, a+"/api/v1/export?"+v.Encode()); strings.Count(string(sel), "\n") != 1 || strings.Count(string(sel), ",") != 2+1+9+1+9 {
		t.Errorf("export of one series over 10 samples: %s", sel)
	}
}

func fmtSec(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano) }
