package otlp

import (
	"context"
	"net"
	"testing"

	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/strata-db/strata/internal/storage"
	"github.com/strata-db/strata/internal/storage/storagetest"
)

// grpcClient serves h's gRPC server on a local port and returns a client.
func grpcClient(t *testing.T, h *Handler) pmetricotlp.GRPCClient {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := h.GRPCServer()
	go s.Serve(ln)
	t.Cleanup(s.Stop)
	cc, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return pmetricotlp.NewGRPCClient(cc)
}

// TestGRPC checks that OTLP/gRPC stores what OTLP/HTTP does and answers
// with partial success, and that a store fault is Unavailable, which
// senders retry.
func TestGRPC(t *testing.T) {
	hd := newTestHead(t)
	c := grpcClient(t, newHandler(t, hd, DefaultOptions()))
	resp, err := c.Export(context.Background(), pmetricotlp.NewExportRequestFromMetrics(testMetrics()), grpc.UseCompressor("gzip"))
	if err != nil {
		t.Fatal(err)
	}
	if ps := resp.PartialSuccess(); ps.RejectedDataPoints() != 0 {
		t.Errorf("partial success %d, %q; want none", ps.RejectedDataPoints(), ps.ErrorMessage())
	}
	if n := len(dump(t, hd)); n != 13 {
		t.Errorf("%d samples stored, want 13 (as over HTTP)", n)
	}

	c = grpcClient(t, newHandler(t, storagetest.NotReady{}, DefaultOptions()))
	_, err = c.Export(context.Background(), pmetricotlp.NewExportRequestFromMetrics(testMetrics()))
	if status.Code(err) != codes.Unavailable || !messageIs(err, storage.ErrNotReady) {
		t.Errorf("export to a store not ready: %v, want Unavailable", err)
	}
}

func messageIs(err, want error) bool {
	return err != nil && status.Convert(err).Message() == want.Error()
}
