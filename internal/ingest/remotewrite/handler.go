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
	"runtime"
	"strconv"
	"strings"

	"github.com/klauspost/compress/snappy"

	"github.com/strata-db/strata/internal/ingest"
	"github.com/strata-db/strata/internal/ingest/remotewrite/rwpb"
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
	// Limits on what a request may contain.
	Limits Limits
	// Logger; nil discards.
	Logger *slog.Logger
	// Metrics counts what requests brought and what was refused; nil
	// counts nothing.
	Metrics *ingest.Metrics
	// RateLimiter, shared with the other receivers, bounds the samples
	// accepted per second; nil: one of Limits.MaxSamplesPerSecond.
	RateLimiter *ingest.RateLimiter
}

// DefaultOptions returns the limits strata runs with unless told otherwise.
func DefaultOptions() Options {
	return Options{MaxBodyBytes: 32 << 20, MaxDecodedBytes: 128 << 20, Limits: DefaultLimits()}
}

// Handler serves POST /api/v1/write for remote-write 1.0 and 2.0.
type Handler struct {
	app     storage.Appendable
	opts    Options
	logger  *slog.Logger
	limiter *ingest.RateLimiter
	free    scratchFree
}

// NewHandler returns a handler that appends to app.
func NewHandler(app storage.Appendable, opts Options) *Handler {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	limiter := opts.RateLimiter
	if limiter == nil {
		limiter = ingest.NewRateLimiter(opts.Limits.MaxSamplesPerSecond)
	}
	return &Handler{
		app: app, opts: opts, logger: logger,
		limiter: limiter,
		// Enough idle scratch for the requests that run at once on all
		// CPUs, and some waiting on the WAL.
		free: make(scratchFree, 2*runtime.GOMAXPROCS(0)),
	}
}

// Content types, encodings and headers from the remote-write
// specifications.
const (
	protoV1     = "prometheus.WriteRequest"
	protoV2     = "io.prometheus.write.v2.Request"
	contentType = "application/x-protobuf"

	headerSamplesWritten    = "X-Prometheus-Remote-Write-Samples-Written"
	headerHistogramsWritten = "X-Prometheus-Remote-Write-Histograms-Written"
	headerExemplarsWritten  = "X-Prometheus-Remote-Write-Exemplars-Written"
)

// scratch is the per-request memory a handler reuses across requests, so
// that a steady stream of requests allocates nothing for decoding. Nothing
// in it may be kept past the request: decoded strings point into decoded.
type scratch struct {
	body    []byte
	decoded []byte
	v1      rwpb.V1Request
	v2      rwpb.V2Request
	labels  labelBuilder
	// exemplarLabels builds exemplar label sets, so that building one
	// does not overwrite the labels of the series it belongs to.
	exemplarLabels labelBuilder
	histograms     histogramBuilder
	rj             ingest.Rejections
}

// scratchFree holds idle scratch for reuse. It is a bounded free list
// rather than a sync.Pool because a pool is emptied by every other garbage
// collection, and a memory profile of BenchmarkWrite showed the decode
// buffers being grown anew after each one: 13 KB per request of 1000
// samples. Requests beyond the list's capacity at once get fresh scratch
// that is dropped afterwards.
type scratchFree chan *scratch

func (f scratchFree) get() *scratch {
	select {
	case sc := <-f:
		return sc
	default:
		return &scratch{}
	}
}

func (f scratchFree) put(sc *scratch) {
	select {
	case f <- sc:
	default:
	}
}

// maxPooledBytes is the largest buffer kept for reuse: one huge request
// should not pin its memory in the pool for good.
const maxPooledBytes = 16 << 20

// reset drops what should not be kept for the next request.
func (sc *scratch) reset() {
	if cap(sc.body) > maxPooledBytes {
		sc.body = nil
	}
	if cap(sc.decoded) > maxPooledBytes {
		sc.decoded = nil
		sc.v1 = rwpb.V1Request{}
		sc.v2 = rwpb.V2Request{}
	}
	sc.rj.Reset()
}

// result is what a request did, for the response.
type result struct {
	status     int
	msg        string
	retryAfter string // Retry-After header, seconds; "" for none
	written    written
}

