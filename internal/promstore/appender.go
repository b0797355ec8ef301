package promstore

import (
	"context"
	"errors"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/strata-db/strata/internal/storage"
)

// Appendable gives Prometheus' rule and scrape managers strata's
// appenders, so that what rules record and scrapes bring goes through the
// head and its WAL as remote-written samples do: a sample is durable once
// the group's or the scrape's Commit returns.
func Appendable(store storage.Appendable) promstorage.Appendable { return appendable{store} }

type appendable struct{ store storage.Appendable }

func (a appendable) Appender(ctx context.Context) promstorage.Appender {
	return &appender{app: a.store.Appender(ctx)}
}

// appender is Prometheus' storage.Appender over strata's. Prometheus'
// interface has a method per kind of value; strata's one Append takes a
// Sample that says which it is.
//
// A start time given by AppendSTZeroSample is kept for the next Append
// of the same series, which stores it with its sample: strata keeps
// start times with the samples, not as synthetic zero samples.
type appender struct {
	app storage.Appender
	// stRef and stLabels name the series stST belongs to.
	stRef    promstorage.SeriesRef
	stLabels labels.Labels
	stST     int64
}

func (a *appender) Append(ref promstorage.SeriesRef, l labels.Labels, t int64, v float64) (promstorage.SeriesRef, error) {
	return a.append(ref, l, storage.Sample{T: t, V: v})
}

func (a *appender) AppendHistogram(ref promstorage.SeriesRef, l labels.Labels, t int64, h *histogram.Histogram, fh *histogram.FloatHistogram) (promstorage.SeriesRef, error) {
	return a.append(ref, l, storage.Sample{T: t, H: h, FH: fh})
}

func (a *appender) append(ref promstorage.SeriesRef, l labels.Labels, s storage.Sample) (promstorage.SeriesRef, error) {
	if a.stST != 0 {
		if (ref != 0 && ref == a.stRef) || labels.Equal(l, a.stLabels) {
			s.ST = a.stST
		}
		a.stST, a.stRef, a.stLabels = 0, 0, labels.EmptyLabels()
	}
	r, err := a.app.Append(storage.SeriesRef(ref), l, s)
	return promstorage.SeriesRef(r), promError(err)
}

func (a *appender) AppendSTZeroSample(ref promstorage.SeriesRef, l labels.Labels, _, st int64) (promstorage.SeriesRef, error) {
	a.stRef, a.stLabels, a.stST = ref, l, st
	return ref, nil
}

func (a *appender) AppendHistogramSTZeroSample(ref promstorage.SeriesRef, l labels.Labels, t, st int64, _ *histogram.Histogram, _ *histogram.FloatHistogram) (promstorage.SeriesRef, error) {
	return a.AppendSTZeroSample(ref, l, t, st)
}

func (a *appender) AppendExemplar(ref promstorage.SeriesRef, l labels.Labels, e exemplar.Exemplar) (promstorage.SeriesRef, error) {
	r, err := a.app.AppendExemplar(storage.SeriesRef(ref), l, e)
	return promstorage.SeriesRef(r), promError(err)
}

func (a *appender) UpdateMetadata(ref promstorage.SeriesRef, l labels.Labels, m metadata.Metadata) (promstorage.SeriesRef, error) {
	err := a.app.SetMetadata(l.Get(labels.MetricName), storage.Metadata{Type: m.Type, Help: m.Help, Unit: m.Unit})
	return ref, err
}

// SetOptions is ignored. Rules and scrapes ask for out-of-order samples
// to be refused; strata takes their samples in order as it takes any
// sample, and one older than its series' newest sample only within the
// store's out-of-order window, which is off unless configured.
func (*appender) SetOptions(*promstorage.AppendOptions) {}

func (a *appender) Commit() error   { return a.app.Commit() }
func (a *appender) Rollback() error { return a.app.Rollback() }

// promErrors are strata's sentinel errors with the Prometheus errors of
// the same meaning, which the rule and scrape managers tell apart to
// count discarded samples.
var promErrors = []struct{ strata, prom error }{
	{storage.ErrOutOfOrderSample, promstorage.ErrOutOfOrderSample},
	{storage.ErrDuplicateSampleForTimestamp, promstorage.ErrDuplicateSampleForTimestamp},
	{storage.ErrOutOfBounds, promstorage.ErrOutOfBounds},
	{storage.ErrOutOfOrderExemplar, promstorage.ErrOutOfOrderExemplar},
	{storage.ErrExemplarLabelLength, promstorage.ErrExemplarLabelLength},
}

// promError returns err, wrapping also the Prometheus sentinel of the
// same meaning if there is one; its message is err's.
func promError(err error) error {
	if err == nil {
		return nil
	}
	for _, p := range promErrors {
		if errors.Is(err, p.strata) {
			return &mappedError{err: err, prom: p.prom}
		}
	}
	return err
}

type mappedError struct{ err, prom error }

func (e *mappedError) Error() string   { return e.err.Error() }
func (e *mappedError) Unwrap() []error { return []error{e.err, e.prom} }
