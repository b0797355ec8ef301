package server

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/prometheus/exporter-toolkit/web"
	"go.yaml.in/yaml/v2"
	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// TLS and basic authentication come from a web configuration file in
// Prometheus' format (--web.config.file). HTTP is served through
// Prometheus' exporter-toolkit, which reads the file again for every
// connection (certificates) and request (users), as Prometheus does.
// OTLP/gRPC gets the same TLS settings and users, read once at start.

// loadWebConfig reads and checks the web configuration file.
func loadWebConfig(path string) (*web.Config, error) {
	if err := web.Validate(path); err != nil {
		return nil, fmt.Errorf("web configuration %s: %w", path, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("web configuration: %w", err)
	}
	c := &web.Config{}
	if err := yaml.UnmarshalStrict(b, c); err != nil {
		return nil, fmt.Errorf("web configuration %s: %w", path, err)
	}
	return c, nil
}

// grpcWebConfig returns the gRPC server options of the web configuration
// file at path (TLS, client certificates, basic auth); none for "".
func grpcWebConfig(path string) ([]grpc.ServerOption, error) {
	if path == "" {
		return nil, nil
	}
	wc, err := loadWebConfig(path)
	if err != nil {
		return nil, err
	}
	return grpcWebOptions(wc, filepath.Dir(path))
}

// grpcWebOptions are the gRPC server options that apply c: TLS credentials
// if it has a certificate, and a check of basic auth users if it has any.
// Relative file names in it are relative to dir, the file's directory.
func grpcWebOptions(c *web.Config, dir string) ([]grpc.ServerOption, error) {
	var opts []grpc.ServerOption
	if c.TLSConfig.TLSCertPath != "" || c.TLSConfig.TLSCert != "" {
		c.TLSConfig.SetDirectory(dir)
		tc, err := web.ConfigToTLSConfig(&c.TLSConfig)
		if err != nil {
			return nil, fmt.Errorf("web configuration: TLS for gRPC: %w", err)
		}
		tc.NextProtos = []string{"h2"}
		opts = append(opts, grpc.Creds(credentials.NewTLS(tc)))
	}
	if len(c.Users) > 0 {
		users := map[string][]byte{}
		for u, h := range c.Users {
			users[u] = []byte(h)
		}
		auth := basicAuth(users)
		opts = append(opts,
			grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
				if err := auth(ctx); err != nil {
					return nil, err
				}
				return handler(ctx, req)
			}),
			grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
				if err := auth(ss.Context()); err != nil {
					return err
				}
				return handler(srv, ss)
			}))
	}
	return opts, nil
}

// basicAuth returns a check that refuses calls (unary and streaming)
// without the basic auth credentials of one of users (bcrypt hashes), as
// the HTTP endpoints do. Credentials found good
// are remembered (by a hash), as exporter-toolkit does for HTTP: bcrypt
// is made to be slow, and a sender sends the same ones with every call.
func basicAuth(users map[string][]byte) func(context.Context) error {
	var (
		mu   sync.Mutex
		good = map[[32]byte]bool{}
	)
	check := func(user, pass string) bool {
		hash, known := users[user]
		if !known {
			// Spend the time a known user costs, so that a caller cannot
			// tell user names by the time an answer takes.
			_ = bcrypt.CompareHashAndPassword(unknownUser, []byte(pass))
			return false
		}
		key := sha256.Sum256([]byte(user + "\x00" + pass))
		mu.Lock()
		ok := good[key]
		mu.Unlock()
		if ok {
			return true
		}
		if bcrypt.CompareHashAndPassword(hash, []byte(pass)) != nil {
			return false
		}
		mu.Lock()
		if len(good) >= maxGoodCredentials {
			clear(good)
		}
		good[key] = true
		mu.Unlock()
		return true
	}
	return func(ctx context.Context) error {
		if !authorized(ctx, check) {
			return status.Error(codes.Unauthenticated, "basic auth credentials required")
		}
		return nil
	}
}

// unknownUser is a bcrypt hash (of a password nobody is given) to compare
// an unknown user's password with.
var unknownUser = []byte("$2a$10$QHTv4JeAmeln5Q7mzkIa/Ovc3k/UVPRQ1B96b27iK5jy1aynhdi9q")

// maxGoodCredentials bounds the credentials remembered: a few per user
// is what senders use; more is someone trying passwords.
const maxGoodCredentials = 256

// authorized reports whether the call carries basic auth credentials
// check takes.
func authorized(ctx context.Context, check func(user, pass string) bool) bool {
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get("authorization") {
		enc, ok := strings.CutPrefix(v, "Basic ")
		if !ok {
			continue
		}
		b, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			continue
		}
		if user, pass, ok := strings.Cut(string(b), ":"); ok && check(user, pass) {
			return true
		}
	}
	return false
}