// written counts what was stored, for the X-Prometheus-Remote-Write-*
// headers of a 2.0 response.
type written struct {
	samples, histograms, exemplars int
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	version, msg, ok := messageVersion(r.Header.Get("Content-Type"))
	var res result
	if ok {
		res = h.serve(w, r, version)
	} else {
		res = result{status: http.StatusUnsupportedMediaType, msg: msg}
	}
	hdr := w.Header()
	// The written-headers are part of 2.0, and a sender tells a 2.0
	// receiver by them: a 2.0 response carries them whatever its status,
	// a 1.0 response never does, as with Prometheus' 1.0 receiver, nor
	// one to a message strata does not know.
	if version == 2 {
		hdr.Set(headerSamplesWritten, strconv.Itoa(res.written.samples))
		hdr.Set(headerHistogramsWritten, strconv.Itoa(res.written.histograms))
		hdr.Set(headerExemplarsWritten, strconv.Itoa(res.written.exemplars))
	}
	if res.retryAfter != "" {
		hdr.Set("Retry-After", res.retryAfter)
	}
	if res.status == http.StatusNoContent {
		w.WriteHeader(res.status)
		return
	}
	http.Error(w, res.msg, res.status)
}

// serve handles a request with a message of the given version.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request, version int) result {
	if enc := r.Header.Get("Content-Encoding"); enc != "" && !strings.EqualFold(enc, "snappy") {
		return result{status: http.StatusUnsupportedMediaType, msg: fmt.Sprintf("unsupported Content-Encoding %q: remote-write bodies are snappy-encoded", enc)}
	}

	sc := h.free.get()
	defer func() {
		sc.reset()
		h.free.put(sc)
	}()

	body, err := readBody(sc.body[:0], http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes))
	sc.body = body
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return result{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("request body exceeds the limit of %d bytes", h.opts.MaxBodyBytes)}
		}
		return result{status: http.StatusBadRequest, msg: "read request body: " + err.Error()}
	}
	n, err := snappy.DecodedLen(body)
	if err != nil {
		return result{status: http.StatusBadRequest, msg: "decode snappy: " + err.Error()}
	}
	if int64(n) > h.opts.MaxDecodedBytes {
		return result{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("decoded request of %d bytes exceeds the limit of %d bytes", n, h.opts.MaxDecodedBytes)}
	}
	decoded, err := snappy.Decode(sc.decoded[:cap(sc.decoded)], body)
	if cap(decoded) > cap(sc.decoded) {
		sc.decoded = decoded
	}
	if err != nil {
		return result{status: http.StatusBadRequest, msg: "decode snappy: " + err.Error()}
	}

	if version == 2 {
		if err := sc.v2.Unmarshal(decoded); err != nil {
			return result{status: http.StatusBadRequest, msg: "decode protobuf " + protoV2 + ": " + err.Error()}
		}
		return h.writeV2(r, sc)
	}
	if err := sc.v1.Unmarshal(decoded); err != nil {
		return result{status: http.StatusBadRequest, msg: "decode protobuf " + protoV1 + ": " + err.Error()}
	}
	return h.writeV1(r, sc)
}

// messageVersion tells from the Content-Type which message the body holds.
// A missing Content-Type, or one without a proto parameter, is 1.0, as the
// 2.0 specification requires for compatibility with 1.0 senders.
func messageVersion(ct string) (version int, msg string, ok bool) {
	// The values senders send, spelled as the specification does, are
	// matched without parsing: mime.ParseMediaType allocates a map and
	// strings, some 330 bytes a request, a tenth of what a request of
	// 1000 samples allocated.
	switch ct {
	case "", contentType, contentType + ";proto=" + protoV1:
		return 1, "", true
	case contentType + ";proto=" + protoV2:
		return 2, "", true
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return 0, fmt.Sprintf("invalid Content-Type %q: %v", ct, err), false
	}
	if mt != contentType {
		return 0, fmt.Sprintf("unsupported Content-Type %q: want %s", ct, contentType), false
	}
	switch proto := params["proto"]; proto {
	case "", protoV1:
		return 1, "", true
	case protoV2:
		return 2, "", true
	default:
		return 0, fmt.Sprintf("unsupported remote-write protobuf message %q: this server accepts %s and %s", proto, protoV1, protoV2), false
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
