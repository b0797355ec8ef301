// Package storage holds the interfaces that ingestion and queries see of the
// time-series store, and the errors callers branch on.
//
// Writers (remote-write, OTLP) use Appendable; readers (the PromQL engine and
// the HTTP API) use Prometheus' storage.Queryable, which the head and, later,
// blocks implement, so the engine sees all data through one interface.
package storage

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"
)

// SeriesRef identifies a series in the head. It is assigned once, when the
// series is created, is never reused while the process runs, and is what WAL
// records refer to. 0 means "unknown": Append looks the series up by labels.
type SeriesRef uint64

// Sample is one value of a series at a point in time: a float, or a native
// histogram if H or FH is set. It is a struct rather than arguments so that
// each kind of value joins it without a new Append method per data type.
type Sample struct {
	T int64   // timestamp, milliseconds since the epoch
	V float64 // float value; ignored if H or FH is set
	// H is an integer native histogram, FH a float one; at most one is
	// set. Append copies what it keeps, except CustomValues, which it
	// shares as Prometheus' histogram.Histogram.Copy does: they must not
	// change until Commit or Rollback returns.
	H  *histogram.Histogram
	FH *histogram.FloatHistogram
	// ST is the start (created) time of a cumulative series in
	// milliseconds: when the counter or histogram last started from zero,
	// as remote-write 2.0 and OTLP send it. 0 means unknown. The store
	// keeps where it changes and gives it back through the iterators'
	// AtST, even one after T, which PromQL tells apart as Prometheus does.
	ST int64
}

// Metadata describes a metric family, as senders report it.
type Metadata struct {
	Type model.MetricType // "" when unknown
	Help string
	Unit string
}

// Appendable hands out appenders.
type Appendable interface {
	// Appender returns a new appender. The context may carry a deadline; it
	// does not bound Commit, which must not be abandoned half-way, and it
	// may say that the batches are whole scrapes (WithWholeScrapes).
	Appender(ctx context.Context) Appender
}

type wholeScrapesKey struct{}

// WithWholeScrapes returns ctx for appenders whose batches are each one
// scrape of one target: all its series, one sample each. Such series
// start and cut their chunks together, so their open chunks fill in
// step, and the head writes out the parts of one batch together.
func WithWholeScrapes(ctx context.Context) context.Context {
	return context.WithValue(ctx, wholeScrapesKey{}, true)
}

// WholeScrapes reports whether ctx came from WithWholeScrapes.
func WholeScrapes(ctx context.Context) bool {
	v, _ := ctx.Value(wholeScrapesKey{}).(bool)
	return v
}

// Appender batches writes. Nothing is visible to queries or durable until
// Commit returns nil; Commit returns only after the batch is in the
// write-ahead log. An Appender is used by one goroutine and is finished by
// exactly one call to Commit or Rollback, after which it must not be used.
type Appender interface {
	// Append adds s to the series with labels lset. ref, if not 0, is a
	// reference returned by an earlier Append for the same labels and saves
	// a lookup. The returned ref may be passed to later calls.
	//
	// lset is not retained: the appender copies what it keeps, so the caller
	// may reuse the memory behind lset after Append returns.
	//
	// A sample that cannot be stored is rejected with an error wrapping one
	// of the sentinel errors below; the appender stays usable and the other
	// samples of the batch are unaffected.
	Append(ref SeriesRef, lset labels.Labels, s Sample) (SeriesRef, error)
	// AppendExemplar attaches an exemplar to the series with labels lset
	// (or ref, as for Append), creating the series if there is none; it
	// is stored with the batch. e.Labels is
	// not retained after the call. An exact repeat of the series' newest
	// exemplar is accepted and dropped.
	AppendExemplar(ref SeriesRef, lset labels.Labels, e exemplar.Exemplar) (SeriesRef, error)
	// SetMetadata records the type, help and unit of the metric family
	// metricName, replacing what was recorded before; it is stored with
	// the batch. m's strings are not retained after the call.
	SetMetadata(metricName string, m Metadata) error
	// Commit makes the batch durable (logged to the WAL) and visible.
	Commit() error
	// Rollback discards the batch.
	Rollback() error
}

// Errors a caller branches on. Those in the first group mean the sample is
// invalid and sending it again will not help (HTTP 400); the others are
// retryable server conditions.
var (
	// ErrOutOfOrderSample: the sample is older than the newest sample of its
	// series.
	ErrOutOfOrderSample = errors.New("out of order sample")
	// ErrDuplicateSampleForTimestamp: the series already has a different
	// value at this timestamp.
	ErrDuplicateSampleForTimestamp = errors.New("duplicate sample for timestamp")
	// ErrOutOfBounds: the sample is older than the oldest time the store
	// still takes: that range was written to blocks already.
	ErrOutOfBounds = errors.New("out of bounds")
	// ErrInvalidLabels: the label set is empty, lacks a metric name, has an
	// empty or duplicated label name, or is not valid UTF-8.
	ErrInvalidLabels = errors.New("invalid labels")
	// ErrInvalidHistogram: the native histogram is not self-consistent
	// (bucket spans and counts disagree, a count is negative, both H and
	// FH are set, ...).
	ErrInvalidHistogram = errors.New("invalid native histogram")
	// ErrSeriesLimit: the sample would create a series beyond the store's
	// configured maximum. Samples of existing series are still accepted.
	ErrSeriesLimit = errors.New("series limit reached")

	// ErrOutOfOrderExemplar: the exemplar is older than the newest
	// exemplar of its series.
	ErrOutOfOrderExemplar = errors.New("out of order exemplar")
	// ErrExemplarLabelLength: the exemplar's labels are longer than
	// OpenMetrics allows (128 UTF-8 characters, names and values together).
	ErrExemplarLabelLength = fmt.Errorf("exemplar labels exceed %d UTF-8 characters", exemplar.ExemplarMaxLabelSetLength)

	// ErrNotReady: the store is still replaying its WAL or is closing.
	ErrNotReady = errors.New("storage not ready")
	// ErrCompacting: the sample is late, within the out-of-order window,
	// for a time range the store is writing to a block just now; sent
	// again a moment later, it is taken.
	ErrCompacting = errors.New("time range being written to a block, retry")
)

// SortedSet returns the strings of set, sorted: the answer of a label
// name or value query that had to look at series.
func SortedSet(set map[string]struct{}) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// LimitValues cuts the sorted answer of a label name or value query to
// hints.Limit, if set.
func LimitValues(vals []string, hints *promstorage.LabelHints) []string {
	if hints != nil && hints.Limit > 0 && len(vals) > hints.Limit {
		return vals[:hints.Limit]
	}
	return vals
}
