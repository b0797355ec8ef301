package otlp

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/otlptranslator"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	promchunkenc "github.com/prometheus/prometheus/tsdb/chunkenc"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/strata-db/strata/internal/head"
	"github.com/strata-db/strata/internal/ingest"
	"github.com/strata-db/strata/internal/storage"
	"github.com/strata-db/strata/internal/storage/storagetest"
)

func newTestHead(t testing.TB) *head.Head {
	t.Helper()
	opts := head.DefaultOptions()
	opts.WALDir = t.TempDir()
	opts.Stripes = 16
	h, err := head.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// newHandler returns a receiver closed with the test.
func newHandler(t testing.TB, app storage.Appendable, opts Options) *Handler {
	t.Helper()
	h, err := NewHandler(app, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// t0 is the time of the test points: a round second, as the stored
// milliseconds are.
var t0 = time.Unix(1_700_000_000, 0)

// testMetrics returns one resource with a point of every kind: the
// translation's golden input.
func testMetrics() pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	res := rm.Resource().Attributes()
	res.PutStr("service.name", "shop")
	res.PutStr("service.namespace", "prod")
	res.PutStr("service.instance.id", "i-1")
	res.PutStr("host.name", "h1")
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName("lib")
	sm.Scope().SetVersion("1.2")
	ts := pcommon.NewTimestampFromTime(t0)
	start := pcommon.NewTimestampFromTime(t0.Add(-time.Minute))

	m := sm.Metrics().AppendEmpty()
	m.SetName("queue.size")
	m.SetUnit("{item}")
	m.SetDescription("items waiting")
	p := m.SetEmptyGauge().DataPoints().AppendEmpty()
	p.Attributes().PutStr("queue", "a")
	p.SetTimestamp(ts)
	p.SetDoubleValue(3)

	m = sm.Metrics().AppendEmpty()
	m.SetName("http.requests")
	m.SetUnit("1")
	sum := m.SetEmptySum()
	sum.SetIsMonotonic(true)
	sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	p = sum.DataPoints().AppendEmpty()
	p.Attributes().PutStr("code", "200")
	p.SetStartTimestamp(start)
	p.SetTimestamp(ts)
	p.SetIntValue(42)
	ex := p.Exemplars().AppendEmpty()
	ex.SetTimestamp(ts)
	ex.SetIntValue(1)
	ex.SetTraceID(pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	ex.SetSpanID(pcommon.SpanID{1, 2, 3, 4, 5, 6, 7, 8})

	m = sm.Metrics().AppendEmpty()
	m.SetName("jobs.done")
	sum = m.SetEmptySum()
	sum.SetIsMonotonic(true)
	sum.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	p = sum.DataPoints().AppendEmpty()
	p.SetStartTimestamp(start)
	p.SetTimestamp(ts)
	p.SetIntValue(5)

	m = sm.Metrics().AppendEmpty()
	m.SetName("latency")
	m.SetUnit("s")
	hist := m.SetEmptyHistogram()
	hist.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	hp := hist.DataPoints().AppendEmpty()
	hp.SetStartTimestamp(start)
	hp.SetTimestamp(ts)
	hp.ExplicitBounds().FromRaw([]float64{0.1, 1})
	hp.BucketCounts().FromRaw([]uint64{2, 3, 1})
	hp.SetCount(6)
	hp.SetSum(4.5)

	m = sm.Metrics().AppendEmpty()
	m.SetName("size")
	m.SetUnit("By")
	eh := m.SetEmptyExponentialHistogram()
	eh.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	ep := eh.DataPoints().AppendEmpty()
	ep.SetStartTimestamp(start)
	ep.SetTimestamp(ts)
	ep.SetScale(2)
	ep.SetZeroCount(1)
	ep.Positive().SetOffset(3)
	ep.Positive().BucketCounts().FromRaw([]uint64{1, 2})
	ep.SetCount(4)
	ep.SetSum(30)

	m = sm.Metrics().AppendEmpty()
	m.SetName("rpc.duration")
	m.SetUnit("ms")
	sp := m.SetEmptySummary().DataPoints().AppendEmpty()
	sp.SetStartTimestamp(start)
	sp.SetTimestamp(ts)
	sp.SetCount(10)
	sp.SetSum(100)
	q := sp.QuantileValues().AppendEmpty()
	q.SetQuantile(0.5)
	q.SetValue(8)
	return md
}

func encodeProto(t testing.TB, md pmetric.Metrics) []byte {
	t.Helper()
	b, err := pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func encodeJSON(t testing.TB, md pmetric.Metrics) []byte {
	t.Helper()
	b, err := pmetricotlp.NewExportRequestFromMetrics(md).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func gzipped(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func post(h http.Handler, path, contentType, encoding string, body []byte) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	r.Header.Set("Content-Type", contentType)
	if encoding != "" {
		r.Header.Set("Content-Encoding", encoding)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// response decodes a 200's ExportMetricsServiceResponse.
func response(t testing.TB, w *httptest.ResponseRecorder) pmetricotlp.ExportResponse {
	t.Helper()
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	resp := pmetricotlp.NewExportResponse()
	var err error
	if w.Header().Get("Content-Type") == contentJSON {
		err = resp.UnmarshalJSON(w.Body.Bytes())
	} else {
		err = resp.UnmarshalProto(w.Body.Bytes())
	}
	if err != nil {
		t.Fatalf("decode response: %v", err)
	}
	return resp
}

// dump returns every stored sample, one line per sample: labels, time,
// value (a histogram as its count and sum).
func dump(t testing.TB, h *head.Head) []string {
	t.Helper()
	q, err := h.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ss := q.Select(context.Background(), true, nil, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
	var out []string
	for ss.Next() {
		s := ss.At()
		it := s.Iterator(nil)
		for vt := it.Next(); vt != promchunkenc.ValNone; vt = it.Next() {
			switch vt {
			case promchunkenc.ValFloat:
				ts, v := it.At()
				out = append(out, fmt.Sprintf("%s %d %g", s.Labels(), ts, v))
			default:
				ts, fh := it.AtFloatHistogram(nil)
				out = append(out, fmt.Sprintf("%s %d histogram count=%g sum=%g schema=%d", s.Labels(), ts, fh.Count, fh.Sum, fh.Schema))
			}
		}
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTranslation sends a point of every kind and checks the series
// stored, in every encoding the receiver takes, at both paths.
func TestTranslation(t *testing.T) {
	ms := t0.UnixMilli()
	id := `instance="i-1", job="prod/shop"`
	want := []string{
		fmt.Sprintf(`{__name__="http_requests_total", code="200", %s} %d 42`, id, ms),
		fmt.Sprintf(`{__name__="jobs_done_total", %s} %d 5`, id, ms),
		fmt.Sprintf(`{__name__="latency_seconds_bucket", %s, le="+Inf"} %d 6`, id, ms),
		fmt.Sprintf(`{__name__="latency_seconds_bucket", %s, le="0.1"} %d 2`, id, ms),
		fmt.Sprintf(`{__name__="latency_seconds_bucket", %s, le="1"} %d 5`, id, ms),
		fmt.Sprintf(`{__name__="latency_seconds_count", %s} %d 6`, id, ms),
		fmt.Sprintf(`{__name__="latency_seconds_sum", %s} %d 4.5`, id, ms),
		fmt.Sprintf(`{__name__="queue_size", %s, queue="a"} %d 3`, id, ms),
		fmt.Sprintf(`{__name__="rpc_duration_milliseconds", %s, quantile="0.5"} %d 8`, id, ms),
		fmt.Sprintf(`{__name__="rpc_duration_milliseconds_count", %s} %d 10`, id, ms),
		fmt.Sprintf(`{__name__="rpc_duration_milliseconds_sum", %s} %d 100`, id, ms),
		fmt.Sprintf(`{__name__="size_bytes", %s} %d histogram count=4 sum=30 schema=2`, id, ms),
		fmt.Sprintf(`{__name__="target_info", host_name="h1", %s} %d 1`, id, ms),
	}
	for _, tc := range []struct {
		name, path, ct, enc string
		body                func(testing.TB, pmetric.Metrics) []byte
	}{
		{"protobuf", "/v1/metrics", contentProtobuf, "", encodeProto},
		{"json", "/v1/metrics", contentJSON + "; charset=utf-8", "", encodeJSON},
		{"protobuf gzip", "/api/v1/otlp/v1/metrics", contentProtobuf, "gzip", func(t testing.TB, md pmetric.Metrics) []byte { return gzipped(t, encodeProto(t, md)) }},
		{"json gzip", "/api/v1/otlp/v1/metrics", contentJSON, "gzip", func(t testing.TB, md pmetric.Metrics) []byte { return gzipped(t, encodeJSON(t, md)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hd := newTestHead(t)
			h := newHandler(t, hd, DefaultOptions())
			resp := response(t, post(h, tc.path, tc.ct, tc.enc, tc.body(t, testMetrics())))
			// The delta sum becomes a cumulative one, starting at its
			// first delta.
			if ps := resp.PartialSuccess(); ps.RejectedDataPoints() != 0 || ps.ErrorMessage() != "" {
				t.Errorf("partial success: %d rejected, %q", ps.RejectedDataPoints(), ps.ErrorMessage())
			}
			if got := dump(t, hd); !slices.Equal(got, want) {
				t.Errorf("stored:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			md := hd.Metadata("http_requests_total")
			if m, ok := md["http_requests_total"]; !ok || m.Type != "counter" {
				t.Errorf("metadata of http_requests_total: %+v", md)
			}
			if m := hd.Metadata("queue_size")["queue_size"]; m.Type != "gauge" || m.Help != "items waiting" {
				t.Errorf("metadata of queue_size: %+v", m)
			}
		})
	}
}

// TestExemplarsAndStartTimes checks that a point's exemplar and start
// time are kept.
func TestExemplarsAndStartTimes(t *testing.T) {
	hd := newTestHead(t)
	h := newHandler(t, hd, DefaultOptions())
	response(t, post(h, "/v1/metrics", contentProtobuf, "", encodeProto(t, testMetrics())))
	eq, err := hd.ExemplarQuerier(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	res, err := eq.Select(math.MinInt64, math.MaxInt64, []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "http_requests_total")})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || len(res[0].Exemplars) != 1 {
		t.Fatalf("exemplars: %+v", res)
	}
	e := res[0].Exemplars[0]
	want := exemplar.Exemplar{
		Labels: labels.FromStrings("span_id", "0102030405060708", "trace_id", "0102030405060708090a0b0c0d0e0f10"),
		Value:  1, Ts: t0.UnixMilli(), HasTs: true,
	}
	if !labels.Equal(e.Labels, want.Labels) || e.Value != want.Value || e.Ts != want.Ts {
		t.Errorf("exemplar %+v, want %+v", e, want)
	}

	q, err := hd.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "http_requests_total"))
	if !ss.Next() {
		t.Fatal("no http_requests_total")
	}
	it := ss.At().Iterator(nil)
	if it.Next() == promchunkenc.ValNone {
		t.Fatal("no sample")
	}
	if st, want := it.AtST(), t0.Add(-time.Minute).UnixMilli(); st != want {
		t.Errorf("start time %d, want %d", st, want)
	}
}

// TestDeltaReject refuses deltas when told to, counting their points.
func TestDeltaReject(t *testing.T) {
	hd := newTestHead(t)
	opts := DefaultOptions()
	opts.Delta = DeltaReject
	h := newHandler(t, hd, opts)
	resp := response(t, post(h, "/v1/metrics", contentProtobuf, "", encodeProto(t, testMetrics())))
	ps := resp.PartialSuccess()
	if ps.RejectedDataPoints() != 1 || !strings.Contains(ps.ErrorMessage(), "1 of 6 data points rejected") || !strings.Contains(ps.ErrorMessage(), "jobs.done") {
		t.Errorf("partial success: %d rejected, %q; want the delta sum's one point", ps.RejectedDataPoints(), ps.ErrorMessage())
	}
	if got := len(dump(t, hd)); got != 12 {
		t.Errorf("%d samples stored, want 12: all but the delta's", got)
	}
}

// TestDeltaAsIs stores deltas as samples when told to.
func TestDeltaAsIs(t *testing.T) {
	hd := newTestHead(t)
	opts := DefaultOptions()
	opts.Delta = DeltaAsIs
	h := newHandler(t, hd, opts)
	resp := response(t, post(h, "/v1/metrics", contentProtobuf, "", encodeProto(t, testMetrics())))
	if n := resp.PartialSuccess().RejectedDataPoints(); n != 0 {
		t.Errorf("%d points rejected: %s", n, resp.PartialSuccess().ErrorMessage())
	}
	found := false
	for _, s := range dump(t, hd) {
		found = found || strings.HasPrefix(s, `{__name__="jobs_done_total"`) && strings.HasSuffix(s, " 5")
	}
	if !found {
		t.Error("the delta sum's point was not stored")
	}
}

// TestPartialSuccess checks that a point the store refuses is counted and
// explained while the others of the request are kept.
func TestPartialSuccess(t *testing.T) {
	hd := newTestHead(t)
	h := newHandler(t, hd, DefaultOptions())
	gauge := func(name string, at time.Time, v float64) pmetric.Metrics {
		md := pmetric.NewMetrics()
		m := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
		m.SetName(name)
		p := m.SetEmptyGauge().DataPoints().AppendEmpty()
		p.SetTimestamp(pcommon.NewTimestampFromTime(at))
		p.SetDoubleValue(v)
		return md
	}
	response(t, post(h, "/v1/metrics", contentProtobuf, "", encodeProto(t, gauge("g", t0, 1))))

	md := gauge("g", t0.Add(-time.Minute), 2) // older than what g has
	gauge("h", t0, 3).ResourceMetrics().MoveAndAppendTo(md.ResourceMetrics())
	resp := response(t, post(h, "/v1/metrics", contentProtobuf, "", encodeProto(t, md)))
	ps := resp.PartialSuccess()
	if ps.RejectedDataPoints() != 1 || !strings.Contains(ps.ErrorMessage(), storage.ErrOutOfOrderSample.Error()) {
		t.Errorf("partial success: %d, %q; want 1 out-of-order point", ps.RejectedDataPoints(), ps.ErrorMessage())
	}
	want := []string{
		fmt.Sprintf(`{__name__="g"} %d 1`, t0.UnixMilli()),
		fmt.Sprintf(`{__name__="h"} %d 3`, t0.UnixMilli()),
	}
	if got := dump(t, hd); !slices.Equal(got, want) {
		t.Errorf("stored %q, want %q", got, want)
	}
}

// TestBadRequests checks the answers to requests that cannot be taken:
// OTLP's status codes, with a google.rpc.Status body that says why.
func TestBadRequests(t *testing.T) {
	hd := newTestHead(t)
	opts := DefaultOptions()
	opts.MaxBodyBytes = 1 << 10
	opts.MaxDecodedBytes = 4 << 10
	h := newHandler(t, hd, opts)
	big := bytes.Repeat([]byte{0}, 64<<10) // gzips to far below the body limit
	for _, tc := range []struct {
		name, ct, enc string
		body          []byte
		status        int
		msg           string
	}{
		{"malformed protobuf", contentProtobuf, "", []byte{0xff, 0xff, 0xff}, 400, "decode OTLP metrics"},
		{"malformed json", contentJSON, "", []byte(`{"resourceMetrics": [`), 400, "decode OTLP metrics"},
		{"unknown content type", "text/plain", "", []byte("x"), 415, "unsupported content type"},
		{"unknown encoding", contentProtobuf, "br", []byte("x"), 415, "unsupported content encoding"},
		{"not gzip", contentProtobuf, "gzip", []byte("plain"), 400, "gzip"},
		{"body too large", contentProtobuf, "", make([]byte, 2<<10), 413, "limit of 1024 bytes"},
		{"gzip inflating past the limit", contentProtobuf, "gzip", gzipped(t, big), 413, "limit of 4096 bytes"},
		{"gzipped body too large", contentProtobuf, "gzip", gzipped(t, random(8<<10)), 413, "limit of 1024 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := post(h, "/v1/metrics", tc.ct, tc.enc, tc.body)
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.status, w.Body)
			}
			var st status.Status
			unmarshal := proto.Unmarshal
			if w.Header().Get("Content-Type") == contentJSON {
				unmarshal = protojson.Unmarshal
			}
			if err := unmarshal(w.Body.Bytes(), &st); err != nil {
				t.Fatalf("body is not a google.rpc.Status: %v", err)
			}
			if !strings.Contains(st.Message, tc.msg) {
				t.Errorf("message %q, want it to contain %q", st.Message, tc.msg)
			}
		})
	}
	if got := dump(t, hd); len(got) != 0 {
		t.Errorf("stored %q from refused requests", got)
	}
}

// TestNotReady answers a store that cannot take writes with a status the
// sender retries.
func TestNotReady(t *testing.T) {
	h := newHandler(t, storagetest.NotReady{}, DefaultOptions())
	w := post(h, "/v1/metrics", contentProtobuf, "", encodeProto(t, testMetrics()))
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Fatalf("status %d, Retry-After %q; want 503 with Retry-After", w.Code, w.Header().Get("Retry-After"))
	}
}

// TestTargetInfoSpan sends a resource whose two points lie ten years
// apart: its points are stored, and target_info stops after a bounded
// number of samples instead of one every half lookback over ten years.
func TestTargetInfoSpan(t *testing.T) {
	hd := newTestHead(t)
	h := newHandler(t, hd, DefaultOptions())
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "s")
	rm.Resource().Attributes().PutStr("host.name", "h")
	m := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName("g")
	g := m.SetEmptyGauge()
	for _, at := range []time.Time{t0.AddDate(-10, 0, 0), t0} {
		p := g.DataPoints().AppendEmpty()
		p.SetTimestamp(pcommon.NewTimestampFromTime(at))
		p.SetDoubleValue(1)
	}
	resp := response(t, post(h, "/v1/metrics", contentProtobuf, "", encodeProto(t, md)))
	if ps := resp.PartialSuccess(); ps.RejectedDataPoints() != 0 || !strings.Contains(ps.ErrorMessage(), "target_info stops") {
		t.Errorf("partial success: %d, %q", ps.RejectedDataPoints(), ps.ErrorMessage())
	}
	var points, info int
	for _, s := range dump(t, hd) {
		if strings.HasPrefix(s, `{__name__="target_info"`) {
			info++
		} else {
			points++
		}
	}
	if points != 2 || info != maxTargetInfoRun {
		t.Errorf("stored %d points and %d target_info samples, want 2 and %d", points, info, maxTargetInfoRun)
	}
}

// TestTranslationSettings checks the series names and labels each naming
// strategy and attribute setting gives one gauge point, as Prometheus'
// otlp configuration block would.
func TestTranslationSettings(t *testing.T) {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	res := rm.Resource().Attributes()
	res.PutStr("service.name", "shop")
	res.PutStr("k8s.pod.name", "pod-1")
	res.PutStr("cloud.region", "eu")
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName("lib")
	sm.Scope().SetVersion("1.2")
	m := sm.Metrics().AppendEmpty()
	m.SetName("disk.io.time")
	m.SetUnit("s")
	sum := m.SetEmptySum()
	sum.SetIsMonotonic(true)
	sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	p := sum.DataPoints().AppendEmpty()
	p.Attributes().PutStr("disk.name", "sda")
	p.SetTimestamp(pcommon.NewTimestampFromTime(t0))
	p.SetDoubleValue(1)

	for _, tc := range []struct {
		name string
		set  func(*config.OTLPConfig)
		want string // the point's series
	}{
		{"default", func(*config.OTLPConfig) {},
			`{__name__="disk_io_time_seconds_total", disk_name="sda", job="shop"}`},
		{"without suffixes", func(c *config.OTLPConfig) { c.TranslationStrategy = otlptranslator.UnderscoreEscapingWithoutSuffixes },
			`{__name__="disk_io_time", disk_name="sda", job="shop"}`},
		{"UTF-8 with suffixes", func(c *config.OTLPConfig) { c.TranslationStrategy = otlptranslator.NoUTF8EscapingWithSuffixes },
			`{__name__="disk.io.time_seconds_total", "disk.name"="sda", job="shop"}`},
		{"no translation", func(c *config.OTLPConfig) { c.TranslationStrategy = otlptranslator.NoTranslation },
			`{__name__="disk.io.time", "disk.name"="sda", job="shop"}`},
		{"promoted attributes", func(c *config.OTLPConfig) { c.PromoteResourceAttributes = []string{"k8s.pod.name"} },
			`{__name__="disk_io_time_seconds_total", disk_name="sda", job="shop", k8s_pod_name="pod-1"}`},
		{"all attributes but one", func(c *config.OTLPConfig) {
			c.PromoteAllResourceAttributes = true
			c.IgnoreResourceAttributes = []string{"cloud.region"}
		}, `{__name__="disk_io_time_seconds_total", disk_name="sda", job="shop", k8s_pod_name="pod-1", service_name="shop"}`},
		{"scope metadata", func(c *config.OTLPConfig) { c.PromoteScopeMetadata = true },
			`{__name__="disk_io_time_seconds_total", disk_name="sda", job="shop", otel_scope_name="lib", otel_scope_version="1.2"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hd := newTestHead(t)
			opts := DefaultOptions()
			tc.set(&opts.Translation)
			if err := ValidateTranslation(opts.Translation); err != nil {
				t.Fatal(err)
			}
			h := newHandler(t, hd, opts)
			response(t, post(h, "/v1/metrics", contentProtobuf, "", encodeProto(t, md)))
			var got []string
			for _, s := range dump(t, hd) {
				if !strings.Contains(s, "target_info") {
					got = append(got, s)
				}
			}
			want := fmt.Sprintf("%s %d 1", tc.want, t0.UnixMilli())
			if len(got) != 1 || got[0] != want {
				t.Errorf("stored %q, want %q", got, want)
			}
		})
	}
}

// TestNHCB stores an explicit-bucket histogram as a native histogram with
// custom buckets when told to.
func TestNHCB(t *testing.T) {
	hd := newTestHead(t)
	opts := DefaultOptions()
	opts.Translation.ConvertHistogramsToNHCB = true
	h := newHandler(t, hd, opts)
	response(t, post(h, "/v1/metrics", contentProtobuf, "", encodeProto(t, testMetrics())))
	want := fmt.Sprintf(`{__name__="latency_seconds", instance="i-1", job="prod/shop"} %d histogram count=6 sum=4.5 schema=-53`, t0.UnixMilli())
	got := dump(t, hd)
	if !slices.Contains(got, want) {
		t.Errorf("no %q in\n%s", want, strings.Join(got, "\n"))
	}
	for _, s := range got {
		if strings.Contains(s, "latency_seconds_bucket") {
			t.Errorf("classic series stored too: %s", s)
		}
	}
}

// TestBadPoints sends points that cannot be stored beside good ones: a sum
// of unspecified temporality and an exponential histogram whose buckets
// hold more than its count are rejected, and counted; the rest is kept,
// and a point flagged as having no recorded value is a stale marker.
func TestBadPoints(t *testing.T) {
	hd := newTestHead(t)
	h := newHandler(t, hd, DefaultOptions())
	md := pmetric.NewMetrics()
	ms := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics()
	ts := pcommon.NewTimestampFromTime(t0)

	m := ms.AppendEmpty()
	m.SetName("good")
	p := m.SetEmptyGauge().DataPoints().AppendEmpty()
	p.SetTimestamp(ts)
	p.SetDoubleValue(1)
	p = m.Gauge().DataPoints().AppendEmpty()
	p.Attributes().PutStr("k", "gone")
	p.SetTimestamp(ts)
	p.SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))

	m = ms.AppendEmpty()
	m.SetName("unspecified")
	p = m.SetEmptySum().DataPoints().AppendEmpty() // temporality left unspecified
	p.SetTimestamp(ts)
	p.SetDoubleValue(2)

	m = ms.AppendEmpty()
	m.SetName("inconsistent")
	eh := m.SetEmptyExponentialHistogram()
	eh.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	ep := eh.DataPoints().AppendEmpty()
	ep.SetTimestamp(ts)
	ep.Positive().BucketCounts().FromRaw([]uint64{5, 5})
	ep.SetCount(3) // less than its buckets hold
	ep.SetSum(1)

	ps := response(t, post(h, "/v1/metrics", contentProtobuf, "", encodeProto(t, md))).PartialSuccess()
	if ps.RejectedDataPoints() != 2 || !strings.Contains(ps.ErrorMessage(), "unspecified") || !strings.Contains(ps.ErrorMessage(), storage.ErrInvalidHistogram.Error()) {
		t.Errorf("partial success: %d, %q; want the sum and the histogram rejected", ps.RejectedDataPoints(), ps.ErrorMessage())
	}
	got := dump(t, hd)
	want := []string{
		fmt.Sprintf(`{__name__="good"} %d 1`, t0.UnixMilli()),
		fmt.Sprintf(`{__name__="good", k="gone"} %d NaN`, t0.UnixMilli()),
	}
	if !slices.Equal(got, want) {
		t.Errorf("stored %q, want %q", got, want)
	}
	q, err := hd.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchEqual, "k", "gone"))
	if !ss.Next() || ss.At().Iterator(nil).Next() != promchunkenc.ValFloat {
		t.Fatal("no sample for the point without a value")
	}
	it := ss.At().Iterator(nil)
	it.Next()
	if _, v := it.At(); !value.IsStaleNaN(v) {
		t.Errorf("the point without a value is %v, not a stale marker", math.Float64bits(v))
	}
}

// random returns n bytes that do not compress.
func random(n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestRateLimit refuses a request over the ingestion rate with 429 and
// Retry-After over HTTP, and RESOURCE_EXHAUSTED with RetryInfo over gRPC,
// as OTLP prescribes for a sender to retry.
func TestRateLimit(t *testing.T) {
	hd := newTestHead(t)
	opts := DefaultOptions()
	opts.RateLimiter = ingest.NewRateLimiter(5) // a second's worth is less than one request
	h := newHandler(t, hd, opts)
	body := encodeProto(t, testMetrics())
	response(t, post(h, "/v1/metrics", contentProtobuf, "", body)) // the full budget lets one through
	w := post(h, "/v1/metrics", contentProtobuf, "", body)
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" {
		t.Fatalf("status %d, Retry-After %q; want 429 and 1", w.Code, w.Header().Get("Retry-After"))
	}
	var st status.Status
	if err := proto.Unmarshal(w.Body.Bytes(), &st); err != nil || !strings.Contains(st.Message, "rate limit") {
		t.Errorf("body %v, %v", &st, err)
	}

	_, err := grpcClient(t, h).Export(context.Background(), pmetricotlp.NewExportRequestFromMetrics(testMetrics()))
	s := grpcstatus.Convert(err)
	var retry *errdetails.RetryInfo
	for _, d := range s.Details() {
		if r, ok := d.(*errdetails.RetryInfo); ok {
			retry = r
		}
	}
	if s.Code() != codes.ResourceExhausted || retry == nil || retry.RetryDelay.AsDuration() != time.Second {
		t.Errorf("gRPC export over the rate: %v, details %v; want ResourceExhausted with RetryInfo", err, s.Details())
	}
}

// TestLatePoints sends points older than their series' newest to a store
// with an out-of-order window: those within it are stored in their
// place, of every kind; an older one is a rejected point.
func TestLatePoints(t *testing.T) {
	opts := head.DefaultOptions()
	opts.WALDir, opts.Stripes = t.TempDir(), 16
	opts.OutOfOrderWindow = (10 * time.Minute).Milliseconds()
	hd, err := head.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer hd.Close()
	h := newHandler(t, hd, DefaultOptions())
	points := func(at time.Time, v float64) pmetric.Metrics {
		md := pmetric.NewMetrics()
		ms := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics()
		g := ms.AppendEmpty()
		g.SetName("g")
		p := g.SetEmptyGauge().DataPoints().AppendEmpty()
		p.SetTimestamp(pcommon.NewTimestampFromTime(at))
		p.SetDoubleValue(v)
		e := ms.AppendEmpty()
		e.SetName("e")
		eh := e.SetEmptyExponentialHistogram()
		eh.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		ep := eh.DataPoints().AppendEmpty()
		ep.SetTimestamp(pcommon.NewTimestampFromTime(at))
		ep.SetCount(uint64(v))
		ep.SetSum(v)
		ep.SetScale(0)
		ep.Positive().BucketCounts().FromRaw([]uint64{uint64(v)})
		return md
	}
	for _, c := range []struct {
		at       time.Time
		v        float64
		rejected int64
	}{
		{t0, 3, 0},
		{t0.Add(-time.Minute), 2, 0},
		{t0.Add(-time.Hour), 1, 2},
	} {
		resp := response(t, post(h, "/v1/metrics", contentProtobuf, "", encodeProto(t, points(c.at, c.v))))
		if ps := resp.PartialSuccess(); ps.RejectedDataPoints() != c.rejected {
			t.Errorf("points at %s: %d rejected (%q), want %d", c.at.Sub(t0), ps.RejectedDataPoints(), ps.ErrorMessage(), c.rejected)
		}
	}
	ms := func(d time.Duration) int64 { return t0.Add(d).UnixMilli() }
	want := []string{
		fmt.Sprintf(`{__name__="e"} %d histogram count=2 sum=2 schema=0`, ms(-time.Minute)),
		fmt.Sprintf(`{__name__="e"} %d histogram count=3 sum=3 schema=0`, ms(0)),
		fmt.Sprintf(`{__name__="g"} %d 2`, ms(-time.Minute)),
		fmt.Sprintf(`{__name__="g"} %d 3`, ms(0)),
	}
	if got := dump(t, hd); !slices.Equal(got, want) {
		t.Errorf("stored %q, want %q", got, want)
	}
}
