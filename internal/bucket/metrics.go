package bucket

import "github.com/prometheus/client_golang/prometheus"

type shipperMetrics struct {
	uploads, failures, bytes prometheus.Counter
	pending                  prometheus.Gauge
	lag                      prometheus.Histogram
}

func newShipperMetrics(reg prometheus.Registerer) shipperMetrics {
	m := shipperMetrics{
		uploads: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_shipper_uploads_total",
			Help: "Blocks uploaded to object storage.",
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_shipper_upload_failures_total",
			Help: "Attempts to upload a block to object storage that failed; each is retried.",
		}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_shipper_uploaded_bytes_total",
			Help: "Bytes of the blocks uploaded to object storage.",
		}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "strata_shipper_blocks_pending",
			Help: "Blocks of the store not in object storage yet, as of the last upload pass.",
		}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "strata_shipper_upload_lag_seconds",
			Help: "Time from a block's writing to the end of its upload.",
			// From an upload right after the block's cut to one
			// that waited hours for a bucket that was down.
			Buckets: prometheus.ExponentialBuckets(0.25, 4, 10),
		}),
	}
	if reg != nil {
		reg.MustRegister(m.uploads, m.failures, m.bytes, m.pending, m.lag)
	}
	return m
}
