package server

import (
	"log/slog"
	"net/http"

	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/strata-db/strata/internal/storeapi"
)

// RemoteReadLimits bound remote-read, as Prometheus' own
// --storage.remote.read-* flags do.
type RemoteReadLimits struct {
	// MaxSamples a sampled response may hold; more is an error (0: no
	// limit). Streamed responses are bounded by the frame size instead.
	MaxSamples int
	// MaxConcurrent requests served at once; more wait.
	MaxConcurrent int
	// MaxBytesInFrame of a streamed response: a series' chunks are sent
	// in frames up to this size.
	MaxBytesInFrame int
}

// DefaultRemoteReadLimits are Prometheus' defaults.
func DefaultRemoteReadLimits() RemoteReadLimits {
	return RemoteReadLimits{MaxSamples: 5e7, MaxConcurrent: 10, MaxBytesInFrame: 1 << 20}
}

// newRemoteReadHandler serves Prometheus' remote-read protocol from q
// with Prometheus' own handler: sampled responses, and streamed ones of
// XOR and histogram chunks in Prometheus' encodings, negotiated by the
// request's accepted_response_types. strata's chunks are not Prometheus'
// on the wire, so the series are encoded into Prometheus' chunks as they
// are sent (storeapi.Chunks). As Prometheus' does, the handler adds the
// external labels to every series it returns and drops the request's
// matchers that they satisfy, so that a reader that filters by its own
// external labels finds the series.
func newRemoteReadHandler(logger *slog.Logger, q storage.Queryable, lim RemoteReadLimits, external labels.Labels) http.Handler {
	cfg := config.Config{GlobalConfig: config.GlobalConfig{ExternalLabels: external}}
	return remote.NewReadHandler(logger, nil, storeapi.Chunks(q), func() config.Config { return cfg }, lim.MaxSamples, lim.MaxConcurrent, lim.MaxBytesInFrame)
}
