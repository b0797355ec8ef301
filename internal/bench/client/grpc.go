package client

import (
	"context"
	"net/http"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
)

// exportMethod is OTLP's metrics export RPC.
const exportMethod = "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export"

// rawCodec sends pre-encoded protobuf bytes as they are and hands the
// response back undecoded, so that a timed request costs the harness no
// encoding.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(*v.(*[]byte))}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*v.(*[]byte) = data.Materialize()
	return nil
}

func (rawCodec) Name() string { return "proto" }

// dialGRPC opens a connection to an OTLP/gRPC server at host:port.
func dialGRPC(addr string) (*grpc.ClientConn, error) {
	return grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawCodec{}), grpc.MaxCallRecvMsgSize(64<<20)))
}

// writeGRPC sends one uncompressed ExportMetricsServiceRequest. The
// result's status is the HTTP status OTLP/HTTP would have answered.
func (w *Writer) writeGRPC(ctx context.Context, body []byte) (WriteResult, error) {
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	var resp []byte
	start := time.Now()
	err := w.conn.Invoke(ctx, exportMethod, &body, &resp)
	res := WriteResult{Status: http.StatusOK, Written: -1, Latency: time.Since(start)}
	if err != nil {
		st, ok := status.FromError(err)
		if !ok || st.Code() == codes.Canceled || st.Code() == codes.DeadlineExceeded {
			return res, err
		}
		res.Status, res.Body = httpStatus(st.Code()), st.Message()
		return res, nil
	}
	r := pmetricotlp.NewExportResponse()
	if r.UnmarshalProto(resp) == nil && r.PartialSuccess().RejectedDataPoints() > 0 {
		res.Rejected = int(r.PartialSuccess().RejectedDataPoints())
		res.Body = r.PartialSuccess().ErrorMessage()
	}
	return res, nil
}

// httpStatus maps a gRPC code to the status OTLP/HTTP uses for it.
func httpStatus(c codes.Code) int {
	switch c {
	case codes.InvalidArgument:
		return http.StatusBadRequest
	case codes.ResourceExhausted:
		return http.StatusTooManyRequests
	case codes.Unavailable:
		return http.StatusServiceUnavailable
	case codes.Unimplemented:
		return http.StatusNotFound
	}
	return http.StatusInternalServerError
}
