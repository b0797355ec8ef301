package server

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	config_util "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// startServer runs a server on a free port over a new data directory
// until the test ends, and returns its base URL.
func startServer(t *testing.T, tweak func(*Config)) string {
	t.Helper()
	return startServerWith(t, "http", http.DefaultClient, nil, tweak)
}

// startServerWith is startServer for a server reached over scheme with
// client, its requests given auth.
func startServerWith(t *testing.T, scheme string, client *http.Client, auth func(*http.Request), tweak func(*Config)) string {
	t.Helper()
	cfg := DefaultConfig()
	cfg.ListenAddress = "127.0.0.1:0"
	cfg.DataDir = t.TempDir()
	// Tests that scrape say so: a scrape's series would add to what the
	// others count.
	cfg.SelfScrape = false
	cfg.ScrapeDiscoveryInterval = 100 * time.Millisecond
	if tweak != nil {
		tweak(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, func(a net.Addr) { addr <- a }) }()
	var base string
	select {
	case a := <-addr:
		base = scheme + "://" + a.String()
	case err := <-done:
		t.Fatalf("server: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; {
		req, _ := http.NewRequest(http.MethodGet, base+"/-/ready", nil)
		if auth != nil {
			auth(req)
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("server not ready: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return base
}

// remoteWrite sends req to the server as remote-write 1.0.
func remoteWrite(t *testing.T, base string, req *prompb.WriteRequest) {
	t.Helper()
	b, err := req.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	hr, _ := http.NewRequest(http.MethodPost, base+"/api/v1/write", bytes.NewReader(snappy.Encode(nil, b)))
	hr.Header.Set("Content-Encoding", "snappy")
	hr.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("remote-write: status %d", resp.StatusCode)
	}
}

// TestRemoteRead writes float and native histogram series by
// remote-write and reads them back with Prometheus' own remote-read
// client, sampled and streamed: the same samples, in chunks of
// Prometheus' encodings when streamed.
func TestRemoteRead(t *testing.T) {
	base := startServer(t, nil)
	const n = 500 // more than one 120-sample chunk per series
	t0 := time.Now().Add(-time.Hour).Truncate(time.Minute).UnixMilli()
	req := &prompb.WriteRequest{}
	for s := range 3 {
		ts := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "requests_total"}, {Name: "job", Value: fmt.Sprint("j", s)}}}
		for i := range n {
			ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: t0 + int64(i)*1000, Value: float64(i*s) + 0.5})
		}
		req.Timeseries = append(req.Timeseries, ts)
	}
	hist := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "latency"}, {Name: "job", Value: "j0"}}}
	for i := range n {
		h := &histogram.Histogram{Count: uint64(3 + i), Sum: float64(i), Schema: 1, ZeroThreshold: 0.001, ZeroCount: 1,
			PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []int64{1, int64(i)}}
		hist.Histograms = append(hist.Histograms, prompb.FromIntHistogram(t0+int64(i)*1000, h))
	}
	req.Timeseries = append(req.Timeseries, hist)
	remoteWrite(t, base, req)

	u, err := url.Parse(base + "/api/v1/read")
	if err != nil {
		t.Fatal(err)
	}
	for _, types := range [][]prompb.ReadRequest_ResponseType{
		{prompb.ReadRequest_SAMPLES},
		{prompb.ReadRequest_STREAMED_XOR_CHUNKS},
	} {
		t.Run(types[0].String(), func(t *testing.T) {
			c, err := remote.NewReadClient("strata", &remote.ClientConfig{
				URL: &config_util.URL{URL: u}, Timeout: model.Duration(10 * time.Second),
				ChunkedReadLimit: 1 << 30, AcceptedResponseTypes: types,
			})
			if err != nil {
				t.Fatal(err)
			}
			q, err := remote.ToQuery(t0, t0+int64(n)*1000, []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "__name__", "requests_total|latency")}, nil)
			if err != nil {
				t.Fatal(err)
			}
			ss, err := c.Read(context.Background(), q, true)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int{}
			var it chunkenc.Iterator
			for ss.Next() {
				s := ss.At()
				name := s.Labels().String()
				it = s.Iterator(it)
				i := 0
				for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
					switch vt {
					case chunkenc.ValFloat:
						ts, v := it.At()
						var job int
						fmt.Sscanf(s.Labels().Get("job"), "j%d", &job)
						if ts != t0+int64(i)*1000 || v != float64(i*job)+0.5 {
							t.Fatalf("%s sample %d: %d %g", name, i, ts, v)
						}
					case chunkenc.ValHistogram:
						ts, h := it.AtHistogram(nil)
						if ts != t0+int64(i)*1000 || h.Count != uint64(3+i) || h.Sum != float64(i) {
							t.Fatalf("%s sample %d: %d %v", name, i, ts, h)
						}
					default:
						t.Fatalf("%s: value type %s", name, vt)
					}
					i++
				}
				if it.Err() != nil {
					t.Fatal(it.Err())
				}
				got[name] = i
			}
			if err := ss.Err(); err != nil {
				t.Fatal(err)
			}
			if len(got) != 4 {
				t.Fatalf("%d series read, want 4: %v", len(got), got)
			}
			for name, c := range got {
				if c != n {
					t.Errorf("%s: %d samples, want %d", name, c, n)
				}
			}
		})
	}
}

// TestRemoteReadLimits refuses a sampled read over the sample limit, and
// a body that is not a read request.
func TestRemoteReadLimits(t *testing.T) {
	base := startServer(t, func(c *Config) { c.RemoteRead.MaxSamples = 10 })
	t0 := time.Now().Add(-time.Hour).UnixMilli()
	ts := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "x"}}}
	for i := range 20 {
		ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: t0 + int64(i)*1000, Value: 1})
	}
	remoteWrite(t, base, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{ts}})
	u, _ := url.Parse(base + "/api/v1/read")
	c, err := remote.NewReadClient("strata", &remote.ClientConfig{URL: &config_util.URL{URL: u}, Timeout: model.Duration(10 * time.Second),
		AcceptedResponseTypes: []prompb.ReadRequest_ResponseType{prompb.ReadRequest_SAMPLES}})
	if err != nil {
		t.Fatal(err)
	}
	q, _ := remote.ToQuery(t0, t0+20_000, []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "x")}, nil)
	if _, err := c.Read(context.Background(), q, false); err == nil {
		t.Error("a read over the sample limit succeeded")
	}
	resp, err := http.Post(base+"/api/v1/read", "application/x-protobuf", bytes.NewReader([]byte("not snappy")))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("garbage body: status %d, want 400", resp.StatusCode)
	}
}
