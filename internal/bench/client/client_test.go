package client

import (
	"context"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/strata-db/strata/internal/bench/workload"
)

func TestCheckLocal(t *testing.T) {
	for raw, ok := range map[string]bool{
		"http://127.0.0.1:9201/api/v1/write": true,
		"http://localhost:9090/api/v1/write": true,
		"http://[::1]:8428/api/v1/write":     true,
		"http://127.0.0.2:1/":                true, // all of 127/8 is loopback
		"http://10.0.0.1:9201/api/v1/write":  false,
		"http://example.com/api/v1/write":    false,
		"ftp://127.0.0.1/":                   false,
		"127.0.0.1:9201":                     false,
	} {
		_, err := CheckLocal(raw)
		if (err == nil) != ok {
			t.Errorf("CheckLocal(%q) = %v, want ok=%v", raw, err, ok)
		}
	}
}

func TestWriter(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.Header.Get("Content-Encoding") != "snappy" ||
			r.Header.Get("Content-Type") != workload.V2.ContentType() ||
			r.Header.Get("X-Prometheus-Remote-Write-Version") != "2.0.0" {
			http.Error(w, "bad headers", http.StatusUnsupportedMediaType)
			return
		}
		b, _ := io.ReadAll(r.Body)
		if string(b) == "bad" {
			http.Error(w, "out of order sample", http.StatusBadRequest)
			return
		}
		w.Header().Set("X-Prometheus-Remote-Write-Samples-Written", "42")
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	w, err := NewWriter(srv.URL, workload.V2, NewHTTPClient(1))
	if err != nil {
		t.Fatal(err)
	}
	res, err := w.Write(context.Background(), []byte("body"))
	if err != nil || res.Status != 204 || res.Written != 42 || res.Latency <= 0 {
		t.Fatalf("Write = %+v, %v", res, err)
	}
	res, err = w.Write(context.Background(), []byte("bad"))
	if err != nil || res.Status != 400 || res.Written != -1 || res.Body != "out of order sample\n" {
		t.Fatalf("Write = %+v, %v", res, err)
	}
}

func TestAPI(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.FormValue("query") {
		case "vector":
			io.WriteString(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"12.5"]},{"metric":{"a":"b"},"value":[1,"3"]}]}}`)
		case "matrix":
			io.WriteString(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"1"],[2,"2"]]},{"metric":{},"values":[[1,"1"]]}]}}`)
		case "scalar":
			io.WriteString(w, `{"status":"success","data":{"resultType":"scalar","result":[1,"7"]}}`)
		case "empty":
			io.WriteString(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
		default:
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"status":"error","errorType":"bad_data","error":"parse error"}`)
		}
	}))
	defer srv.Close()
	api := NewAPI(srv.URL, NewHTTPClient(1))
	ctx := context.Background()
	now := time.Unix(1000, 0)

	r, err := api.Query(ctx, "vector", now)
	if err != nil || r.Series != 2 || r.Value != 12.5 || r.ResultType != "vector" {
		t.Fatalf("vector: %+v, %v", r, err)
	}
	r, err = api.QueryRange(ctx, "matrix", now, now.Add(time.Minute), 15*time.Second)
	if err != nil || r.Series != 2 || r.Points != 3 {
		t.Fatalf("matrix: %+v, %v", r, err)
	}
	r, err = api.Query(ctx, "scalar", now)
	if err != nil || r.Value != 7 {
		t.Fatalf("scalar: %+v, %v", r, err)
	}
	r, err = api.Query(ctx, "empty", now)
	if err != nil || r.Series != 0 || !math.IsNaN(r.Value) {
		t.Fatalf("empty: %+v, %v", r, err)
	}
	_, err = api.Query(ctx, "bad(", now)
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 400 || ae.Type != "bad_data" {
		t.Fatalf("error: %v", err)
	}
}

func TestPoll(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) < 3 {
			http.Error(w, "replaying", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ready")
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := Poll(ctx, nil, Ready(NewHTTPClient(1), srv.URL)); err != nil {
		t.Fatal(err)
	}
	if n.Load() != 3 {
		t.Fatalf("%d polls, want 3", n.Load())
	}

	gone := make(chan struct{})
	close(gone)
	never := func(context.Context) (bool, error) { return false, nil }
	if err := Poll(ctx, gone, never); !errors.Is(err, ErrGone) {
		t.Fatalf("Poll after gone = %v", err)
	}
	short, cancel2 := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel2()
	if err := Poll(short, nil, never); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Poll past deadline = %v", err)
	}
}

// TestWriterOTLP checks OTLP's headers and that a partial success's
// rejected points are read from a 200.
func TestWriterOTLP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Content-Encoding") != "gzip" || r.Header.Get("Content-Type") != "application/x-protobuf" ||
			r.Header.Get("X-Prometheus-Remote-Write-Version") != "" {
			http.Error(w, "bad headers", http.StatusUnsupportedMediaType)
			return
		}
		resp := pmetricotlp.NewExportResponse()
		resp.PartialSuccess().SetRejectedDataPoints(3)
		resp.PartialSuccess().SetErrorMessage("3 of 10 data points rejected")
		b, _ := resp.MarshalProto()
		w.Write(b)
	}))
	defer srv.Close()
	w, err := NewWriter(srv.URL, workload.OTLP, NewHTTPClient(1))
	if err != nil {
		t.Fatal(err)
	}
	res, err := w.Write(context.Background(), []byte("body"))
	if err != nil || res.Status != 200 || res.Rejected != 3 || res.Body != "3 of 10 data points rejected" {
		t.Fatalf("Write = %+v, %v", res, err)
	}
}

// exportStub answers every export with a partial success, or fails.
type exportStub struct {
	pmetricotlp.UnimplementedGRPCServer
	fail error
}

func (s *exportStub) Export(_ context.Context, req pmetricotlp.ExportRequest) (pmetricotlp.ExportResponse, error) {
	resp := pmetricotlp.NewExportResponse()
	if s.fail != nil {
		return resp, s.fail
	}
	resp.PartialSuccess().SetRejectedDataPoints(int64(req.Metrics().DataPointCount()))
	resp.PartialSuccess().SetErrorMessage("all rejected")
	return resp, nil
}

// TestWriterGRPC sends a pre-encoded request over OTLP/gRPC and reads the
// partial success, and a failure's code as the HTTP status OTLP uses.
func TestWriterGRPC(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stub := &exportStub{}
	s := grpc.NewServer()
	pmetricotlp.RegisterGRPCServer(s, stub)
	go s.Serve(ln)
	defer s.Stop()

	md := pmetric.NewMetrics()
	dp := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty().SetEmptyGauge().DataPoints()
	dp.AppendEmpty().SetDoubleValue(1)
	dp.AppendEmpty().SetDoubleValue(2)
	body, err := pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWriter("grpc://"+ln.Addr().String(), workload.OTLPGRPC, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	res, err := w.Write(context.Background(), body)
	if err != nil || res.Status != 200 || res.Rejected != 2 || res.Body != "all rejected" || res.Latency <= 0 {
		t.Fatalf("Write = %+v, %v", res, err)
	}
	stub.fail = status.Error(codes.Unavailable, "replaying")
	res, err = w.Write(context.Background(), body)
	if err != nil || res.Status != 503 || res.Body != "replaying" {
		t.Fatalf("Write = %+v, %v", res, err)
	}
}
