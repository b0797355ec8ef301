package server

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/strata-db/strata/internal/db"
	"github.com/strata-db/strata/internal/head"
)

// registerStoreMetrics exposes the store's counters. They read 0 until the
// store is ready.
func registerStoreMetrics(reg prometheus.Registerer, store *db.DB) {
	stat := func(f func(head.Stats) float64) func() float64 {
		return func() float64 {
			h := store.Head()
			if h == nil {
				return 0
			}
			return f(h.Stats())
		}
	}
	dbStat := func(f func(db.Stats) float64) func() float64 {
		return func() float64 {
			if !store.Ready() {
				return 0
			}
			return f(store.Stats())
		}
	}
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "strata_head_series",
			Help: "Series in the in-memory head.",
		}, stat(func(s head.Stats) float64 { return float64(s.Series) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "strata_head_samples_appended_total",
			Help: "Samples committed to the head since start, WAL replay excluded.",
		}, stat(func(s head.Stats) float64 { return float64(s.SamplesAppended) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "strata_head_samples_rejected_total",
			Help: "Samples refused as invalid: out of order, a different value for an existing timestamp, or invalid labels.",
		}, stat(func(s head.Stats) float64 { return float64(s.SamplesRejected) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "strata_head_samples_dropped_total",
			Help: "Samples logged but dropped when applied because a concurrent write had stored their timestamp first.",
		}, stat(func(s head.Stats) float64 { return float64(s.SamplesDropped) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "strata_head_out_of_order_samples_appended_total",
			Help: "Of the samples appended, those older than their series' newest sample, taken within the out-of-order window.",
		}, stat(func(s head.Stats) float64 { return float64(s.SamplesLate) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "strata_wal_replay_samples",
			Help: "Samples replayed from the WAL at start.",
		}, stat(func(s head.Stats) float64 { return float64(s.ReplayedSamples) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "strata_wal_replay_duration_seconds",
			Help: "How long the WAL replay at start took.",
		}, stat(func(s head.Stats) float64 { return s.ReplayDuration.Seconds() })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "strata_wal_bytes_written_total",
			Help: "Bytes written to the WAL since start.",
		}, stat(func(s head.Stats) float64 { return float64(s.WALBytesWritten) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "strata_head_chunks",
			Help: "Closed chunks in the in-memory head.",
		}, stat(func(s head.Stats) float64 { return float64(s.Chunks) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "strata_head_chunk_bytes",
			Help: "Bytes of the head's closed chunks and of the parts of its open ones written out, in files under chunks_head (read through mappings) or in memory outside the Go heap.",
		}, stat(func(s head.Stats) float64 { return float64(s.ChunkBytes) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "strata_head_chunk_file_bytes",
			Help: "Of strata_head_chunk_bytes, those in files under chunks_head, read through mappings: resident as far as the kernel keeps their pages (see strata_process_resident_file_bytes).",
		}, stat(func(s head.Stats) float64 { return float64(s.ChunkFileBytes) })),
		seriesMemory("series", stat(func(s head.Stats) float64 { return float64(s.SeriesCellBytes) })),
		seriesMemory("open_chunks", stat(func(s head.Stats) float64 { return float64(s.OpenChunkBytes) })),
		seriesMemory("label_ids", stat(func(s head.Stats) float64 { return float64(s.LabelIDBytes) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "strata_head_min_time_seconds",
			Help: "Oldest sample time the in-memory head may hold (older data is in blocks); 0 while it is empty.",
		}, stat(func(s head.Stats) float64 { return float64(s.MinTime) / 1000 })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "strata_head_max_time_seconds",
			Help: "Newest sample time in the in-memory head; 0 while it is empty.",
		}, stat(func(s head.Stats) float64 { return float64(s.MaxTime) / 1000 })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "strata_blocks_loaded",
			Help: "Blocks on disk the store reads.",
		}, dbStat(func(s db.Stats) float64 { return float64(s.Blocks) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "strata_blocks_bytes",
			Help: "Bytes of the blocks on disk (index and chunk files).",
		}, dbStat(func(s db.Stats) float64 { return float64(s.BlockBytes) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "strata_compactions_total",
			Help: "Blocks written from the head or merged from other blocks.",
		}, dbStat(func(s db.Stats) float64 { return float64(s.Compactions) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "strata_compactions_failed_total",
			Help: "Compactions that failed; the data stays where it was and they are retried.",
		}, dbStat(func(s db.Stats) float64 { return float64(s.CompactionFailures) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "strata_compaction_duration_seconds_total",
			Help: "Time spent compacting.",
		}, dbStat(func(s db.Stats) float64 { return s.CompactionTime.Seconds() })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "strata_retention_deleted_blocks_total",
			Help: "Blocks deleted by --retention.time or --retention.size.",
		}, dbStat(func(s db.Stats) float64 { return float64(s.RetentionDeletions) })),
		// Prometheus' name and value: Thanos' sidecar reads it to
		// advertise the oldest data a node holds.
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "prometheus_tsdb_lowest_timestamp_seconds",
			Help: "Oldest time the store may hold a sample at, in whole seconds (as Prometheus, 9223372036854775 while it holds none).",
		}, func() float64 { return float64(store.LowestTime() / 1000) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "strata_ready",
			Help: "1 once the WAL is replayed and the store serves reads and writes.",
		}, func() float64 {
			if store.Ready() {
				return 1
			}
			return 0
		}),
		newResidentCollector("/proc/self/status"),
	)
}

// seriesMemory is one part of strata_head_series_memory_bytes, which
// they add up to.
func seriesMemory(part string, f func() float64) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "strata_head_series_memory_bytes",
		Help:        "Memory the head holds for its series outside the Go heap, by part: the series themselves, the newest bytes of their open chunks, their label ids.",
		ConstLabels: prometheus.Labels{"part": part},
	}, f)
}

// httpMetrics times requests by handler and status code.
type httpMetrics struct {
	duration *prometheus.HistogramVec
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "strata_http_request_duration_seconds",
			Help:    "Time to answer HTTP requests, by handler and status code.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
		}, []string{"handler", "code"}),
	}
	reg.MustRegister(m.duration)
	return m
}

func (m *httpMetrics) wrap(name string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		next.ServeHTTP(sw, r)
		m.duration.WithLabelValues(name, strconv.Itoa(sw.code)).Observe(time.Since(start).Seconds())
	})
}

// statusWriter remembers the status code a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush sends what is buffered, for handlers that stream (streamed
// remote-read) and test for http.Flusher rather than use a
// ResponseController.
func (w *statusWriter) Flush() {
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// grpcMetrics times gRPC calls by method and status code.
func grpcMetrics(reg prometheus.Registerer) grpc.UnaryServerInterceptor {
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "strata_grpc_request_duration_seconds",
		Help:    "Time to answer gRPC calls (OTLP/gRPC), by method and status code.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
	}, []string{"method", "code"})
	reg.MustRegister(duration)
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := time.Now()
		resp, err := handler(ctx, req)
		duration.WithLabelValues(info.FullMethod, status.Code(err).String()).Observe(time.Since(start).Seconds())
		return resp, err
	}
}
