package server

import (
	"context"
	"encoding/json"
	"math"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	config_util "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage/remote"
	"go.yaml.in/yaml/v2"
)

// TestThanosSidecarView checks what Thanos' sidecar reads of a server
// before it serves it to a Querier, read the way the sidecar reads it:
// the external labels from /api/v1/status/config, the oldest data from
// /metrics, a version that takes the sidecar's fast paths, and
// remote-read series with the external labels added, found by matchers
// on them, while queries see the series as stored.
func TestThanosSidecarView(t *testing.T) {
	external := labels.FromStrings("cluster", "eu-1", "replica", "a")
	base := startServer(t, func(c *Config) { c.ExternalLabels = external })

	// Nothing stored yet: Prometheus' value for an empty store.
	if got, want := lowestTimestamp(t, base), float64(math.MaxInt64/1000); got != want {
		t.Errorf("lowest timestamp %g with no data, want %g", got, want)
	}
	t0 := time.Now().Add(-time.Hour).Truncate(time.Minute).UnixMilli() + 1500
	ts := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "up"}, {Name: "job", Value: "node"}}}
	for i := range 10 {
		ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: t0 + int64(i)*15000, Value: 1})
	}
	remoteWrite(t, base, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{ts}})

	_, body := get(t, base+"/api/v1/status/config")
	var resp struct {
		Data struct {
			YAML string `json:"yaml"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Global struct {
			ExternalLabels map[string]string `yaml:"external_labels"`
		} `yaml:"global"`
	}
	if err := yaml.Unmarshal([]byte(resp.Data.YAML), &cfg); err != nil {
		t.Fatal(err)
	}
	if got := labels.FromMap(cfg.Global.ExternalLabels); !labels.Equal(got, external) {
		t.Errorf("external labels %s in\n%s", got, resp.Data.YAML)
	}

	if got, want := lowestTimestamp(t, base), float64(t0/1000); got != want {
		t.Errorf("lowest timestamp %g, want %g", got, want)
	}

	_, body = get(t, base+"/api/v1/status/buildinfo")
	var bi struct {
		Data struct {
			Version string `json:"version"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &bi); err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`^(\d+)\.(\d+)\.\d+\+strata\.[0-9A-Za-z.-]+$`).FindStringSubmatch(bi.Data.Version); m == nil {
		t.Errorf("version %q is not a Prometheus release with strata's as build metadata", bi.Data.Version)
	} else if major, _ := strconv.Atoi(m[1]); major < 3 {
		t.Errorf("version %q reads as older than the Prometheus strata is built with", bi.Data.Version)
	}

	u, err := url.Parse(base + "/api/v1/read")
	if err != nil {
		t.Fatal(err)
	}
	c, err := remote.NewReadClient("strata", &remote.ClientConfig{URL: &config_util.URL{URL: u}, Timeout: model.Duration(10 * time.Second), ChunkedReadLimit: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	read := func(ms ...*labels.Matcher) []string {
		t.Helper()
		q, err := remote.ToQuery(t0, t0+int64(10)*15000, ms, nil)
		if err != nil {
			t.Fatal(err)
		}
		ss, err := c.Read(context.Background(), q, true)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for ss.Next() {
			out = append(out, ss.At().Labels().String())
		}
		if err := ss.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	name := labels.MustNewMatcher(labels.MatchEqual, "__name__", "up")
	want := `{__name__="up", cluster="eu-1", job="node", replica="a"}`
	if got := read(name); len(got) != 1 || got[0] != want {
		t.Errorf("remote-read: %v, want %s", got, want)
	}
	if got := read(name, labels.MustNewMatcher(labels.MatchEqual, "replica", "a")); len(got) != 1 || got[0] != want {
		t.Errorf("remote-read by an external label: %v, want %s", got, want)
	}
	if got := read(name, labels.MustNewMatcher(labels.MatchEqual, "replica", "b")); len(got) != 0 {
		t.Errorf("remote-read by another replica: %v, want nothing", got)
	}

	_, body = get(t, base+"/api/v1/series?match[]=up")
	if s := string(body); !strings.Contains(s, `"job":"node"`) || strings.Contains(s, "replica") {
		t.Errorf("series as stored: %s", s)
	}
}

// lowestTimestamp returns the value of prometheus_tsdb_lowest_timestamp_seconds
// on /metrics.
func lowestTimestamp(t *testing.T, base string) float64 {
	t.Helper()
	_, body := get(t, base+"/metrics")
	m := regexp.MustCompile(`(?m)^prometheus_tsdb_lowest_timestamp_seconds (\S+)$`).FindSubmatch(body)
	if m == nil {
		t.Fatal("/metrics has no prometheus_tsdb_lowest_timestamp_seconds")
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
