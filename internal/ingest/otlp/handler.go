// Package otlp receives OpenTelemetry metrics (OTLP/HTTP, protobuf and
// JSON, and OTLP/gRPC) and stores them as Prometheus series. Translation is Prometheus'
// own (its otlptranslator packages), so that names, labels, target_info
// and every point kind come out as a Prometheus receiving the same data
// stores them; what differs is the answer: a request with some bad points
// keeps the good ones and reports the rest as OTLP's partial success,
// where Prometheus refuses the whole request.
package otlp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/otlptranslator"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/storage/remote/otlptranslator/prometheusremotewrite"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/processor"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/strata-db/strata/internal/ingest"
	"github.com/strata-db/strata/internal/storage"
)

// Options configures the receiver.
type Options struct {
	// MaxBodyBytes bounds the request body as sent (gzipped or not), and
	// MaxDecodedBytes after gunzip; larger requests get 413.
	MaxBodyBytes    int64
	MaxDecodedBytes int64
	// Translation is Prometheus' otlp configuration block: naming
	// strategy, resource attribute promotion, scope labels, histograms
	// as native histograms with custom buckets.
	Translation config.OTLPConfig
	// Delta says what becomes of points of delta temporality. With
	// DeltaCumulative, a stream not seen for DeltaMaxStale is forgotten
	// (its next delta starts it again, under a new start time), and past
	// DeltaMaxStreams (0: no limit) of sums, or as many of histograms, new
	// streams' points are rejected.
	Delta           Delta
	DeltaMaxStale   time.Duration
	DeltaMaxStreams int
	// LookbackDelta is the query lookback: target_info gets a sample at
	// least this often over a request's span, so that joins with it find
	// one.
	LookbackDelta time.Duration
	// Logger; nil discards.
	Logger *slog.Logger
	// Metrics counts what requests brought and what was refused; nil
	// counts nothing.
	Metrics *ingest.Metrics
	// RateLimiter, shared with the other receivers, bounds the data
	// points accepted per second; nil: no bound.
	RateLimiter *ingest.RateLimiter
	// referenceOnly turns the fast path off, for tests that compare it
	// with the reference.
	referenceOnly bool
}

// Delta is what the receiver does with points of delta temporality.
type Delta string

const (
	// DeltaCumulative adds each stream's deltas up into a cumulative
	// series, as the OpenTelemetry Collector's deltatocumulative
	// processor does (it is the one used for histograms).
	DeltaCumulative Delta = "cumulative"
	// DeltaReject refuses them, counted as rejected points.
	DeltaReject Delta = "reject"
	// DeltaAsIs stores each delta as a sample of its own, as Prometheus'
	// native delta ingestion does: rate() over them is wrong, sum_over_time
	// is the increase.
	DeltaAsIs Delta = "as-is"
)

// ParseDelta parses the value of --otlp.delta.
func ParseDelta(s string) (Delta, error) {
	switch d := Delta(s); d {
	case DeltaCumulative, DeltaReject, DeltaAsIs:
		return d, nil
	}
	return "", fmt.Errorf("unknown delta handling %q: want %q, %q or %q", s, DeltaCumulative, DeltaReject, DeltaAsIs)
}

// ParseStrategy parses a translation strategy by Prometheus' names.
func ParseStrategy(s string) (otlptranslator.TranslationStrategyOption, error) {
	switch o := otlptranslator.TranslationStrategyOption(s); o {
	case otlptranslator.UnderscoreEscapingWithSuffixes, otlptranslator.UnderscoreEscapingWithoutSuffixes,
		otlptranslator.NoUTF8EscapingWithSuffixes, otlptranslator.NoTranslation:
		return o, nil
	}
	return "", fmt.Errorf("unknown translation strategy %q: want one of %s, %s, %s, %s", s,
		otlptranslator.UnderscoreEscapingWithSuffixes, otlptranslator.UnderscoreEscapingWithoutSuffixes,
		otlptranslator.NoUTF8EscapingWithSuffixes, otlptranslator.NoTranslation)
}

// DefaultOptions returns the options strata runs with unless told
// otherwise: the limits of remote-write, Prometheus' default translation.
func DefaultOptions() Options {
	return Options{
		MaxBodyBytes:    32 << 20,
		MaxDecodedBytes: 128 << 20,
		Translation:     config.DefaultOTLPConfig,
		Delta:           DeltaCumulative,
		DeltaMaxStale:   5 * time.Minute,
		LookbackDelta:   5 * time.Minute,
	}
}

