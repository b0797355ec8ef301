package otlp

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/bench/workload"
	"github.com/strata-db/strata/internal/storage"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// BenchmarkHandler measures a request from its body to the store:
// decode, translation and append of 1000 streams of a sum with 10
// attributes each, every request a new point of each stream; deltas go
// through the conversion to cumulative too. Encoding the next request is
// outside the timer.
//
//	go test ./internal/ingest/otlp -run NONE -bench BenchmarkHandler -benchmem -count=6
func BenchmarkHandler(b *testing.B) {
	for _, temporality := range []pmetric.AggregationTemporality{pmetric.AggregationTemporalityCumulative, pmetric.AggregationTemporalityDelta} {
		b.Run("temporality="+temporality.String(), func(b *testing.B) {
			benchmarkHandler(b, temporality)
		})
	}
}

func benchmarkHandler(b *testing.B, temporality pmetric.AggregationTemporality) {
	const streams = 1000
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "bench")
	rm.Resource().Attributes().PutStr("service.instance.id", "i-1")
	m := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName("requests")
	sum := m.SetEmptySum()
	sum.SetIsMonotonic(true)
	sum.SetAggregationTemporality(temporality)
	for i := range streams {
		p := sum.DataPoints().AppendEmpty()
		for a := range 10 {
			p.Attributes().PutStr(fmt.Sprintf("attr_%d", a), fmt.Sprintf("value-%d-%d", a, i%(a*10+3)))
		}
		p.Attributes().PutStr("stream", fmt.Sprint(i))
	}
	h := newHandler(b, newTestHead(b), DefaultOptions())
	at := func(n int) pcommon.Timestamp {
		return pcommon.NewTimestampFromTime(t0.Add(time.Duration(n) * 15 * time.Second))
	}
	// Request n holds points at n+1 intervals: cumulative ones started
	// at t0, deltas over the interval before.
	body := func(n int) []byte {
		for i := range sum.DataPoints().Len() {
			p := sum.DataPoints().At(i)
			p.SetTimestamp(at(n + 1))
			if temporality == pmetric.AggregationTemporalityDelta {
				p.SetStartTimestamp(at(n))
				p.SetIntValue(int64(i))
			} else {
				p.SetStartTimestamp(at(0))
				p.SetIntValue(int64(n * i))
			}
		}
		return encodeProto(b, md)
	}
	// The first request creates the series: not timed, as the steady
	// state is what is measured.
	post(h, "/v1/metrics", contentProtobuf, "", body(0))
	next := body(1)
	n := 1
	for b.Loop() {
		w := post(h, "/v1/metrics", contentProtobuf, "", next)
		if ps := response(b, w).PartialSuccess(); ps.RejectedDataPoints() > 0 || ps.ErrorMessage() != "" {
			b.Fatalf("%d points rejected: %s", ps.RejectedDataPoints(), ps.ErrorMessage())
		}
		b.StopTimer()
		n++
		next = body(n)
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64((n-1)*streams), "ns/point")
}

// BenchmarkHandlerNode measures the same on strata-bench's load: 10k
// series of node-exporter-like hosts, 56 series each in two resources
// and about 30 metrics, most of one or two points, so what is paid per
// resource and per metric counts as much as what is paid per point.
// Requests of 1250 points, uncompressed (gzip is measured apart, as the
// library's); the first round, which creates the series, is not timed.
//
//	go test ./internal/ingest/otlp -run NONE -bench BenchmarkHandlerNode -benchmem -count=6
func BenchmarkHandlerNode(b *testing.B) {
	o := workload.DefaultOptions()
	o.Series, o.SeriesPerRequest, o.Senders = 10_000, 1250, 1
	o.Start, o.Interval = t0.UnixMilli(), 15_000
	sched, err := workload.NewSchedule(o)
	if err != nil {
		b.Fatal(err)
	}
	enc := workload.NewEncoder(sched, workload.OTLPGRPC)
	var buf []byte
	body := func(q int64) []byte {
		var err error
		if buf, _, err = enc.Append(buf[:0], 0, q); err != nil {
			b.Fatal(err)
		}
		return buf
	}
	h := newHandler(b, newTestHead(b), DefaultOptions())
	perRound := int64((o.Series + o.SeriesPerRequest - 1) / o.SeriesPerRequest)
	for q := range perRound {
		post(h, "/v1/metrics", contentProtobuf, "", body(q))
	}
	q, points := perRound, 0
	next := body(q)
	for b.Loop() {
		w := post(h, "/v1/metrics", contentProtobuf, "", next)
		if ps := response(b, w).PartialSuccess(); ps.RejectedDataPoints() > 0 || ps.ErrorMessage() != "" {
			b.Fatalf("%d points rejected: %s", ps.RejectedDataPoints(), ps.ErrorMessage())
		}
		b.StopTimer()
		points += o.SeriesPerRequest
		q++
		next = body(q)
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(points), "ns/point")
}

// BenchmarkStreamMemory measures what the fast path keeps per stream:
// the heap it holds after learning 10k streams of a sum with 10
// attributes each, into a store that keeps nothing.
//
//	go test ./internal/ingest/otlp -run NONE -bench BenchmarkStreamMemory -benchtime 1x
func BenchmarkStreamMemory(b *testing.B) {
	const streams = 10_000
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "bench")
	sum := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty().SetEmptySum()
	rm.ScopeMetrics().At(0).Metrics().At(0).SetName("requests")
	sum.SetIsMonotonic(true)
	sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	for i := range streams {
		p := sum.DataPoints().AppendEmpty()
		p.SetTimestamp(pcommon.NewTimestampFromTime(t0))
		for a := range 10 {
			p.Attributes().PutStr(fmt.Sprintf("attr_%d", a), fmt.Sprintf("value-%d-%d", a, i%(a*10+3)))
		}
		p.Attributes().PutStr("stream", fmt.Sprint(i))
	}
	body := encodeProto(b, md)
	for b.Loop() {
		h := newHandler(b, discard{}, DefaultOptions())
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		post(h, "/v1/metrics", contentProtobuf, "", body)
		// Twice: the request's buffers, pooled, go with the second.
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/streams, "B/stream")
		runtime.KeepAlive(h)
	}
}

// discard is a store that keeps nothing.
type discard struct{}

func (discard) Appender(context.Context) storage.Appender { return discardApp{} }

type discardApp struct{}

func (discardApp) Append(ref storage.SeriesRef, _ labels.Labels, _ storage.Sample) (storage.SeriesRef, error) {
	return ref + 1, nil
}
func (discardApp) AppendExemplar(ref storage.SeriesRef, _ labels.Labels, _ exemplar.Exemplar) (storage.SeriesRef, error) {
	return ref, nil
}
func (discardApp) SetMetadata(string, storage.Metadata) error { return nil }
func (discardApp) Commit() error                              { return nil }
func (discardApp) Rollback() error                            { return nil }
