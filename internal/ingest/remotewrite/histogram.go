package remotewrite

import (
	"github.com/prometheus/prometheus/model/histogram"

	"github.com/strata-db/strata/internal/ingest/remotewrite/rwpb"
	"github.com/strata-db/strata/internal/storage"
)

// histogramBuilder turns decoded native histograms into the store's,
// reusing its own memory from one histogram and one request to the next.
// Buckets and custom bucket bounds alias the decoded request, which
// outlives the append (the store copies what it keeps); only spans, of a
// different type on the wire, are copied.
type histogramBuilder struct {
	h        histogram.Histogram
	fh       histogram.FloatHistogram
	pos, neg []histogram.Span
}

// sample returns x as a sample with an integer or float histogram, valid
// until the next call.
func (hb *histogramBuilder) sample(x *rwpb.Histogram) storage.Sample {
	hb.pos = appendSpans(hb.pos[:0], x.PositiveSpans)
	hb.neg = appendSpans(hb.neg[:0], x.NegativeSpans)
	if x.IsFloat {
		hb.fh = histogram.FloatHistogram{
			CounterResetHint: resetHint(x.ResetHint),
			Schema:           x.Schema,
			ZeroThreshold:    x.ZeroThreshold,
			ZeroCount:        x.ZeroCountFloat,
			Count:            x.CountFloat,
			Sum:              x.Sum,
			PositiveSpans:    hb.pos,
			NegativeSpans:    hb.neg,
			PositiveBuckets:  x.PositiveCounts,
			NegativeBuckets:  x.NegativeCounts,
			CustomValues:     x.CustomValues,
		}
		return storage.Sample{T: x.Timestamp, FH: &hb.fh, ST: x.StartTimestamp}
	}
	hb.h = histogram.Histogram{
		CounterResetHint: resetHint(x.ResetHint),
		Schema:           x.Schema,
		ZeroThreshold:    x.ZeroThreshold,
		ZeroCount:        x.ZeroCountInt,
		Count:            x.CountInt,
		Sum:              x.Sum,
		PositiveSpans:    hb.pos,
		NegativeSpans:    hb.neg,
		PositiveBuckets:  x.PositiveDeltas,
		NegativeBuckets:  x.NegativeDeltas,
		CustomValues:     x.CustomValues,
	}
	return storage.Sample{T: x.Timestamp, H: &hb.h, ST: x.StartTimestamp}
}

func appendSpans(dst []histogram.Span, spans []rwpb.BucketSpan) []histogram.Span {
	for _, s := range spans {
		dst = append(dst, histogram.Span{Offset: s.Offset, Length: s.Length})
	}
	return dst
}

// resetHint maps the protos' reset hint to Prometheus' counter reset hint.
func resetHint(h rwpb.ResetHint) histogram.CounterResetHint {
	switch h {
	case rwpb.ResetHintYes:
		return histogram.CounterReset
	case rwpb.ResetHintNo:
		return histogram.NotCounterReset
	case rwpb.ResetHintGauge:
		return histogram.GaugeType
	}
	return histogram.UnknownCounterReset
}
