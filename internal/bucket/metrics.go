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

type storeMetrics struct {
	blocks        prometheus.GaugeFunc
	syncs, failed prometheus.Counter
	pageHits      prometheus.Counter
	pageMisses    prometheus.Counter
}

func newStoreMetrics(reg prometheus.Registerer, s *Store) storeMetrics {
	m := storeMetrics{
		blocks: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "strata_store_blocks_loaded",
			Help: "Blocks of the bucket open for queries.",
		}, func() float64 {
			s.mu.RLock()
			defer s.mu.RUnlock()
			return float64(len(s.blocks))
		}),
		syncs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_store_syncs_total",
			Help: "Listings of the bucket.",
		}),
		failed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_store_sync_failures_total",
			Help: "Listings of the bucket that failed, and blocks that could not be opened.",
		}),
		pageHits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_store_chunk_page_hits_total",
			Help: "Reads of chunk pages found in the page cache.",
		}),
		pageMisses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_store_chunk_page_requests_total",
			Help: "Range requests to the bucket for chunk pages not in the page cache.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.blocks, m.syncs, m.failed, m.pageHits, m.pageMisses)
	}
	return m
}

type compactorMetrics struct {
	runs, failures, merges, marked, deleted prometheus.Counter
}

func newCompactorMetrics(reg prometheus.Registerer) compactorMetrics {
	m := compactorMetrics{
		runs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_compactor_runs_total",
			Help: "Passes of the compactor over the bucket.",
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_compactor_run_failures_total",
			Help: "Passes of the compactor that stopped at an error; the next pass takes up what is left.",
		}),
		merges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_compactor_merges_total",
			Help: "Blocks the compactor wrote by merging others.",
		}),
		marked: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_compactor_blocks_marked_total",
			Help: "Blocks marked for deletion: merged into another, or beyond the retention.",
		}),
		deleted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_compactor_blocks_deleted_total",
			Help: "Blocks deleted from the bucket once marked for the delete delay.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.runs, m.failures, m.merges, m.marked, m.deleted)
	}
	return m
}
