package otlp

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/deltatocumulativeprocessor"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/otel/metric/noop"
	"go.uber.org/zap"
)

// newDeltaToCumulative returns the OpenTelemetry Collector's
// deltatocumulative processor, started, in front of h's conversion: the
// reference behaviour for streams, gaps, out-of-order and duplicate
// deltas, and eviction of streams not seen for maxStale. Past maxStreams
// (0: no limit) the points of new streams are dropped.
func newDeltaToCumulative(h *Handler, maxStale time.Duration, maxStreams int) (processor.Metrics, error) {
	fac := deltatocumulativeprocessor.NewFactory()
	cfg := fac.CreateDefaultConfig().(*deltatocumulativeprocessor.Config)
	cfg.MaxStale = maxStale
	if maxStreams > 0 {
		cfg.MaxStreams = maxStreams
	}
	set := processor.Settings{
		ID:                component.NewID(fac.Type()),
		TelemetrySettings: component.TelemetrySettings{Logger: zap.NewNop(), MeterProvider: noop.NewMeterProvider()},
	}
	next, err := consumer.NewMetrics(h.consumeCumulative)
	if err != nil {
		return nil, err
	}
	p, err := fac.CreateMetrics(context.Background(), set, cfg, next)
	if err != nil {
		return nil, fmt.Errorf("delta to cumulative: %w", err)
	}
	if err := p.Start(context.Background(), nil); err != nil {
		return nil, fmt.Errorf("delta to cumulative: %w", err)
	}
	return p, nil
}

// workKey carries a request's work through the processor to
// consumeCumulative.
type workKey struct{}

// consumeCumulative converts what the processor passes on, all of it
// cumulative now, into the store, leaving the outcome in the request's
// work; on the fast path, into its appender.
func (h *Handler) consumeCumulative(ctx context.Context, md pmetric.Metrics) error {
	wk := ctx.Value(workKey{}).(*work)
	if wk.onFast {
		return wk.fast.convert(md)
	}
	wk.rep = h.convert(ctx, md, wk)
	return nil
}

// writeDeltas converts md, which has histograms of delta temporality,
// through the processor, which drops the points it cannot add (older than
// their stream's newest, of a stream over the limit) from md.
func (h *Handler) writeDeltas(ctx context.Context, md pmetric.Metrics, wk *work) reply {
	wk.app.reset(nil, &wk.rj) // if nothing is left to convert
	wk.rep = reply{status: http.StatusOK}
	// The processor calls consumeCumulative before it returns, and only
	// if any point is left.
	if err := h.d2c.ConsumeMetrics(context.WithValue(ctx, workKey{}, wk), md); err != nil {
		return serverFault(err)
	}
	return wk.rep
}

// hasDelta reports whether md has a sum or histogram of delta temporality.
func hasDelta(md pmetric.Metrics) bool {
	for m := range allMetrics(md) {
		var t pmetric.AggregationTemporality
		switch m.Type() {
		case pmetric.MetricTypeSum:
			t = m.Sum().AggregationTemporality()
		case pmetric.MetricTypeHistogram:
			t = m.Histogram().AggregationTemporality()
		case pmetric.MetricTypeExponentialHistogram:
			t = m.ExponentialHistogram().AggregationTemporality()
		}
		if t == pmetric.AggregationTemporalityDelta {
			return true
		}
	}
	return false
}

// allMetrics yields every metric of md.
func allMetrics(md pmetric.Metrics) iter.Seq[pmetric.Metric] {
	return func(yield func(pmetric.Metric) bool) {
		rms := md.ResourceMetrics()
		for i := range rms.Len() {
			sms := rms.At(i).ScopeMetrics()
			for j := range sms.Len() {
				ms := sms.At(j).Metrics()
				for k := range ms.Len() {
					if !yield(ms.At(k)) {
						return
					}
				}
			}
		}
	}
}
