package remotewrite

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/strata-db/strata/internal/head"
	"github.com/strata-db/strata/internal/ingest"
)

// Benchmark shape: 1000 series of 10 labels, one sample each per request,
// the shape of a Prometheus remote-write queue shard's batch.
const (
	benchSeries = 1000
	benchLabels = 10
)

func benchLabelSets() []labels.Labels {
	out := make([]labels.Labels, benchSeries)
	for i := range out {
		out[i] = labels.FromStrings(
			"__name__", fmt.Sprintf("node_metric_%d_total", i%50), "cluster", "eu-1", "cpu", fmt.Sprint(i%16),
			"env", "prod", "instance", fmt.Sprintf("10.0.%d.%d:9100", i/250, i%250), "job", "node",
			"mode", []string{"idle", "user", "system", "iowait"}[i%4], "region", "eu-west-1", "team", "infra", "zone", "eu-west-1a")
	}
	return out
}

// benchBodies encodes n consecutive requests of the given version, the
// first being the first-th of the stream (timestamps 15s apart), with a
// float sample per series, or an integer native histogram if hist is set.
func benchBodies(version, n, first int, hist bool) [][]byte {
	lsets := benchLabelSets()
	bodies := make([][]byte, n)
	for r := range n {
		t := int64(first+r) * 15000
		var pb []byte
		if version == 1 {
			req := &prompb.WriteRequest{}
			for i, l := range lsets {
				var ls []prompb.Label
				l.Range(func(l labels.Label) { ls = append(ls, prompb.Label{Name: l.Name, Value: l.Value}) })
				ts := prompb.TimeSeries{Labels: ls}
				if hist {
					ts.Histograms = []prompb.Histogram{prompb.FromIntHistogram(t, benchHistogram(i, first+r))}
				} else {
					ts.Samples = []prompb.Sample{{Timestamp: t, Value: float64(i + r)}}
				}
				req.Timeseries = append(req.Timeseries, ts)
			}
			pb, _ = req.Marshal()
		} else {
			st := writev2.NewSymbolTable()
			req := &writev2.Request{}
			for i, l := range lsets {
				ts := writev2.TimeSeries{LabelsRefs: st.SymbolizeLabels(l, nil)}
				if hist {
					ts.Histograms = []writev2.Histogram{writev2.FromIntHistogram(0, t, benchHistogram(i, first+r))}
				} else {
					ts.Samples = []writev2.Sample{{Timestamp: t, Value: float64(i + r)}}
				}
				req.Timeseries = append(req.Timeseries, ts)
			}
			req.Symbols = st.Symbols()
			pb, _ = req.Marshal()
		}
		bodies[r] = snappy.Encode(nil, pb)
	}
	return bodies
}

// benchHistogram is the n-th histogram of series i: a request latency
// histogram of schema 3 with 20 populated buckets gaining observations.
func benchHistogram(i, n int) *histogram.Histogram {
	h := &histogram.Histogram{Schema: 3, ZeroThreshold: 1e-128,
		PositiveSpans: []histogram.Span{{Offset: -10, Length: 20}}, PositiveBuckets: make([]int64, 20)}
	prev := int64(0)
	for b := range h.PositiveBuckets {
		c := int64(n * (b%7 + i%3 + 1))
		h.PositiveBuckets[b] = c - prev
		prev = c
		h.Count += uint64(c)
		h.Sum += float64(c) * float64(b+1) / 8
	}
	return h
}

// BenchmarkWrite measures a remote-write request of float samples from
// body to commit — snappy, protobuf decoding, labels, append and the WAL
// write — against a real store, in steady state: the series exist and the
// buffers have grown. Requests are encoded before the timer starts.
//
//	go test ./internal/ingest/remotewrite -run NONE -bench BenchmarkWrite -benchmem -count=6 | tee new.txt
//	benchstat old.txt new.txt
func BenchmarkWrite(b *testing.B) {
	for _, version := range []int{1, 2} {
		b.Run(fmt.Sprintf("version=%d", version), func(b *testing.B) { benchWrite(b, version, false, false) })
	}
}

// BenchmarkWriteMetrics is BenchmarkWrite 1.0 without and with the
// receiver's counters (strata_ingest_*), for their overhead.
//
//	go test ./internal/ingest/remotewrite -run NONE -bench BenchmarkWriteMetrics -benchmem -count=6
func BenchmarkWriteMetrics(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("metrics=%v", on), func(b *testing.B) { benchWrite(b, 1, false, on) })
	}
}

// BenchmarkWriteHistograms is BenchmarkWrite with an integer native
// histogram of 20 buckets per series instead of a float sample.
//
//	go test ./internal/ingest/remotewrite -run NONE -bench BenchmarkWriteHistograms -benchmem -count=6 | tee new.txt
func BenchmarkWriteHistograms(b *testing.B) {
	for _, version := range []int{1, 2} {
		b.Run(fmt.Sprintf("version=%d", version), func(b *testing.B) { benchWrite(b, version, true, false) })
	}
}

func benchWrite(b *testing.B, version int, hist, metrics bool) {
	bodies := benchBodies(version, 240, 0, hist) // two chunks' worth per series
	opts := head.DefaultOptions()
	opts.WALDir = b.TempDir()
	opts.CheckpointMinBytes = 1 << 62
	opts.CheckpointOnClose = false
	hd, err := head.Open(opts)
	if err != nil {
		b.Fatal(err)
	}
	defer hd.Close()
	hopts := DefaultOptions()
	if metrics {
		hopts.Metrics = ingest.NewMetricVecs(prometheus.NewRegistry()).ForReceiver("remote-write")
	}
	h := NewHandler(hd, hopts)
	ct := "application/x-protobuf"
	if version == 2 {
		ct += ";proto=io.prometheus.write.v2.Request"
	}
	req := httptest.NewRequest(http.MethodPost, "/api/v1/write", nil)
	req.Header.Set("Content-Type", ct)
	req.Header.Set("Content-Encoding", "snappy")
	w := &discardWriter{h: http.Header{}}
	rd := &bytes.Reader{}
	send := func(i int) {
		rd.Reset(bodies[i%len(bodies)])
		req.Body = readCloser{rd}
		w.code = 0
		h.ServeHTTP(w, req)
		if w.code != http.StatusNoContent {
			b.Fatalf("status %d", w.code)
		}
	}
	// Warm up: create the series and grow the buffers. When the encoded
	// requests run out, the next ones continue their timestamps.
	send(0)
	i := 1
	b.ReportAllocs()
	// Encoding the next requests happens with the timer stopped; its
	// allocations are taken out of the per-sample figures.
	var before, after, m1, m2 runtime.MemStats
	var exclBytes, exclMallocs uint64
	runtime.ReadMemStats(&before)
	for b.Loop() {
		if i%len(bodies) == 0 {
			b.StopTimer()
			runtime.ReadMemStats(&m1)
			bodies = benchBodies(version, len(bodies), i, hist)
			runtime.ReadMemStats(&m2)
			exclBytes += m2.TotalAlloc - m1.TotalAlloc
			exclMallocs += m2.Mallocs - m1.Mallocs
			b.StartTimer()
		}
		send(i)
		i++
	}
	runtime.ReadMemStats(&after)
	samples := float64(b.N * benchSeries)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/samples, "ns/sample")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc-exclBytes)/samples, "B/sample")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs-exclMallocs)/samples, "allocs/sample")
}

// discardWriter is a ResponseWriter that keeps only the status.
type discardWriter struct {
	h    http.Header
	code int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(code int)        { w.code = code }

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }
