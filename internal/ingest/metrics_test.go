package ingest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/strata-db/strata/internal/storage"
)

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetricVecs(reg).ForReceiver("otlp")
	var rj Rejections
	rj.Add(1, fmt.Errorf("series a: %w", storage.ErrOutOfOrderSample))
	rj.Add(1, fmt.Errorf("series b: %w", storage.ErrOutOfOrderSample))
	rj.Add(0, fmt.Errorf("metric c: invalid temporality"))
	m.Observe(10, 3, &rj)
	var nilMetrics *Metrics
	nilMetrics.Observe(1, 1, &rj) // counts nothing, and does not panic
	want := `
# HELP strata_ingest_problems_total Problems found in decoded requests, by receiver and reason: each a refused sample, series, exemplar or metric.
# TYPE strata_ingest_problems_total counter
strata_ingest_problems_total{reason="duplicate_timestamp",receiver="otlp"} 0
strata_ingest_problems_total{reason="exemplar",receiver="otlp"} 0
strata_ingest_problems_total{reason="invalid_histogram",receiver="otlp"} 0
strata_ingest_problems_total{reason="invalid_labels",receiver="otlp"} 0
strata_ingest_problems_total{reason="other",receiver="otlp"} 1
strata_ingest_problems_total{reason="out_of_bounds",receiver="otlp"} 0
strata_ingest_problems_total{reason="out_of_order",receiver="otlp"} 2
strata_ingest_problems_total{reason="series_limit",receiver="otlp"} 0
# HELP strata_ingest_received_total Samples (remote-write) or data points (OTLP) in requests that decoded, by receiver.
# TYPE strata_ingest_received_total counter
strata_ingest_received_total{receiver="otlp"} 10
# HELP strata_ingest_rejected_total Samples or data points of decoded requests that were not stored, by receiver.
# TYPE strata_ingest_rejected_total counter
strata_ingest_rejected_total{receiver="otlp"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
