package remotewrite

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/ingest"
	"github.com/strata-db/strata/internal/ingest/remotewrite/rwpb"
	"github.com/strata-db/strata/internal/storage"
)

// batch is one request being appended.
type batch struct {
	app     storage.Appender
	metrics *ingest.Metrics
	rj      *ingest.Rejections
	logger  *slog.Logger
	written written
	total   int
	// ref is the store's reference of the series being appended, 0 until
	// the store has given one; startSeries sets it to 0 for each series.
	ref storage.SeriesRef
}

// startSeries starts a new series: what follows goes to it.
func (b *batch) startSeries() { b.ref = 0 }

// samples appends one series' float samples. It returns an error only for
// a server fault, after which the request must be abandoned.
func (b *batch) samples(lset labels.Labels, ss []rwpb.Sample) error {
	ref := b.ref
	defer func() { b.ref = ref }()
	for i, s := range ss {
		var err error
		ref, err = b.app.Append(ref, lset, storage.Sample{T: s.Timestamp, V: s.Value, ST: s.StartTimestamp})
		if err == nil {
			b.written.samples++
			continue
		}
		if !ingest.IsBadData(err) {
			return err
		}
		if errors.Is(err, storage.ErrInvalidLabels) || errors.Is(err, storage.ErrSeriesLimit) {
			// The whole series is refused: count its samples once.
			b.rj.Add(len(ss)-i, err)
			return nil
		}
		b.rj.Add(1, err)
	}
	return nil
}

// histograms appends one series' native histograms, built with hb. It
// returns an error only for a server fault, after which the request must
// be abandoned.
func (b *batch) histograms(lset labels.Labels, hs []rwpb.Histogram, hb *histogramBuilder) error {
	ref := b.ref
	defer func() { b.ref = ref }()
	for i := range hs {
		var err error
		ref, err = b.app.Append(ref, lset, hb.sample(&hs[i]))
		if err == nil {
			b.written.histograms++
			continue
		}
		if !ingest.IsBadData(err) {
			return err
		}
		if errors.Is(err, storage.ErrInvalidLabels) || errors.Is(err, storage.ErrSeriesLimit) {
			b.rj.Add(len(hs)-i, err)
			return nil
		}
		b.rj.Add(1, err)
	}
	return nil
}

// exemplar appends one exemplar to the series being appended, lset. It
// returns an error only for a server fault.
//
// The series need not have samples in this request: Prometheus sends an
// exemplar in a series of its own, with labels and nothing else, in both
// versions. Such an exemplar is stored, and counted as written, whether or
// not the store has the series yet: as in Prometheus' receiver, an
// exemplar of a series that has no samples creates it.
func (b *batch) exemplar(lset labels.Labels, e exemplar.Exemplar) error {
	ref, err := b.app.AppendExemplar(b.ref, lset, e)
	switch {
	case err == nil:
		b.ref = ref
		b.written.exemplars++
	case ingest.IsBadData(err):
		b.rj.Add(0, err)
	default:
		return err
	}
	return nil
}

// finish commits and turns the outcome into a response. fault, if not nil,
// is a server fault met while appending: nothing is committed.
func (b *batch) finish(fault error) result {
	if fault != nil {
		_ = b.app.Rollback()
		return serverError(fault)
	}
	if err := b.app.Commit(); err != nil {
		return serverError(err)
	}
	b.metrics.Observe(b.total, b.rj.Refused(), b.rj)
	if b.rj.Any() {
		return result{status: http.StatusBadRequest, msg: b.rj.Message(b.total, "samples"), written: b.written}
	}
	return result{status: http.StatusNoContent, written: b.written}
}

// serverError maps a store failure to a status the sender retries. Nothing
// was written.
func serverError(err error) result {
	if errors.Is(err, storage.ErrNotReady) || errors.Is(err, storage.ErrCompacting) {
		return result{status: http.StatusServiceUnavailable, msg: err.Error()}
	}
	return result{status: http.StatusInternalServerError, msg: err.Error()}
}

func tooManySamples(n int, limit float64) result {
	return result{status: http.StatusTooManyRequests, retryAfter: "1", msg: fmt.Sprintf("ingestion rate limit of %g samples/s reached (--remote-write.max-samples-per-second); request of %d samples refused, retry later", limit, n)}
}

func (h *Handler) writeV1(r *http.Request, sc *scratch) result {
	req := &sc.v1
	total := 0
	for i := range req.Series {
		total += len(req.Series[i].Samples) + len(req.Series[i].Histograms)
	}
	if !h.limiter.Allow(total) {
		return tooManySamples(total, h.limiter.Rate())
	}
	b := batch{app: h.app.Appender(r.Context()), rj: &sc.rj, logger: h.logger, total: total, metrics: h.opts.Metrics}
	for _, md := range req.Metadata {
		if md.MetricFamilyName == "" {
			continue
		}
		if err := b.app.SetMetadata(md.MetricFamilyName, storage.Metadata{Type: metricType(md.Type), Help: md.Help, Unit: md.Unit}); err != nil {
			return b.finish(err)
		}
	}
	for i := range req.Series {
		ts := &req.Series[i]
		if len(ts.Samples) == 0 && len(ts.Histograms) == 0 && len(ts.Exemplars) == 0 {
			continue
		}
		lset, err := sc.labels.v1(ts.Labels, &h.opts.Limits)
		if err != nil {
			b.rj.Add(len(ts.Samples)+len(ts.Histograms), err)
			continue
		}
		b.startSeries()
		// As Prometheus' receiver: a 1.0 series may carry samples,
		// histograms and exemplars, any of them alone.
		if err := b.samples(lset, ts.Samples); err != nil {
			return b.finish(err)
		}
		if err := b.histograms(lset, ts.Histograms, &sc.histograms); err != nil {
			return b.finish(err)
		}
		for _, ex := range ts.Exemplars {
			el, err := sc.exemplarLabels.v1Exemplar(ex.Labels)
			if err != nil {
				b.rj.Add(0, fmt.Errorf("exemplar of series %s: %w", lset, err))
				continue
			}
			if err := b.exemplar(lset, toExemplar(el, ex)); err != nil {
				return b.finish(err)
			}
		}
	}
	return b.finish(nil)
}

