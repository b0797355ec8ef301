package ingest

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-db/strata/internal/storage"
)

// reason is why a sample or point was refused, a label value of
// strata_ingest_problems_total. Every reason but reasonOther is the
// sender's fault (IsBadData).
type reason uint8

const (
	reasonOther reason = iota
	reasonOutOfOrder
	reasonDuplicate
	reasonOutOfBounds
	reasonInvalidLabels
	reasonInvalidHistogram
	reasonSeriesLimit
	reasonExemplar
	nReasons
)

var reasonNames = [nReasons]string{"other", "out_of_order", "duplicate_timestamp", "out_of_bounds", "invalid_labels", "invalid_histogram", "series_limit", "exemplar"}

func reasonOf(err error) reason {
	switch {
	case errors.Is(err, storage.ErrOutOfOrderSample):
		return reasonOutOfOrder
	case errors.Is(err, storage.ErrDuplicateSampleForTimestamp):
		return reasonDuplicate
	case errors.Is(err, storage.ErrOutOfBounds):
		return reasonOutOfBounds
	case errors.Is(err, storage.ErrInvalidLabels):
		return reasonInvalidLabels
	case errors.Is(err, storage.ErrInvalidHistogram):
		return reasonInvalidHistogram
	case errors.Is(err, storage.ErrSeriesLimit):
		return reasonSeriesLimit
	case errors.Is(err, storage.ErrOutOfOrderExemplar), errors.Is(err, storage.ErrExemplarLabelLength):
		return reasonExemplar
	}
	return reasonOther
}

// Metrics counts, for one receiver, what requests brought and what of it
// was refused. Its counters are resolved when it is made, so a request
// costs a few additions, never a label lookup. A nil *Metrics counts
// nothing.
type Metrics struct {
	received prometheus.Counter
	rejected prometheus.Counter
	problems [nReasons]prometheus.Counter
}

// MetricVecs are the counters all receivers share, told apart by the
// receiver label.
type MetricVecs struct {
	received, rejected, problems *prometheus.CounterVec
}

// NewMetricVecs registers the receivers' counters with reg; ForReceiver
// resolves them for one receiver.
func NewMetricVecs(reg prometheus.Registerer) *MetricVecs {
	v := &MetricVecs{
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_ingest_received_total",
			Help: "Samples (remote-write) or data points (OTLP) in requests that decoded, by receiver.",
		}, []string{"receiver"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_ingest_rejected_total",
			Help: "Samples or data points of decoded requests that were not stored, by receiver.",
		}, []string{"receiver"}),
		problems: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_ingest_problems_total",
			Help: "Problems found in decoded requests, by receiver and reason: each a refused sample, series, exemplar or metric.",
		}, []string{"receiver", "reason"}),
	}
	reg.MustRegister(v.received, v.rejected, v.problems)
	return v
}

// ForReceiver returns the counters of receiver name.
func (v *MetricVecs) ForReceiver(name string) *Metrics {
	m := &Metrics{received: v.received.WithLabelValues(name), rejected: v.rejected.WithLabelValues(name)}
	for r := range nReasons {
		m.problems[r] = v.problems.WithLabelValues(name, reasonNames[r])
	}
	return m
}

// Observe counts a request that decoded: total samples or points, the
// rejected ones, and the problems rj recorded.
func (m *Metrics) Observe(total, rejected int, rj *Rejections) {
	if m == nil {
		return
	}
	m.received.Add(float64(total))
	if rejected > 0 {
		m.rejected.Add(float64(rejected))
	}
	for r, n := range rj.byReason {
		if n > 0 {
			m.problems[r].Add(float64(n))
		}
	}
}
