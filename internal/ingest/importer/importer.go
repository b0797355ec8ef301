// Package importer takes data in bulk, for migration and restore:
// VictoriaMetrics' JSON-lines format (what /api/v1/export writes, and
// vmctl and scripts send to /api/v1/import) and Prometheus' text
// exposition format with optional timestamps (/api/v1/import/prometheus).
//
// A body is read line by line, as it arrives, and its samples are
// committed in batches, so that memory does not grow with the body. They
// go through the store's appender like remote-write's: into the WAL,
// under the same label limits. A line that cannot be read, or whose
// samples the store refuses, is named in a 400 answer with its number;
// the other lines are stored all the same.
package importer

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/ingest"
	"github.com/strata-db/strata/internal/ingest/remotewrite"
	"github.com/strata-db/strata/internal/storage"
)

// Options configure the importer.
type Options struct {
	// MaxLineBytes bounds a line of the body (a series with all its
	// samples, in JSON lines); a longer one ends the import with a 400.
	MaxLineBytes int
	// Limits on series, as remote-write's; the rate limit is RateLimiter.
	Limits      remotewrite.Limits
	RateLimiter *ingest.RateLimiter
	// Metrics counts samples received and refused; nil counts nothing.
	Metrics *ingest.Metrics
}

// DefaultOptions are VictoriaMetrics' line limit and remote-write's
// label limits.
func DefaultOptions() Options {
	return Options{MaxLineBytes: 10 << 20, Limits: remotewrite.DefaultLimits()}
}

// Handler serves the import endpoints.
type Handler struct {
	app  storage.Appendable
	opts Options
}

// New returns a Handler writing to app.
func New(app storage.Appendable, opts Options) *Handler {
	return &Handler{app: app, opts: opts}
}

// JSONLines serves /api/v1/import.
func (h *Handler) JSONLines() http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		h.serve(jsonLineParser()).ServeHTTP(rw, r)
	})
}

// compactingWait is how long an import waits before it tries again a
// sample whose range is being written to a block: compactions take
// seconds, and a poll a few times a second costs nothing.
const compactingWait = 200 * time.Millisecond

// batchSamples is how many samples are committed at once: enough that a
// commit's WAL write is large, few enough that a batch's memory is small.
const batchSamples = 10_000

// lineParser reads one line, and passes each series it holds to add with
// its samples, which add may not keep.
type lineParser func(line []byte, add addFunc) error

type addFunc func(lset labels.Labels, ts []int64, vs []float64) error

func (h *Handler) serve(parse lineParser) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body := r.Body
		switch enc := strings.ToLower(r.Header.Get("Content-Encoding")); enc {
		case "", "identity":
		case "gzip":
			zr, err := gzip.NewReader(body)
			if err != nil {
				http.Error(rw, fmt.Sprintf("gzip body: %v", err), http.StatusBadRequest)
				return
			}
			defer zr.Close()
			body = zr
		default:
			http.Error(rw, fmt.Sprintf("unsupported content encoding %q: want gzip or none", enc), http.StatusUnsupportedMediaType)
			return
		}
		w := &writer{h: h, r: r}
		status, msg := w.run(body, parse)
		h.opts.Metrics.Observe(w.total, w.rj.Refused(), &w.rj)
		if status == http.StatusNoContent {
			rw.WriteHeader(status)
			return
		}
		http.Error(rw, msg, status)
	})
}

// writer is one import's state.
type writer struct {
	h       *Handler
	r       *http.Request
	app     storage.Appender
	pending int // samples appended since the last commit
	total   int // samples read
	line    int
	// batchStart is the first line of the batch not yet committed.
	batchStart int
	rj         ingest.Rejections
	// failed counts lines with a problem.
	failed int
}

// errFault ends the import: a failure of the store's (503), or the rate
// limit (429).
type errFault struct {
	status int
	err    error
}

func (e errFault) Error() string { return e.err.Error() }

