package otlp

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// BenchmarkHandler measures a request from its body to the store:
// decode, translation and append of 1000 streams of a cumulative sum with
// 10 attributes each, every request a new point of each stream. Encoding
// the next request is outside the timer.
//
//	go test ./internal/ingest/otlp -run NONE -bench BenchmarkHandler -benchmem -count=6
func BenchmarkHandler(b *testing.B) {
	const streams = 1000
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "bench")
	rm.Resource().Attributes().PutStr("service.instance.id", "i-1")
	m := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName("requests")
	sum := m.SetEmptySum()
	sum.SetIsMonotonic(true)
	sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	start := pcommon.NewTimestampFromTime(t0)
	for i := range streams {
		p := sum.DataPoints().AppendEmpty()
		p.SetStartTimestamp(start)
		for a := range 10 {
			p.Attributes().PutStr(fmt.Sprintf("attr_%d", a), fmt.Sprintf("value-%d-%d", a, i%(a*10+3)))
		}
		p.Attributes().PutStr("stream", fmt.Sprint(i))
	}
	h := NewHandler(newTestHead(b), DefaultOptions())
	body := func(n int) []byte {
		ts := pcommon.NewTimestampFromTime(t0.Add(time.Duration(n+1) * 15 * time.Second))
		for i := range sum.DataPoints().Len() {
			p := sum.DataPoints().At(i)
			p.SetTimestamp(ts)
			p.SetIntValue(int64(n * i))
		}
		return encodeProto(b, md)
	}
	next := body(0)
	n := 0
	for b.Loop() {
		w := post(h, "/v1/metrics", contentProtobuf, "", next)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
		b.StopTimer()
		n++
		next = body(n)
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*streams), "ns/point")
}
