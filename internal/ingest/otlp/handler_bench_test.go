package otlp

import (
	"fmt"
	"testing"
	"time"

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
