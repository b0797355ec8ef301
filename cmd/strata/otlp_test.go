package main

import (
	"context"
	"encoding/json"
	"math"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
)

// TestOTLPFromSDK exports every instrument kind with the OpenTelemetry Go
// SDK's own OTLP exporters, HTTP (plain and gzipped) and gRPC, to a strata
// process and reads the series back over the query API under the names
// the Prometheus compatibility specification gives them.
func TestOTLPFromSDK(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server")
	}
	grpcAddr := freeAddr(t)
	s := &proc{t: t, bin: buildBinary(t), dir: t.TempDir(), addr: freeAddr(t), args: []string{"--otlp.grpc-listen-address", grpcAddr}}
	s.start()

	for _, tc := range []struct {
		name     string
		exporter func(context.Context) (sdkmetric.Exporter, error)
	}{
		{"http", func(ctx context.Context) (sdkmetric.Exporter, error) {
			return otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpoint(s.addr), otlpmetrichttp.WithInsecure())
		}},
		{"http-gzip", func(ctx context.Context) (sdkmetric.Exporter, error) {
			return otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpoint(s.addr), otlpmetrichttp.WithInsecure(),
				otlpmetrichttp.WithURLPath("/api/v1/otlp/v1/metrics"), otlpmetrichttp.WithCompression(otlpmetrichttp.GzipCompression))
		}},
		{"grpc-gzip", func(ctx context.Context) (sdkmetric.Exporter, error) {
			return otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpoint(grpcAddr), otlpmetricgrpc.WithInsecure(), otlpmetricgrpc.WithCompressor("gzip"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			exp, err := tc.exporter(ctx)
			if err != nil {
				t.Fatal(err)
			}
			res := resource.NewSchemaless(semconv.ServiceName("checkout"), semconv.ServiceNamespace(tc.name),
				semconv.ServiceInstanceID("pod-1"), attribute.String("cloud.region", "eu-west-1"))
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res),
				sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(time.Hour))),
				sdkmetric.WithView(sdkmetric.NewView(sdkmetric.Instrument{Name: "payload.size"},
					sdkmetric.Stream{Aggregation: sdkmetric.AggregationBase2ExponentialHistogram{MaxSize: 160, MaxScale: 20}})))
			m := mp.Meter("shop")
			orders, _ := m.Int64Counter("orders", metric.WithUnit("{order}"), metric.WithDescription("orders placed"))
			inflight, _ := m.Int64UpDownCounter("requests.inflight")
			temp, _ := m.Float64Gauge("room.temperature", metric.WithUnit("Cel"))
			latency, _ := m.Float64Histogram("http.server.duration", metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(0.1, 0.5, 1))
			size, _ := m.Int64Histogram("payload.size", metric.WithUnit("By"))
			paid := metric.WithAttributes(attribute.String("state", "paid"))
			orders.Add(ctx, 7, paid)
			inflight.Add(ctx, 5)
			inflight.Add(ctx, -2)
			temp.Record(ctx, 21.5)
			for _, v := range []float64{0.05, 0.3, 0.3, 0.7, 2} {
				latency.Record(ctx, v)
			}
			for _, v := range []int64{100, 200, 400, 800} {
				size.Record(ctx, v)
			}
			if err := mp.Shutdown(ctx); err != nil { // exports, and reports an export that failed
				t.Fatal(err)
			}

			sel := `{job="` + tc.name + `/checkout",instance="pod-1"}`
			for _, q := range []struct {
				query string
				want  float64
			}{
				{`orders_total` + sel[:len(sel)-1] + `,state="paid"}`, 7},
				{`requests_inflight` + sel, 3},
				{`room_temperature_celsius` + sel, 21.5},
				{`http_server_duration_seconds_count` + sel, 5},
				{`http_server_duration_seconds_bucket` + sel[:len(sel)-1] + `,le="0.5"}`, 3},
				{`http_server_duration_seconds_sum` + sel, 3.35},
				{`histogram_count(payload_size_bytes` + sel + `)`, 4},
				{`histogram_sum(payload_size_bytes` + sel + `)`, 1500},
				{`target_info` + sel[:len(sel)-1] + `,cloud_region="eu-west-1"}`, 1},
			} {
				checkQuery(t, s, q.query, q.want)
			}
			if _, body := s.get("/metrics", nil); !strings.Contains(string(body), `strata_ingest_received_total{receiver="otlp"}`) {
				t.Errorf("/metrics has no strata_ingest_received_total for OTLP")
			}
			if _, body := s.get("/api/v1/metadata", url.Values{"metric": {"orders_total"}}); !strings.Contains(string(body), `"type":"counter"`) ||
				!strings.Contains(string(body), `"help":"orders placed"`) {
				t.Errorf("metadata of orders_total: %s", body)
			}
		})
	}
	if _, body := s.get("/metrics", nil); !strings.Contains(string(body),
		`strata_grpc_request_duration_seconds_count{code="OK",method="/opentelemetry.proto.collector.metrics.v1.MetricsService/Export"} 1`) {
		t.Errorf("/metrics does not count the gRPC export")
	}
}