// run reads body line by line, and answers: 204 if every line went in,
// 400 naming the lines that did not, 429 at the rate limit and 503 if
// the store failed, saying from which line on nothing was stored.
func (w *writer) run(body io.Reader, parse lineParser) (int, string) {
	sc := bufio.NewScanner(body)
	// The larger of the buffer's capacity and the limit bounds a line.
	sc.Buffer(make([]byte, 0, min(64<<10, w.h.opts.MaxLineBytes)), w.h.opts.MaxLineBytes)
	w.app, w.batchStart = w.h.app.Appender(w.r.Context()), 1
	defer w.finish()
	for sc.Scan() {
		w.line++
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if err := parse(line, w.add); err != nil {
			var fault errFault
			if !errors.As(err, &fault) {
				w.failed++
				w.rj.Add(0, fmt.Errorf("line %d: %w", w.line, err))
			} else if fault.status == http.StatusTooManyRequests {
				// What was read before the line is good: keep it, so
				// that the sender can go on from the line.
				if err := w.commit(w.line); err != nil {
					return w.commitFailed(err)
				}
				return fault.status, fmt.Sprintf("line %d: %v; the lines before it are stored", w.line, fault.err)
			} else {
				return fault.status, fmt.Sprintf("line %d: %v; lines %d and after were not stored", w.line, fault.err, w.batchStart)
			}
		}
		if w.pending >= batchSamples {
			if err := w.commit(w.line + 1); err != nil {
				return w.commitFailed(err)
			}
		}
	}
	err := sc.Err()
	if cerr := w.commit(w.line + 1); cerr != nil {
		return w.commitFailed(cerr)
	}
	switch {
	case errors.Is(err, bufio.ErrTooLong):
		return http.StatusBadRequest, fmt.Sprintf("line %d is longer than the limit of %d bytes; it and the lines after it were not read%s", w.line+1, w.h.opts.MaxLineBytes, w.summary())
	case err != nil:
		return http.StatusBadRequest, fmt.Sprintf("read body after line %d: %v%s", w.line, err, w.summary())
	case w.failed > 0 || w.rj.Any():
		return http.StatusBadRequest, w.summary()[2:]
	}
	return http.StatusNoContent, ""
}

func (w *writer) commitFailed(err error) (int, string) {
	return http.StatusServiceUnavailable, fmt.Sprintf("store the lines from %d on: %v; the lines before %d are stored", w.batchStart, err, w.batchStart)
}

// summary says what was refused, after "; ".
func (w *writer) summary() string {
	if !w.rj.Any() {
		return ""
	}
	return "; " + w.rj.Message(w.total, "samples")
}

// commit commits the batch and starts another at line next. An appender
// is done once committed, whether the commit worked or not.
func (w *writer) commit(next int) error {
	if w.pending == 0 {
		return nil
	}
	err := w.app.Commit()
	w.app = nil
	if err != nil {
		return err
	}
	w.pending, w.batchStart = 0, next
	w.app = w.h.app.Appender(w.r.Context())
	return nil
}

// finish rolls back the appender of a batch not committed.
func (w *writer) finish() {
	if w.app != nil {
		_ = w.app.Rollback()
		w.app = nil
	}
}

// add appends samples of one series read from the line, once its labels
// pass the limits; a sample the store refuses is recorded, any other
// failure ends the import.
func (w *writer) add(lset labels.Labels, ts []int64, vs []float64) error {
	if !lset.Has(labels.MetricName) {
		return fmt.Errorf("%w: no metric name", storage.ErrInvalidLabels)
	}
	if err := w.h.opts.Limits.CheckSeries(lset); err != nil {
		return err
	}
	w.total += len(ts)
	if !w.h.opts.RateLimiter.Allow(len(ts)) {
		return errFault{http.StatusTooManyRequests, errors.New("ingestion rate limit reached (--remote-write.max-samples-per-second); send the rest later")}
	}
	var ref storage.SeriesRef
	var firstErr error
	refused := 0
	for i, t := range ts {
		r, err := w.app.Append(ref, lset, storage.Sample{T: t, V: vs[i]})
		for errors.Is(err, storage.ErrCompacting) {
			// The sample's range is being written to a block: once that
			// is done it is taken. Senders retry; an import waits.
			if err = w.commit(w.line); err != nil {
				return errFault{http.StatusServiceUnavailable, err}
			}
			select {
			case <-w.r.Context().Done():
				return errFault{http.StatusServiceUnavailable, w.r.Context().Err()}
			case <-time.After(compactingWait):
			}
			ref = 0
			r, err = w.app.Append(ref, lset, storage.Sample{T: t, V: vs[i]})
		}
		if err != nil {
			if !ingest.IsBadData(err) {
				return errFault{http.StatusServiceUnavailable, err}
			}
			refused++
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		ref = r
		w.pending++
	}
	if refused > 0 {
		w.rj.Add(refused, fmt.Errorf("line %d: series %s: %d of %d samples refused: %w", w.line, lset, refused, len(ts), firstErr))
	}
	return nil
}
