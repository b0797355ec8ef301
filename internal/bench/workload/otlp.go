package workload

import (
	"bytes"

	"github.com/klauspost/compress/gzip"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
)

// buildOTLP encodes the request's series as an OTLP
// ExportMetricsServiceRequest, as an OpenTelemetry SDK in each process
// would send them: a resource per job and instance running in a row
// (service.name from job, service.instance.id from instance), a metric
// per name in it, the other
// labels as point attributes. Counters are monotonic cumulative sums,
// everything else gauges (a classic histogram's series included: the
// load is a point per series, as in remote-write). Translated back with
// Prometheus' default naming, the series are those remote-write sends.
// The body is gzipped, as the Collector's OTLP/HTTP exporter sends it,
// unless it goes over gRPC.
func (e *Encoder) buildOTLP(round int64, gzipped bool) error {
	s := e.sched
	o := &s.opts
	md := pmetric.NewMetrics()
	var (
		rm      pmetric.ResourceMetrics
		curJob  string
		curInst string
		metrics map[string]pmetric.Metric
	)
	for _, id := range e.ids {
		e.labels = e.labeler.append(e.labels[:0], id)
		var name, job, instance string
		for _, l := range e.labels {
			switch l.Name {
			case "__name__":
				name = l.Value
			case "job":
				job = l.Value
			case "instance":
				instance = l.Value
			}
		}
		if instance != curInst || job != curJob || metrics == nil {
			curJob, curInst = job, instance
			rm = md.ResourceMetrics().AppendEmpty()
			rm.Resource().Attributes().PutStr("service.name", job)
			rm.Resource().Attributes().PutStr("service.instance.id", instance)
			rm.ScopeMetrics().AppendEmpty().Scope().SetName("strata-bench")
			metrics = map[string]pmetric.Metric{}
		}
		m, ok := metrics[name]
		typ, help := MetricTypeOf(id)
		if !ok {
			m = rm.ScopeMetrics().At(0).Metrics().AppendEmpty()
			m.SetName(name)
			m.SetDescription(help)
			if typ == Counter {
				m.SetEmptySum().SetIsMonotonic(true)
				m.Sum().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
			} else {
				m.SetEmptyGauge()
			}
			metrics[name] = m
		}
		var dps pmetric.NumberDataPointSlice
		if typ == Counter {
			dps = m.Sum().DataPoints()
		} else {
			dps = m.Gauge().DataPoints()
		}
		for j := range o.SamplesPerSeries {
			p := dps.AppendEmpty()
			for _, l := range e.labels {
				if l.Name != "__name__" && l.Name != "job" && l.Name != "instance" {
					p.Attributes().PutStr(l.Name, l.Value)
				}
			}
			p.SetTimestamp(pcommon.Timestamp(s.Timestamp(round, j) * 1e6))
			p.SetDoubleValue(o.value(id, s.SampleIndex(round, j)))
		}
	}
	raw, err := pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto()
	if err != nil {
		return err
	}
	if !gzipped {
		e.raw = append(e.raw[:0], raw...)
		return nil
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if _, err := zw.Write(raw); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	e.raw = append(e.raw[:0], buf.Bytes()...)
	return nil
}