// checkQuery runs an instant query now and wants one series of value
// want.
func checkQuery(t *testing.T, s *proc, query string, want float64) {
	t.Helper()
	code, body := s.get("/api/v1/query", url.Values{"query": {query}})
	var r struct {
		Data vectorResult `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil || code != 200 || len(r.Data.Result) != 1 {
		t.Errorf("%s: status %d, want one series: %s", query, code, body)
		return
	}
	got, err := strconv.ParseFloat(r.Data.Result[0].Value[1].(string), 64)
	if err != nil || math.Abs(got-want) > 1e-9*math.Abs(want) {
		t.Errorf("%s = %s, want %v", query, r.Data.Result[0].Value[1], want)
	}
}

// TestOTLPDeltaFromSDK exports a counter, a histogram and an exponential
// histogram with delta temporality, over HTTP and gRPC, and reads back
// their cumulative sums; then strata is killed and restarted, and the next
// deltas start the sums again from zero: a counter reset, which rate()
// and increase() take as such, never a silent drop in the middle of a sum.
func TestOTLPDeltaFromSDK(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server")
	}
	grpcAddr := freeAddr(t)
	s := &proc{t: t, bin: buildBinary(t), dir: t.TempDir(), addr: freeAddr(t), args: []string{"--otlp.grpc-listen-address", grpcAddr}}
	s.start()
	ctx := context.Background()
	httpExp, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpoint(s.addr), otlpmetrichttp.WithInsecure(),
		otlpmetrichttp.WithTemporalitySelector(sdkmetric.DeltaTemporalitySelector))
	if err != nil {
		t.Fatal(err)
	}
	grpcExp, err := otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpoint(grpcAddr), otlpmetricgrpc.WithInsecure(),
		otlpmetricgrpc.WithTemporalitySelector(sdkmetric.DeltaTemporalitySelector))
	if err != nil {
		t.Fatal(err)
	}
	expo := sdkmetric.WithView(sdkmetric.NewView(sdkmetric.Instrument{Name: "job.size"},
		sdkmetric.Stream{Aggregation: sdkmetric.AggregationBase2ExponentialHistogram{MaxSize: 160, MaxScale: 20}}))
	type meter struct {
		mp   *sdkmetric.MeterProvider
		done metric.Int64Counter
		took metric.Float64Histogram
		size metric.Int64Histogram
	}
	newMeter := func(service string, exp sdkmetric.Exporter) meter {
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(resource.NewSchemaless(semconv.ServiceName(service))), expo,
			sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(time.Hour))))
		m := mp.Meter("jobs")
		done, _ := m.Int64Counter("jobs.done")
		took, _ := m.Float64Histogram("job.duration", metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(1, 10))
		size, _ := m.Int64Histogram("job.size", metric.WithUnit("By"))
		return meter{mp, done, took, size}
	}
	meters := []meter{newMeter("over-http", httpExp), newMeter("over-grpc", grpcExp)}
	export := func(ns ...int64) {
		t.Helper()
		for _, n := range ns {
			for _, m := range meters {
				m.done.Add(ctx, n)
				m.took.Record(ctx, float64(n))
				m.size.Record(ctx, 100*n)
				if err := m.mp.ForceFlush(ctx); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(10 * time.Millisecond) // distinct export times
		}
	}
	export(3, 4, 5)
	for _, job := range []string{"over-http", "over-grpc"} {
		sel := `{job="` + job + `"}`
		checkQuery(t, s, `jobs_done_total`+sel, 12)
		checkQuery(t, s, `job_duration_seconds_count`+sel, 3)
		checkQuery(t, s, `job_duration_seconds_sum`+sel, 12)
		checkQuery(t, s, `job_duration_seconds_bucket{job="`+job+`",le="1"}`, 0)
		checkQuery(t, s, `histogram_count(job_size_bytes`+sel+`)`, 3)
		checkQuery(t, s, `histogram_sum(job_size_bytes`+sel+`)`, 1200)
		checkQuery(t, s, `count_over_time(jobs_done_total`+sel+`[1m])`, 3)
	}

	// The delta state is in memory: after kill -9 the next deltas start
	// each sum from zero, as a counter that restarted.
	s.kill()
	s.start()
	export(6, 7)
	for _, m := range meters {
		if err := m.mp.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, job := range []string{"over-http", "over-grpc"} {
		sel := `{job="` + job + `"}`
		checkQuery(t, s, `jobs_done_total`+sel, 13)
		checkQuery(t, s, `resets(jobs_done_total`+sel+`[1m])`, 1)
		// The stored sums: 3, 7, 12 before the restart, 6, 13 after.
		checkQuery(t, s, `sum_over_time(jobs_done_total`+sel+`[1m])`, 3+7+12+6+13)
		checkQuery(t, s, `histogram_count(job_size_bytes`+sel+`)`, 2)
	}
}
