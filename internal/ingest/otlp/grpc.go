package otlp

import (
	"context"
	"net/http"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	_ "google.golang.org/grpc/encoding/gzip" // OTLP senders may gzip
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// GRPCServer returns a gRPC server offering OTLP's MetricsService on the
// handler: the same translation and answers as OTLP/HTTP, partial
// success included, with gRPC's codes for failures (Unavailable, which
// senders retry, for the store's faults). Messages, gzipped or not, are
// taken up to MaxDecodedBytes.
func (h *Handler) GRPCServer(opts ...grpc.ServerOption) *grpc.Server {
	s := grpc.NewServer(append([]grpc.ServerOption{grpc.MaxRecvMsgSize(int(h.opts.MaxDecodedBytes))}, opts...)...)
	pmetricotlp.RegisterGRPCServer(s, &grpcService{h: h})
	return s
}

// grpcService embeds pmetricotlp's UnimplementedGRPCServer, as the
// interface requires of every implementation.
type grpcService struct {
	pmetricotlp.UnimplementedGRPCServer
	h *Handler
}

func (g *grpcService) Export(ctx context.Context, req pmetricotlp.ExportRequest) (pmetricotlp.ExportResponse, error) {
	wk := g.h.pool.Get().(*work)
	defer g.h.put(wk)
	rep := g.h.write(ctx, req.Metrics(), wk)
	resp := pmetricotlp.NewExportResponse()
	if rep.status != http.StatusOK {
		st := status.New(rep.code, rep.msg)
		if rep.throttled() {
			// OTLP: RESOURCE_EXHAUSTED is retried only with RetryInfo.
			if d, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(time.Second)}); err == nil {
				st = d
			}
		}
		return resp, st.Err()
	}
	rep.partialSuccess(resp)
	return resp, nil
}