// Handler serves OTLP/HTTP metrics export requests.
type Handler struct {
	app      storage.Appendable
	opts     Options
	settings prometheusremotewrite.Settings
	logger   *slog.Logger
	pool     sync.Pool // of *work
	// sums and d2c turn deltas into cumulative points, if Delta is
	// DeltaCumulative: sums those of sums, d2c those of histograms.
	sums *deltaSums
	d2c  processor.Metrics
	// cache is what the fast path has learnt; nil turns it off.
	cache *fastCache
}

// work is what one request needs, kept for the next.
type work struct {
	converter *prometheusremotewrite.PrometheusConverter
	app       appender
	rj        ingest.Rejections
	body      bytes.Buffer
	// gz inflates gzipped bodies: made once and reset for each, as
	// a new one allocates and clears its 32 KiB window and tables.
	gz   *gzip.Reader
	rep  reply // of the conversion behind the delta processor
	fast fastState
	// undo is what the request added to delta sum streams.
	undo []sumUndo
	// onFast says the processor's output goes to the fast path's
	// appender.
	onFast bool
}

// begin readies wk for a request.
func (wk *work) begin() {
	wk.rj.Reset()
	clear(wk.undo)
	wk.undo = wk.undo[:0]
}

// NewHandler returns a receiver writing to app. Close it when done.
func NewHandler(app storage.Appendable, opts Options) (*Handler, error) {
	t := opts.Translation
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	h := &Handler{
		app:    app,
		opts:   opts,
		logger: logger,
		settings: prometheusremotewrite.Settings{
			AddMetricSuffixes:                    t.TranslationStrategy.ShouldAddSuffixes(),
			AllowUTF8:                            !t.TranslationStrategy.ShouldEscape(),
			PromoteResourceAttributes:            prometheusremotewrite.NewPromoteResourceAttributes(t),
			KeepIdentifyingResourceAttributes:    t.KeepIdentifyingResourceAttributes,
			ConvertHistogramsToNHCB:              t.ConvertHistogramsToNHCB,
			PromoteScopeMetadata:                 t.PromoteScopeMetadata,
			AllowDeltaTemporality:                opts.Delta == DeltaAsIs,
			LookbackDelta:                        opts.LookbackDelta,
			LabelNameUnderscoreSanitization:      t.LabelNameUnderscoreSanitization,
			LabelNamePreserveMultipleUnderscores: t.LabelNamePreserveMultipleUnderscores,
		},
	}
	if !opts.referenceOnly {
		h.cache = newFastCache()
	}
	h.pool.New = func() any {
		return &work{converter: prometheusremotewrite.NewPrometheusConverter(nil)}
	}
	if opts.Delta == DeltaCumulative {
		h.sums = newDeltaSums(int64(opts.DeltaMaxStale/time.Second), opts.DeltaMaxStreams, time.Now().Unix())
		d2c, err := newDeltaToCumulative(h, opts.DeltaMaxStale, opts.DeltaMaxStreams)
		if err != nil {
			return nil, err
		}
		h.d2c = d2c
	}
	return h, nil
}

// Close stops the delta conversion's eviction of stale streams.
func (h *Handler) Close() error {
	if h.d2c == nil {
		return nil
	}
	return h.d2c.Shutdown(context.Background())
}

// maxPooledBody is the largest body buffer kept for the next request: a
// rare huge request should not pin its memory in the pool.
const maxPooledBody = 16 << 20

func (h *Handler) put(wk *work) {
	if wk.body.Cap() > maxPooledBody {
		wk.body = bytes.Buffer{}
	}
	h.pool.Put(wk)
}

// Content types of OTLP/HTTP.
const (
	contentProtobuf = "application/x-protobuf"
	contentJSON     = "application/json"
)

// reply is a request's outcome.
type reply struct {
	status int
	code   codes.Code // the gRPC code of a failure, for its Status body
	msg    string
	// rejected is the points refused, for a partial success.
	rejected int
}

