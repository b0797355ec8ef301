package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/prometheus/prometheus/promql"

	"github.com/strata-db/strata/internal/api"
	"github.com/strata-db/strata/internal/bucket"
	"github.com/strata-db/strata/internal/storeapi"
)

// StoreConfig is what `strata store` runs with: a bucket's blocks served
// over Thanos' StoreAPI and the Prometheus HTTP API, with no head and no
// ingestion.
type StoreConfig struct {
	ObjstoreConfigFile string
	// DataDir keeps the local copies of the blocks' indexes.
	DataDir string
	// ListenAddress serves the query API, /metrics and the health
	// probes; StoreAPIAddress the StoreAPI.
	ListenAddress, StoreAPIAddress string
	SyncInterval                   time.Duration
	CacheBytes                     int64
	// EncodedCacheBytes bounds the StoreAPI's cache of chunks encoded
	// into Prometheus' kinds (storeapi.Cache); 0 turns it off.
	EncodedCacheBytes           int64
	StoreAPILimits              storeapi.Limits
	WebConfigFile               string
	LookbackDelta, QueryTimeout time.Duration
	QueryMaxSamples             int
	ShutdownTimeout             time.Duration
	Version                     string
	Logger                      *slog.Logger
}

// DefaultStoreConfig returns the configuration of `strata store` without
// flags but the bucket's.
func DefaultStoreConfig() StoreConfig {
	return StoreConfig{
		DataDir:         "./store-data",
		ListenAddress:   ":10902",
		StoreAPIAddress: ":10901",
		// Blocks reach a bucket every block range (two hours) per
		// node; a minute's delay is well inside that.
		SyncInterval: time.Minute,
		CacheBytes:   bucket.DefaultStoreOptions().CacheBytes,
		// A dashboard's chunks over a day of some ten thousand
		// series at 15 s: 58M samples at about 2.5 bytes each, the
		// pieces' XOR bytes with their time ranges and offsets.
		EncodedCacheBytes: 256 << 20,
		LookbackDelta:     5 * time.Minute,
		QueryTimeout:      2 * time.Minute,
		QueryMaxSamples:   50000000,
		ShutdownTimeout:   30 * time.Second,
		Version:           "dev",
	}
}

// RunStore serves a bucket's blocks until ctx is cancelled. It lists the
// bucket once before it reports ready, and again every SyncInterval.
func RunStore(ctx context.Context, cfg StoreConfig, onListen func(http, grpc net.Addr)) error {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ObjstoreConfigFile == "" {
		return errors.New("store: --objstore.config-file is required")
	}
	grpcOpts, err := grpcWebConfig(cfg.WebConfigFile)
	if err != nil {
		return err
	}
	bkt, err := bucket.Open(cfg.ObjstoreConfigFile, logger.With("component", "objstore"))
	if err != nil {
		return err
	}
	defer bkt.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	so := bucket.DefaultStoreOptions()
	so.Bucket, so.Dir, so.CacheBytes = bkt, cfg.DataDir, cfg.CacheBytes
	so.Logger, so.Registerer = logger.With("component", "store"), reg
	store := bucket.NewStore(so)
	defer store.Close()

	ln, err := net.Listen("tcp", cfg.ListenAddress)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.ListenAddress, err)
	}
	storeLn, err := net.Listen("tcp", cfg.StoreAPIAddress)
	if err != nil {
		ln.Close()
		return fmt.Errorf("listen for the StoreAPI on %s: %w", cfg.StoreAPIAddress, err)
	}
	engine := promql.NewEngine(promql.EngineOpts{
		Logger: logger.With("component", "query engine"), Reg: reg,
		MaxSamples: cfg.QueryMaxSamples, Timeout: cfg.QueryTimeout, LookbackDelta: cfg.LookbackDelta,
		EnableAtModifier: true, EnableNegativeOffset: true,
	})
	ready := make(chan struct{})
	mux := http.NewServeMux()
	apiMux := http.NewServeMux()
	api.New(api.Options{
		Engine: engine, Queryable: store, Logger: logger.With("component", "api"),
		QueryTimeout: cfg.QueryTimeout, LookbackDelta: cfg.LookbackDelta, Version: cfg.Version,
		StartTime: time.Now(),
	}).Register(apiMux)
	mux.Handle("/api/v1/", apiMux)
	mux.HandleFunc("/-/healthy", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "strata store is healthy.") })
	mux.HandleFunc("/-/ready", func(w http.ResponseWriter, _ *http.Request) {
		select {
		case <-ready:
			fmt.Fprintln(w, "strata store is ready.")
		default:
			http.Error(w, "strata store is not ready: listing the bucket.", http.StatusServiceUnavailable)
		}
	})
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	handlePprof(mux)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 30 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	serveErr := make(chan error, 2)
	go func() {
		serveErr <- web.Serve(ln, srv, &web.FlagConfig{WebConfigFile: &cfg.WebConfigFile}, logger.With("component", "web"))
	}()
	chunkSrc := storeapi.Chunks(store)
	if cfg.EncodedCacheBytes > 0 {
		chunkSrc = storeapi.CachedChunks(store, newEncodedCache(reg, cfg.EncodedCacheBytes))
	}
	storeSrv := serveStoreAPI(storeLn, grpcOpts, storeapi.New(chunkSrc, storeapi.Options{
		LabelSets: store.LabelSets,
		TimeRange: store.TimeRange,
		Limits:    cfg.StoreAPILimits,
	}), serveErr)
	logger.Info("strata store started", "version", cfg.Version, "listen", ln.Addr().String(), "grpc", storeLn.Addr().String(), "data_dir", cfg.DataDir)
	if onListen != nil {
		onListen(ln.Addr(), storeLn.Addr())
	}

	syncCtx, stopSync := context.WithCancel(ctx)
	synced := make(chan struct{})
	go func() {
		defer close(synced)
		if err := store.Sync(syncCtx); err != nil && syncCtx.Err() == nil {
			logger.Warn("bucket sync failed; retried at the next", "err", err)
		}
		close(ready)
		mint, maxt := store.TimeRange()
		logger.Info("bucket listed", "label_sets", len(store.LabelSets()), "min_time", mint, "max_time", maxt)
		store.Run(syncCtx, cfg.SyncInterval)
	}()

	var runErr error
	select {
	case <-ctx.Done():
	case err := <-serveErr:
		runErr = fmt.Errorf("serve: %w", err)
	}
	logger.Info("shutting down")
	stopSync()
	<-synced
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		logger.Warn("HTTP shutdown incomplete", "err", err)
	}
	stopGRPC(shutdownCtx, storeSrv)
	return runErr
}

// newEncodedCache returns the StoreAPI's cache of encoded chunks, with
// its lookups and size on /metrics.
func newEncodedCache(reg prometheus.Registerer, limit int64) *storeapi.Cache {
	hits := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "strata_store_encoded_chunk_hits_total",
		Help: "Stored chunks a StoreAPI request found already encoded into Prometheus' kinds in the encoded cache.",
	})
	misses := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "strata_store_encoded_chunk_misses_total",
		Help: "Stored chunks a StoreAPI request encoded into Prometheus' kinds, not finding them in the encoded cache.",
	})
	c := storeapi.NewCache(limit, hits, misses)
	reg.MustRegister(hits, misses, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "strata_store_encoded_cache_bytes",
		Help: "Bytes held by the encoded cache: stored chunks and their encoding into Prometheus' kinds.",
	}, func() float64 { return float64(c.Size()) }))
	return c
}
