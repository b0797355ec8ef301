// Package client speaks to the server under test: remote-write requests,
// the Prometheus query API and readiness checks. It talks only to the
// loopback interface.
package client

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"
)

// RequestTimeout bounds one HTTP request. A remote-write request that has
// not been answered in a minute is a failure worth reporting, not a
// latency; a query over the loaded data takes well under that.
const RequestTimeout = time.Minute

// NewHTTPClient returns a client that keeps up to conns connections open
// to the server, so that every sender reuses its own connection and no
// connection is set up during a timed run.
func NewHTTPClient(conns int) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = conns
	t.MaxIdleConnsPerHost = conns
	t.MaxConnsPerHost = 0
	// Remote-write bodies are already snappy-compressed, and compressing
	// query responses would put client CPU into query latency.
	t.DisableCompression = true
	t.Proxy = nil // never send benchmark traffic through a proxy
	return &http.Client{Transport: t, Timeout: RequestTimeout}
}

// ErrNotLocal is returned for a URL whose host is not the loopback
// interface.
var ErrNotLocal = errors.New("the benchmark only talks to servers on 127.0.0.1, ::1 or localhost")

// CheckLocal parses raw and checks that it is an http (or, for
// OTLP/gRPC, grpc) URL of a loopback host.
func CheckLocal(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("parse URL %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "grpc" {
		return nil, fmt.Errorf("URL %q: scheme must be http, https or (OTLP/gRPC) grpc", raw)
	}
	host := u.Hostname()
	if host == "localhost" {
		return u, nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("URL %q: %w", raw, ErrNotLocal)
	}
	return u, nil
}

// BaseURL returns the scheme and host of u, the base of the query API
// when only a write URL is known.
func BaseURL(u *url.URL) string {
	return u.Scheme + "://" + u.Host
}