// toExemplar makes a storage exemplar of a decoded one with labels el. An
// exemplar without a timestamp of its own is stamped with 0 on the wire,
// as in Prometheus' conversion.
func toExemplar(el labels.Labels, ex rwpb.Exemplar) exemplar.Exemplar {
	return exemplar.Exemplar{Labels: el, Value: ex.Value, Ts: ex.Timestamp, HasTs: ex.Timestamp != 0}
}

func (h *Handler) writeV2(r *http.Request, sc *scratch) result {
	req := &sc.v2
	if len(req.Symbols) > 0 && req.Symbols[0] != "" {
		return result{status: http.StatusBadRequest, msg: fmt.Sprintf("symbols[0] must be the empty string, is %q", req.Symbols[0])}
	}
	total := 0
	for i := range req.Series {
		total += len(req.Series[i].Samples) + len(req.Series[i].Histograms)
	}
	if !h.limiter.Allow(total) {
		return tooManySamples(total, h.limiter.Rate())
	}
	b := batch{app: h.app.Appender(r.Context()), rj: &sc.rj, logger: h.logger, total: total, metrics: h.opts.Metrics}
	for i := range req.Series {
		ts := &req.Series[i]
		n := len(ts.Samples) + len(ts.Histograms)
		lset, err := sc.labels.v2(ts.LabelRefs, req.Symbols, &h.opts.Limits)
		if err != nil {
			b.rj.Add(n, err)
			continue
		}
		if err := checkMetadataRefs(ts.Metadata, len(req.Symbols)); err != nil {
			b.rj.Add(n, fmt.Errorf("series %s: %w", lset, err))
			continue
		}
		switch {
		case len(ts.Samples) > 0 && len(ts.Histograms) > 0:
			b.rj.Add(n, fmt.Errorf("series %s has both samples and histograms", lset))
			continue
		case n == 0 && len(ts.Exemplars) == 0:
			b.rj.Add(0, fmt.Errorf("series %s has no samples, histograms or exemplars", lset))
			continue
		}
		// A series with exemplars only is against the specification,
		// which asks for samples or histograms in every series, but
		// Prometheus 3 sends every exemplar that way, in 2.0 as in 1.0 (a
		// sender bug, prometheus/prometheus#17857). It is taken as in 1.0:
		// see batch.exemplar.
		if m := ts.Metadata; m.Type != rwpb.MetricTypeUnknown || m.HelpRef != 0 || m.UnitRef != 0 {
			md := storage.Metadata{Type: metricType(m.Type), Help: symbolAt(req.Symbols, m.HelpRef), Unit: symbolAt(req.Symbols, m.UnitRef)}
			if err := b.app.SetMetadata(lset.Get(labels.MetricName), md); err != nil {
				return b.finish(err)
			}
		}
		b.startSeries()
		if err := b.samples(lset, ts.Samples); err != nil {
			return b.finish(err)
		}
		if err := b.histograms(lset, ts.Histograms, &sc.histograms); err != nil {
			return b.finish(err)
		}
		for _, ex := range ts.Exemplars {
			el, err := sc.exemplarLabels.v2Exemplar(ex.LabelRefs, req.Symbols)
			if err != nil {
				b.rj.Add(0, fmt.Errorf("exemplar of series %s: %w", lset, err))
				continue
			}
			if err := b.exemplar(lset, toExemplar(el, ex)); err != nil {
				return b.finish(err)
			}
		}
	}
	return b.finish(nil)
}

// metricType maps the protos' metric type to Prometheus' name for it.
func metricType(t rwpb.MetricType) model.MetricType {
	switch t {
	case rwpb.MetricTypeCounter:
		return model.MetricTypeCounter
	case rwpb.MetricTypeGauge:
		return model.MetricTypeGauge
	case rwpb.MetricTypeHistogram:
		return model.MetricTypeHistogram
	case rwpb.MetricTypeGaugeHistogram:
		return model.MetricTypeGaugeHistogram
	case rwpb.MetricTypeSummary:
		return model.MetricTypeSummary
	case rwpb.MetricTypeInfo:
		return model.MetricTypeInfo
	case rwpb.MetricTypeStateSet:
		return model.MetricTypeStateset
	default:
		return model.MetricTypeUnknown
	}
}

// checkMetadataRefs checks that a series' metadata refers to symbols that
// exist. Ref 0 is the empty string even in an empty table.
func checkMetadataRefs(m rwpb.V2Metadata, symbols int) error {
	for _, ref := range [...]uint32{m.HelpRef, m.UnitRef} {
		if ref != 0 && int(ref) >= symbols {
			return fmt.Errorf("%w: metadata ref %d out of range of the %d symbols", errBadRef, ref, symbols)
		}
	}
	return nil
}

// symbolAt returns symbols[ref], or "" if ref is out of range (checked
// before, or ref 0 of an empty table).
func symbolAt(symbols []string, ref uint32) string {
	if int(ref) < len(symbols) {
		return symbols[ref]
	}
	return ""
}
