package client

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"google.golang.org/grpc"

	"github.com/strata-db/strata/internal/bench/workload"
)

// Writer sends remote-write or OTLP requests to one URL (for OTLP/gRPC,
// grpc://host:port). It is safe for concurrent use.
type Writer struct {
	url      string
	protocol workload.Protocol
	http     *http.Client
	conn     *grpc.ClientConn // OTLP/gRPC only
}

// NewWriter returns a writer to url in protocol p.
func NewWriter(url string, p workload.Protocol, hc *http.Client) (*Writer, error) {
	w := &Writer{url: url, protocol: p, http: hc}
	if p == workload.OTLPGRPC {
		u, err := CheckLocal(url)
		if err != nil {
			return nil, err
		}
		if w.conn, err = dialGRPC(u.Host); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// Close closes a gRPC connection, if there is one.
func (w *Writer) Close() error {
	if w.conn == nil {
		return nil
	}
	return w.conn.Close()
}

// WriteResult is the outcome of one request.
type WriteResult struct {
	Status int
	// Written is the server's X-Prometheus-Remote-Write-Samples-Written
	// header, or -1 when it sent none (1.0 servers need not).
	Written int
	Latency time.Duration
	// Body is the start of an error response, for the report.
	Body string
	// Rejected is the points an OTLP server's partial success rejected.
	Rejected int
}

// maxErrorBody bounds how much of an error response is kept: enough for
// the server's reason, not a dump of every rejected sample.
const maxErrorBody = 512

// Write posts one snappy-compressed body. The latency runs from sending
// the request to having read the whole response. An error means no
// response came (connection refused, timeout, cancelled).
func (w *Writer) Write(ctx context.Context, body []byte) (WriteResult, error) {
	if w.conn != nil {
		return w.writeGRPC(ctx, body)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return WriteResult{}, err
	}
	req.Header.Set("Content-Type", w.protocol.ContentType())
	req.Header.Set("Content-Encoding", w.protocol.ContentEncoding())
	if w.protocol != workload.OTLP {
		req.Header.Set("X-Prometheus-Remote-Write-Version", w.protocol.Version())
	}
	req.Header.Set("User-Agent", "strata-bench")
	start := time.Now()
	resp, err := w.http.Do(req)
	if err != nil {
		return WriteResult{}, err
	}
	res := WriteResult{Status: resp.StatusCode, Written: -1}
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		res.Body = string(b)
	} else if w.protocol == workload.OTLP {
		// A 200 may still reject points: OTLP's partial success.
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		r := pmetricotlp.NewExportResponse()
		if r.UnmarshalProto(b) == nil && r.PartialSuccess().RejectedDataPoints() > 0 {
			res.Rejected = int(r.PartialSuccess().RejectedDataPoints())
			res.Body = r.PartialSuccess().ErrorMessage()
		}
	}
	// Drain the body so the connection is reused.
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	res.Latency = time.Since(start)
	if err != nil {
		return res, fmt.Errorf("read response: %w", err)
	}
	if h := resp.Header.Get("X-Prometheus-Remote-Write-Samples-Written"); h != "" {
		if n, err := strconv.Atoi(h); err == nil && n >= 0 {
			res.Written = n
		}
	}
	return res, nil
}
