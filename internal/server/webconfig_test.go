package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/thanos-io/thanos/pkg/info/infopb"
	"github.com/thanos-io/thanos/pkg/store/storepb"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/strata-db/strata/internal/storeapi"
)

// writeCert writes a self-signed certificate for 127.0.0.1 and its key
// into dir, and returns a pool that trusts it.
func writeCert(t *testing.T, dir string) *x509.CertPool {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "strata-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	for name, b := range map[string][]byte{
		"cert.pem": certPEM,
		"key.pem":  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	return pool
}

// freePort returns a port nothing listens on, for the gRPC listener.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestWebConfig serves HTTP, OTLP/gRPC and the StoreAPI behind TLS and basic auth
// from a web configuration file: a TLS client with the right password
// gets in, with a wrong one, none or no TLS it does not.
func TestWebConfig(t *testing.T) {
	dir := t.TempDir()
	pool := writeCert(t, dir)
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "web.yml")
	conf := fmt.Sprintf("tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\nbasic_auth_users:\n  alice: %s\n", hash)
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	grpcAddr, storeAddr := freePort(t), freePort(t)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	base := startServerWith(t, "https", client, func(r *http.Request) { r.SetBasicAuth("alice", "s3cret") }, func(c *Config) {
		c.WebConfigFile = path
		c.OTLPGRPCAddress = grpcAddr
		c.StoreAPIAddress = storeAddr
	})
	get := func(user, pass string) int {
		req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/status/buildinfo", nil)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		user, pass string
		want       int
	}{{"alice", "s3cret", 200}, {"alice", "wrong", 401}, {"bob", "s3cret", 401}, {"", "", 401}} {
		if got := get(c.user, c.pass); got != c.want {
			t.Errorf("user %q password %q: status %d, want %d", c.user, c.pass, got, c.want)
		}
	}
	// Plain HTTP to the TLS port is refused.
	if resp, err := http.Get("http" + base[len("https"):] + "/api/v1/status/buildinfo"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("plain HTTP answered 200")
		}
	}

	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pool})))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	export := func(user, pass string) codes.Code {
		ctx := context.Background()
		if user != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(user+":"+pass)))
		}
		md := pmetric.NewMetrics()
		m := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
		m.SetName("up")
		m.SetEmptyGauge().DataPoints().AppendEmpty().SetDoubleValue(1)
		_, err := pmetricotlp.NewGRPCClient(conn).Export(ctx, pmetricotlp.NewExportRequestFromMetrics(md))
		return status.Code(err)
	}
	for _, c := range []struct {
		user, pass string
		want       codes.Code
	}{{"alice", "s3cret", codes.OK}, {"alice", "s3cret", codes.OK}, {"alice", "wrong", codes.Unauthenticated}, {"", "", codes.Unauthenticated}} {
		if got := export(c.user, c.pass); got != c.want {
			t.Errorf("OTLP/gRPC, user %q password %q: %s, want %s", c.user, c.pass, got, c.want)
		}
	}

	// The StoreAPI, unary (Info) and streaming (Series) alike.
	sconn, err := grpc.NewClient(storeAddr,
		grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pool})),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(storeapi.Codec{})))
	if err != nil {
		t.Fatal(err)
	}
	defer sconn.Close()
	storeCalls := func(user, pass string) (info, series codes.Code) {
		ctx := context.Background()
		if user != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(user+":"+pass)))
		}
		_, err := infopb.NewInfoClient(sconn).Info(ctx, &infopb.InfoRequest{})
		info = status.Code(err)
		stream, err := storepb.NewStoreClient(sconn).Series(ctx, &storepb.SeriesRequest{
			MaxTime:  math.MaxInt64,
			Matchers: []storepb.LabelMatcher{{Type: storepb.LabelMatcher_EQ, Name: "__name__", Value: "up"}},
		})
		if err == nil {
			for err == nil {
				_, err = stream.Recv()
			}
			if errors.Is(err, io.EOF) {
				err = nil
			}
		}
		return info, status.Code(err)
	}
	for _, c := range []struct {
		user, pass string
		want       codes.Code
	}{{"alice", "s3cret", codes.OK}, {"alice", "wrong", codes.Unauthenticated}, {"", "", codes.Unauthenticated}} {
		if info, series := storeCalls(c.user, c.pass); info != c.want || series != c.want {
			t.Errorf("StoreAPI, user %q password %q: Info %s, Series %s, want %s", c.user, c.pass, info, series, c.want)
		}
	}

	plain, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	md := pmetric.NewMetrics()
	if _, err := pmetricotlp.NewGRPCClient(plain).Export(ctx, pmetricotlp.NewExportRequestFromMetrics(md)); err == nil {
		t.Error("OTLP/gRPC without TLS succeeded")
	}
}

// TestWebConfigBad refuses to start on a web configuration that does
// not hold, naming the file.
func TestWebConfigBad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(path, []byte("tls_server_config:\n  cert_file: missing.pem\n  key_file: missing.pem\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.ListenAddress = "127.0.0.1:0"
	cfg.DataDir = t.TempDir()
	cfg.WebConfigFile = path
	err := Run(context.Background(), cfg, nil)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("Run with a bad web configuration: %v", err)
	}
}
