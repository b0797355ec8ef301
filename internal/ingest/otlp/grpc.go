package otlp

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	_ "google.golang.org/grpc/encoding/gzip" // OTLP senders may gzip
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
)

// GRPCServer returns a gRPC server offering OTLP's MetricsService on the
// handler: the same translation and answers as OTLP/HTTP, partial
// success included, with gRPC's codes for failures (Unavailable, which
// senders retry, for the store's faults). Messages, gzipped or not, are
// taken up to MaxDecodedBytes.
//
// The service is declared here rather than with pdata's: a request
// reaches Export as the bytes it came in (see rawCodec), so that it can
// take the fast path as over HTTP.
func (h *Handler) GRPCServer(opts ...grpc.ServerOption) *grpc.Server {
	s := grpc.NewServer(append([]grpc.ServerOption{grpc.MaxRecvMsgSize(int(h.opts.MaxDecodedBytes)), grpc.ForceServerCodec(rawCodec{})}, opts...)...)
	s.RegisterService(&metricsService, &grpcService{h: h})
	return s
}

// metricsService is OTLP's opentelemetry.proto.collector.metrics.v1.MetricsService.
var metricsService = grpc.ServiceDesc{
	ServiceName: "opentelemetry.proto.collector.metrics.v1.MetricsService",
	HandlerType: (*any)(nil),
	Methods:     []grpc.MethodDesc{{MethodName: "Export", Handler: exportHandler}},
	Metadata:    "opentelemetry/proto/collector/metrics/v1/metrics_service.proto",
}

const exportMethod = "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export"

func exportHandler(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
	var req rawMessage
	if err := dec(&req); err != nil {
		return nil, err
	}
	g := srv.(*grpcService)
	if interceptor == nil {
		return g.export(ctx, req)
	}
	return interceptor(ctx, req, &grpc.UnaryServerInfo{Server: srv, FullMethod: exportMethod}, func(ctx context.Context, req any) (any, error) {
		return g.export(ctx, req.(rawMessage))
	})
}

type grpcService struct{ h *Handler }

// export takes an ExportMetricsServiceRequest as it came and answers with
// an encoded ExportMetricsServiceResponse.
func (g *grpcService) export(ctx context.Context, body rawMessage) (rawMessage, error) {
	wk := g.h.pool.Get().(*work)
	defer g.h.put(wk)
	rep := g.h.writeProto(ctx, body, wk)
	if rep.status != http.StatusOK {
		st := status.New(rep.code, rep.msg)
		if rep.throttled() {
			// OTLP: RESOURCE_EXHAUSTED is retried only with RetryInfo.
			if d, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(time.Second)}); err == nil {
				st = d
			}
		}
		return nil, st.Err()
	}
	resp := pmetricotlp.NewExportResponse()
	rep.partialSuccess(resp)
	b, err := resp.MarshalProto()
	return rawMessage(b), err
}

// rawMessage is a message as encoded on the wire.
type rawMessage []byte

// rawCodec is the gRPC server's codec: a rawMessage is taken and given as
// it is (a request copied out of gRPC's buffer, which is reused), any
// other message encoded as protobuf.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) ([]byte, error) {
	switch m := v.(type) {
	case rawMessage:
		return m, nil
	case proto.Message:
		return proto.Marshal(m)
	}
	return nil, fmt.Errorf("cannot encode %T", v)
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	switch m := v.(type) {
	case *rawMessage:
		*m = append((*m)[:0], data...)
		return nil
	case proto.Message:
		return proto.Unmarshal(data, m)
	}
	return fmt.Errorf("cannot decode into %T", v)
}