// throttled reports whether rep refuses a request for the rate limit:
// the sender is told to retry in a second.
func (rep reply) throttled() bool { return rep.status == http.StatusTooManyRequests }

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	wk := h.pool.Get().(*work)
	defer h.put(wk)
	rep := h.serve(r, ct, wk)
	if ct != contentJSON {
		ct = contentProtobuf
	}
	w.Header().Set("Content-Type", ct)
	if rep.status != http.StatusOK {
		if rep.status == http.StatusServiceUnavailable || rep.throttled() {
			w.Header().Set("Retry-After", "1")
		}
		w.WriteHeader(rep.status)
		_, _ = w.Write(statusBody(ct, rep))
		return
	}
	resp := pmetricotlp.NewExportResponse()
	rep.partialSuccess(resp)
	var (
		b   []byte
		err error
	)
	if ct == contentJSON {
		b, err = resp.MarshalJSON()
	} else {
		b, err = resp.MarshalProto()
	}
	if err != nil {
		h.logger.Error("encode OTLP response", "err", err)
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// partialSuccess sets resp's partial_success from a 200's reply: the
// points rejected and why. A message with nothing rejected is a warning,
// as OTLP allows.
func (rep reply) partialSuccess(resp pmetricotlp.ExportResponse) {
	if rep.rejected > 0 || rep.msg != "" {
		resp.PartialSuccess().SetRejectedDataPoints(int64(rep.rejected))
		resp.PartialSuccess().SetErrorMessage(rep.msg)
	}
}

// statusBody encodes a failure as OTLP/HTTP prescribes: a google.rpc.Status
// in the request's encoding.
func statusBody(ct string, rep reply) []byte {
	st := &status.Status{Code: int32(rep.code), Message: rep.msg}
	var (
		b   []byte
		err error
	)
	if ct == contentJSON {
		b, err = protojson.Marshal(st)
	} else {
		b, err = proto.Marshal(st)
	}
	if err != nil {
		return []byte(rep.msg)
	}
	return b
}

func badRequest(format string, args ...any) reply {
	return reply{status: http.StatusBadRequest, code: codes.InvalidArgument, msg: fmt.Sprintf(format, args...)}
}

func (h *Handler) serve(r *http.Request, ct string, wk *work) reply {
	if r.Method != http.MethodPost {
		return reply{status: http.StatusMethodNotAllowed, code: codes.Unimplemented, msg: "OTLP metrics are sent with POST"}
	}
	if ct != contentProtobuf && ct != contentJSON {
		return reply{status: http.StatusUnsupportedMediaType, code: codes.InvalidArgument,
			msg: fmt.Sprintf("unsupported content type %q: want %s or %s", r.Header.Get("Content-Type"), contentProtobuf, contentJSON)}
	}
	body, rep, ok := h.readBody(r, wk)
	if !ok {
		return rep
	}
	if ct == contentProtobuf {
		return h.writeProto(r.Context(), body, wk)
	}
	req := pmetricotlp.NewExportRequest()
	if err := req.UnmarshalJSON(body); err != nil {
		return badRequest("decode OTLP metrics (%s): %v", ct, err)
	}
	return h.write(r.Context(), req.Metrics(), wk)
}

// writeProto takes an ExportMetricsServiceRequest encoded as protobuf:
// on the fast path if it can, else decoded with pdata and translated.
func (h *Handler) writeProto(ctx context.Context, body []byte, wk *work) reply {
	if h.cache != nil {
		if rep, ok := h.fastWrite(ctx, body, wk); ok {
			return rep
		}
	}
	req := pmetricotlp.NewExportRequest()
	if err := req.UnmarshalProto(body); err != nil {
		return badRequest("decode OTLP metrics (%s): %v", contentProtobuf, err)
	}
	return h.write(ctx, req.Metrics(), wk)
}

// readBody reads the body into wk, gunzipping it if it is sent so, within
// the size limits.
func (h *Handler) readBody(r *http.Request, wk *work) ([]byte, reply, bool) {
	if r.ContentLength > h.opts.MaxBodyBytes {
		return nil, tooLarge(h.opts.MaxBodyBytes), false
	}
	wk.body.Reset()
	sent := &capReader{r: r.Body, left: h.opts.MaxBodyBytes}
	var src io.Reader = sent
	inflated := &capReader{left: h.opts.MaxDecodedBytes}
	switch enc := strings.ToLower(r.Header.Get("Content-Encoding")); enc {
	case "", "identity":
	case "gzip":
		if wk.gz == nil {
			wk.gz = new(gzip.Reader)
		}
		if err := wk.gz.Reset(src); err != nil {
			if sent.over {
				return nil, tooLarge(h.opts.MaxBodyBytes), false
			}
			return nil, badRequest("gzip body: %v", err), false
		}
		defer wk.gz.Close()
		inflated.r = wk.gz
		src = inflated
	default:
		return nil, reply{status: http.StatusUnsupportedMediaType, code: codes.InvalidArgument,
			msg: fmt.Sprintf("unsupported content encoding %q: want gzip or none", enc)}, false
	}
	if _, err := wk.body.ReadFrom(src); err != nil {
		switch {
		case sent.over:
			return nil, tooLarge(h.opts.MaxBodyBytes), false
		case inflated.over:
			return nil, tooLarge(h.opts.MaxDecodedBytes), false
		}
		return nil, badRequest("read body: %v", err), false
	}
	return wk.body.Bytes(), reply{}, true
}

// capReader reads at most left bytes from r and fails past them, noting
// that it did (a gzip reader may not pass the error on as it was).
type capReader struct {
	r    io.Reader
	left int64
	over bool
}

var errTooLarge = errors.New("request too large")

func (c *capReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		// Probe for one more byte: a body of exactly the limit is fine.
		var one [1]byte
		if n, _ := c.r.Read(one[:]); n > 0 {
			c.over = true
			return 0, errTooLarge
		}
		return 0, io.EOF
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

func tooLarge(limit int64) reply {
	return reply{status: http.StatusRequestEntityTooLarge, code: codes.ResourceExhausted,
		msg: fmt.Sprintf("request larger than the limit of %d bytes", limit)}
}

// write translates md into the store and says what became of its points.
func (h *Handler) write(ctx context.Context, md pmetric.Metrics, wk *work) reply {
	total := md.DataPointCount()
	if rep, ok := h.throttle(total); !ok {
		return rep
	}
	wk.begin()
	if h.sums != nil {
		now := time.Now().Unix()
		h.sums.cumulative(md, now, &wk.undo)
		h.sums.sweep(now)
	}
	var rep reply
	if h.d2c != nil && hasDelta(md) {
		rep = h.writeDeltas(ctx, md, wk)
	} else {
		rep = h.convert(ctx, md, wk)
	}
	if rep.status != http.StatusOK {
		h.sums.undo(wk.undo)
		return rep
	}
	if dropped := total - md.DataPointCount(); dropped > 0 {
		wk.rj.Add(0, droppedDeltas(dropped))
	}
	return h.outcome(total, wk)
}

// throttle takes total data points from the rate limit, or answers why
// it cannot.
func (h *Handler) throttle(total int) (reply, bool) {
	if h.opts.RateLimiter.Allow(total) {
		return reply{}, true
	}
	return reply{status: http.StatusTooManyRequests, code: codes.ResourceExhausted,
		msg: fmt.Sprintf("ingestion rate limit of %g samples/s reached (--remote-write.max-samples-per-second); request of %d data points refused, retry later", h.opts.RateLimiter.Rate(), total)}, false
}

// convert translates md into the store and commits. It answers a failure;
// for a success, outcome tells what became of the points.
func (h *Handler) convert(ctx context.Context, md pmetric.Metrics, wk *work) reply {
	app := h.app.Appender(ctx)
	wk.app.reset(app, &wk.rj)
	wk.converter.Reset(&wk.app)
	defer wk.converter.Reset(nil)
	_, errs := wk.converter.FromMetrics(ctx, md, h.settings)
	if wk.app.fault != nil {
		_ = app.Rollback()
		return serverFault(wk.app.fault)
	}
	if err := ctx.Err(); err != nil {
		_ = app.Rollback()
		return reply{status: http.StatusServiceUnavailable, code: codes.Unavailable, msg: err.Error()}
	}
	if err := app.Commit(); err != nil {
		return serverFault(err)
	}
	// What the converter refused whole (a metric of a temporality it
	// does not take, a name it cannot translate) comes back as errors.
	for _, err := range unjoin(errs) {
		wk.rj.Add(0, err)
	}
	return reply{status: http.StatusOK}
}

// outcome is the answer to a request of total points that went in: the
// points not counted as stored are rejected, and the problems say why.
func (h *Handler) outcome(total int, wk *work) reply {
	rep := reply{status: http.StatusOK, rejected: max(total-wk.app.written, 0)}
	h.opts.Metrics.Observe(total, rep.rejected, &wk.rj)
	if rep.rejected > 0 || wk.rj.Any() {
		rep.msg = fmt.Sprintf("%d of %d data points rejected%s", rep.rejected, total, wk.rj.Details())
	}
	return rep
}

// unjoin returns the errors errors.Join put together, or err alone.
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// serverFault maps a store failure to a status the sender retries, as
// OTLP prescribes for a server that cannot take data for now. Nothing was
// written.
func serverFault(err error) reply {
	return reply{status: http.StatusServiceUnavailable, code: codes.Unavailable, msg: err.Error()}
}

// ValidateTranslation checks the resource attribute settings as Prometheus
// checks its otlp configuration block.
func ValidateTranslation(c config.OTLPConfig) error {
	if c.PromoteAllResourceAttributes {
		if len(c.PromoteResourceAttributes) > 0 {
			return errors.New("promoting all resource attributes and a list of them cannot be configured together")
		}
	} else if len(c.IgnoreResourceAttributes) > 0 {
		return errors.New("ignored resource attributes need all resource attributes promoted")
	}
	seen := map[string]bool{}
	for _, a := range append(slices.Clone(c.PromoteResourceAttributes), c.IgnoreResourceAttributes...) {
		if seen[a] {
			return fmt.Errorf("resource attribute %q listed twice", a)
		}
		seen[a] = true
	}
	return nil
}
