// Package remotewrite receives Prometheus remote-write requests and appends
// their samples to the store.
//
// Responses follow the remote-write specification, because senders decide
// from the status whether to retry: 204 when everything was stored; 400 for
// data that will never be accepted (the valid rest of the request is kept);
// 413 for a request over the size limit; 415 for an unsupported content
// type or encoding; 503 while the store is not ready and 500 for other
// server faults, both of which the sender retries.
package remotewrite

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/strata-db/strata/internal/storage"
)

// Options configures the handler.
type Options struct {
	// MaxBodyBytes bounds the compressed request body; a larger one gets
	// 413. Prometheus sends at most a few MiB per request (2,000 samples
	// by default), so 32 MiB leaves room for large batches from agents.
	MaxBodyBytes int64
	// MaxDecodedBytes bounds the body after snappy decoding, so that a
	// small body claiming a huge decoded size cannot make the server
	// allocate it.
	MaxDecodedBytes int64
	// Logger; nil discards.
	Logger *slog.Logger
}

// DefaultOptions returns the limits strata runs with unless told otherwise.
func DefaultOptions() Options {
	return Options{MaxBodyBytes: 32 << 20, MaxDecodedBytes: 128 << 20}
}

// Handler serves POST /api/v1/write.
type Handler struct {
	app    storage.Appendable
	opts   Options
	logger *slog.Logger
}

// NewHandler returns a handler that appends to app.
func NewHandler(app storage.Appendable, opts Options) *Handler {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Handler{app: app, opts: opts, logger: logger}
}

// Content types and encodings from the remote-write specification.
const (
	protoV1     = "prometheus.WriteRequest"
	protoV2     = "io.prometheus.write.v2.Request"
	contentType = "application/x-protobuf"
)

// buffers are the per-request memory a handler reuses across requests.
type buffers struct {
	body    []byte
	decoded []byte
	req     prompb.WriteRequest
	builder labels.ScratchBuilder
}

var bufferPool = sync.Pool{New: func() any { return &buffers{} }}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if msg, ok := checkContentType(r.Header.Get("Content-Type")); !ok {
		http.Error(w, msg, http.StatusUnsupportedMediaType)
		return
	}
	if enc := r.Header.Get("Content-Encoding"); enc != "" && !strings.EqualFold(enc, "snappy") {
		http.Error(w, fmt.Sprintf("unsupported Content-Encoding %q: remote-write bodies are snappy-encoded", enc), http.StatusUnsupportedMediaType)
		return
	}

	bufs := bufferPool.Get().(*buffers)
	defer func() {
		bufs.req.Timeseries = nil
		bufs.req.Metadata = nil
		bufferPool.Put(bufs)
	}()

	body, err := readBody(bufs.body[:0], http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes))
	bufs.body = body
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			http.Error(w, fmt.Sprintf("request body exceeds the limit of %d bytes", h.opts.MaxBodyBytes), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "read request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	n, err := snappy.DecodedLen(body)
	if err != nil {
		http.Error(w, "decode snappy: "+err.Error(), http.StatusBadRequest)
		return
	}
	if int64(n) > h.opts.MaxDecodedBytes {
		http.Error(w, fmt.Sprintf("decoded request of %d bytes exceeds the limit of %d bytes", n, h.opts.MaxDecodedBytes), http.StatusRequestEntityTooLarge)
		return
	}
	decoded, err := snappy.Decode(bufs.decoded[:cap(bufs.decoded)], body)
	if cap(decoded) > cap(bufs.decoded) {
		bufs.decoded = decoded
	}
	if err != nil {
		http.Error(w, "decode snappy: "+err.Error(), http.StatusBadRequest)
		return
	}
	req := &bufs.req
	req.Timeseries = req.Timeseries[:0]
	if err := req.Unmarshal(decoded); err != nil {
		http.Error(w, "decode protobuf WriteRequest: "+err.Error(), http.StatusBadRequest)
		return
	}

	status, msg := h.write(r, req, &bufs.builder)
	if status == http.StatusNoContent {
		w.WriteHeader(status)
		return
	}
	http.Error(w, msg, status)
}

// checkContentType accepts remote-write 1.0 content types. A missing
// Content-Type is taken as 1.0, as Prometheus does, for old senders.
func checkContentType(ct string) (string, bool) {
	if ct == "" {
		return "", true
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return fmt.Sprintf("invalid Content-Type %q: %v", ct, err), false
	}
	if mt != contentType {
		return fmt.Sprintf("unsupported Content-Type %q: want %s", ct, contentType), false
	}
	switch proto := params["proto"]; proto {
	case "", protoV1:
		return "", true
	case protoV2:
		return fmt.Sprintf("unsupported remote-write protobuf message %s: this server accepts %s", protoV2, protoV1), false
	default:
		return fmt.Sprintf("unknown remote-write protobuf message %q", proto), false
	}
}

// readBody reads r to the end into dst, growing it as needed.
func readBody(dst []byte, r io.Reader) ([]byte, error) {
	for {
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}
