// Package server wires the store, remote-write, OTLP, the PromQL engine and the
// HTTP API into the strata server. cmd/strata turns flags into a Config;
// tests and the benchmark tool run a server in-process with Run.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/discovery"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/thanos-io/objstore"
	"google.golang.org/grpc"

	"github.com/strata-db/strata/internal/api"
	"github.com/strata-db/strata/internal/block"
	"github.com/strata-db/strata/internal/bucket"
	"github.com/strata-db/strata/internal/db"
	"github.com/strata-db/strata/internal/ingest"
	"github.com/strata-db/strata/internal/ingest/importer"
	"github.com/strata-db/strata/internal/ingest/otlp"
	"github.com/strata-db/strata/internal/ingest/remotewrite"
	"github.com/strata-db/strata/internal/rollup"
	"github.com/strata-db/strata/internal/rules"
	"github.com/strata-db/strata/internal/scrape"
	"github.com/strata-db/strata/internal/storeapi"
	"github.com/strata-db/strata/internal/ui"
	"github.com/strata-db/strata/internal/wal"
)

// Config is everything the server is run with.
type Config struct {
	ListenAddress   string
	DataDir         string
	Logger          *slog.Logger // nil discards
	Version         string
	ShutdownTimeout time.Duration

	WALSegmentSize int64
	// WALCheckpointBytes is how much the WAL grows between checkpoints
	// at least (head.Options.CheckpointMinBytes).
	WALCheckpointBytes int64
	// WALSync says when a write is acknowledged: once in the OS (survives
	// a process crash) or once fsynced (survives power loss).
	WALSync             wal.SyncPolicy
	RemoteWriteMaxBytes int64
	RemoteWriteLimits   remotewrite.Limits
	// OTLP configures the OTLP receiver (its size limits, translation
	// and delta handling); LookbackDelta is set from the query's.
	OTLP otlp.Options
	// OTLPGRPCAddress is where OTLP/gRPC is served; empty: not at all.
	OTLPGRPCAddress string
	// StoreAPIAddress is where Thanos' StoreAPI is served over gRPC;
	// empty: not at all.
	StoreAPIAddress string
	// StoreAPILimits bound a StoreAPI Series request.
	StoreAPILimits storeapi.Limits
	// ObjstoreConfigFile is a bucket configuration in Thanos' format;
	// every block written from the head is uploaded there. Empty: none.
	ObjstoreConfigFile string
	// MaxSeries bounds the series in the store; 0 means no limit.
	MaxSeries int
	// MaxExemplars is how many exemplars the store keeps; 0 keeps none.
	MaxExemplars int
	// BlockDuration is the time range of the blocks the head is written
	// to; RetentionTime and RetentionSize (bytes) bound what is kept, 0
	// meaning no bound.
	BlockDuration time.Duration
	// MaxBlockDuration bounds merged blocks; 0 means the default.
	MaxBlockDuration time.Duration
	// OutOfOrderWindow is how far behind the newest sample a sample
	// older than its series' newest is still taken; 0 refuses them.
	OutOfOrderWindow time.Duration
	RetentionTime    time.Duration
	RetentionSize    int64

	LookbackDelta   time.Duration
	QueryTimeout    time.Duration
	QueryMaxSamples int
	// QueryMaxConcurrency bounds the queries evaluated at once
	// (api.Options.MaxConcurrentQueries).
	QueryMaxConcurrency int
	// QueryRangeParallelism is how many parts a range query may be
	// split into and evaluated at once (api.Options.RangeParallelism).
	QueryRangeParallelism int
	DefaultSubqueryStep   time.Duration
	ParserOptions         parser.Options
	DelayedNameRemoval    bool
	// UseStartTimestamps makes rate, increase, irate and resets take the
	// samples' start times into account, as Prometheus'
	// use-start-timestamps feature does.
	UseStartTimestamps bool
	// QueryEngine is QueryEngineRollup (internal/rollup evaluates range
	// functions and their aggregations, Prometheus' engine the rest)
	// or QueryEnginePrometheus (Prometheus' engine alone).
	QueryEngine string

	// RemoteRead bounds the remote-read endpoint.
	RemoteRead RemoteReadLimits
	// WebConfigFile is a web configuration file in Prometheus' format
	// (TLS, client certificates, basic auth users), applied to HTTP and
	// OTLP/gRPC; empty: plain HTTP, no authentication.
	WebConfigFile string
	// ResponseCompression compresses the HTTP API's and the web UI's
	// responses for clients that accept zstd or gzip.
	ResponseCompression bool

	// Flags are the command line's flags and their values, as
	// /api/v1/status/flags shows them.
	Flags map[string]string

	// ExternalLabels identify this server among others, as Prometheus'
	// global.external_labels: shown in /api/v1/status/config, where
	// Thanos' sidecar reads them, and added to the series remote-read
	// returns and to alerts. They are not stored with the series. A
	// configuration file's external labels are added to them.
	ExternalLabels labels.Labels

	// ConfigFile is a configuration file in Prometheus' format, whose
	// scrape_configs, rule_files, alerting, global, storage and otlp
	// sections strata applies (see configfile.go); empty: none.
	ConfigFile string
	// SelfScrape scrapes the server's own /metrics every 15s as job
	// "strata" when there is no ConfigFile (a file says what to scrape)
	// and no WebConfigFile (the scrape would need its TLS and auth).
	SelfScrape bool
	// ScrapeDiscoveryInterval is how long target updates are gathered
	// before the scrape pools are updated, as Prometheus'
	// --scrape.discovery-reload-interval.
	ScrapeDiscoveryInterval time.Duration
	// Reload, if not nil, reloads the configuration file each time it
	// receives (cmd/strata sends on SIGHUP).
	Reload <-chan struct{}
	// EnableLifecycle serves POST /-/reload, as Prometheus'
	// --web.enable-lifecycle.
	EnableLifecycle bool
	// EnableAdminAPI serves /api/v1/admin/tsdb/delete_series and
	// clean_tombstones, as Prometheus' --web.enable-admin-api.
	EnableAdminAPI bool
	// ExternalURL is the URL users reach the server at, for the links
	// alerts carry back to it; empty means http://<hostname>:<port>/,
	// as Prometheus makes it.
	ExternalURL string
	// Rules bounds the rule manager and alert sending; its storage and
	// engine fields are the server's own and are ignored.
	Rules rules.Options
}

// DefaultConfig returns the configuration of a server started without
// flags.
func DefaultConfig() Config {
	return Config{
		ListenAddress:       ":9201",
		DataDir:             "./data",
		Version:             "dev",
		ShutdownTimeout:     30 * time.Second,
		WALSegmentSize:      db.DefaultOptions().Head.WAL.SegmentSize,
		WALCheckpointBytes:  db.DefaultOptions().Head.CheckpointMinBytes,
		RemoteWriteMaxBytes: remotewrite.DefaultOptions().MaxBodyBytes,
		RemoteWriteLimits:   remotewrite.DefaultLimits(),
		OTLP:                otlp.DefaultOptions(),
		MaxExemplars:        db.DefaultOptions().Head.MaxExemplars,
		BlockDuration:       time.Duration(db.DefaultOptions().Head.BlockRange) * time.Millisecond,
		RetentionTime:       db.DefaultOptions().RetentionTime,
		LookbackDelta:       5 * time.Minute,
		QueryTimeout:        2 * time.Minute,
		QueryMaxSamples:     50000000,
		// Prometheus' default --query.max-concurrency.
		QueryMaxConcurrency: 20,
		// A query may use every core Go runs on; a busy server shares
		// them between queries as the scheduler does.
		QueryRangeParallelism:   runtime.GOMAXPROCS(0),
		DefaultSubqueryStep:     time.Minute,
		QueryEngine:             QueryEngineRollup,
		RemoteRead:              DefaultRemoteReadLimits(),
		ResponseCompression:     true,
		Rules:                   rules.DefaultOptions(),
		SelfScrape:              true,
		ScrapeDiscoveryInterval: scrape.DefaultDiscoveryInterval,
	}
}

// The values of Config.QueryEngine.
const (
	QueryEngineRollup     = "rollup"
	QueryEnginePrometheus = "prometheus"
)

// Run serves until ctx is cancelled, then shuts down cleanly: it stops
// accepting requests, lets the ones in flight finish, and closes the store.
// onListen, if not nil, is called with the bound address once the server
// listens (useful with port 0).
func Run(ctx context.Context, cfg Config, onListen func(net.Addr)) error {
	start := time.Now()
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	flagsCfg := cfg
	var fileConf *config.Config
	if cfg.ConfigFile != "" {
		var err error
		if fileConf, err = loadConfigFile(cfg.ConfigFile, &cfg, logger); err != nil {
			return err
		}
	}
	effective, err := effectiveConfig(cfg)
	if err != nil {
		return err
	}
	externalURL, err := computeExternalURL(cfg.ExternalURL, cfg.ListenAddress)
	if err != nil {
		return err
	}
	grpcOpts, err := grpcWebConfig(cfg.WebConfigFile)
	if err != nil {
		return err
	}
	var bkt objstore.Bucket
	if cfg.ObjstoreConfigFile != "" {
		if bkt, err = bucket.Open(cfg.ObjstoreConfigFile, logger.With("component", "objstore")); err != nil {
			return err
		}
		defer bkt.Close()
		if cfg.ExternalLabels.IsEmpty() {
			logger.Warn("uploading blocks without external labels: the blocks of several nodes in one bucket are told apart only by them")
		}
	}
	ln, err := net.Listen("tcp", cfg.ListenAddress)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.ListenAddress, err)
	}
	var grpcLn net.Listener
	if cfg.OTLPGRPCAddress != "" {
		if grpcLn, err = net.Listen("tcp", cfg.OTLPGRPCAddress); err != nil {
			ln.Close()
			return fmt.Errorf("listen for OTLP/gRPC on %s: %w", cfg.OTLPGRPCAddress, err)
		}
	}
	var storeLn net.Listener
	if cfg.StoreAPIAddress != "" {
		if storeLn, err = net.Listen("tcp", cfg.StoreAPIAddress); err != nil {
			ln.Close()
			if grpcLn != nil {
				grpcLn.Close()
			}
			return fmt.Errorf("listen for the StoreAPI on %s: %w", cfg.StoreAPIAddress, err)
		}
	}

	dbOpts := db.DefaultOptions()
	dbOpts.Dir = cfg.DataDir
	dbOpts.Head.WAL.SegmentSize = cfg.WALSegmentSize
	dbOpts.Head.CheckpointMinBytes = cfg.WALCheckpointBytes
	dbOpts.Head.WAL.Sync = cfg.WALSync
	dbOpts.Head.MaxSeries = cfg.MaxSeries
	dbOpts.Head.MaxExemplars = cfg.MaxExemplars
	dbOpts.Head.BlockRange = cfg.BlockDuration.Milliseconds()
	dbOpts.Head.OutOfOrderWindow = cfg.OutOfOrderWindow.Milliseconds()
	dbOpts.MaxBlockDuration = cfg.MaxBlockDuration
	dbOpts.RetentionTime = cfg.RetentionTime
	dbOpts.RetentionSize = cfg.RetentionSize
	dbOpts.Logger = logger
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	var store *db.DB
	var shipper *bucket.Shipper
	if bkt != nil {
		so := bucket.DefaultShipperOptions()
		so.Dir, so.Bucket, so.ExternalLabels = cfg.DataDir, bkt, cfg.ExternalLabels
		so.Blocks = func() []block.Meta { return store.Blocks() }
		so.Logger, so.Registerer = logger.With("component", "shipper"), reg
		shipper = bucket.NewShipper(so)
		dbOpts.Shipped, dbOpts.BlockWritten = shipper.Shipped, shipper.Notify
	}
	store = db.Open(dbOpts)

	registerStoreMetrics(reg, store)
	httpMetrics := newHTTPMetrics(reg)

	promParser := parser.NewParser(cfg.ParserOptions)
	engine := promql.NewEngine(promql.EngineOpts{
		Logger:                   logger.With("component", "query engine"),
		Reg:                      reg,
		MaxSamples:               cfg.QueryMaxSamples,
		Timeout:                  cfg.QueryTimeout,
		LookbackDelta:            cfg.LookbackDelta,
		NoStepSubqueryIntervalFn: func(int64) int64 { return cfg.DefaultSubqueryStep.Milliseconds() },
		EnableAtModifier:         true,
		EnableNegativeOffset:     true,
		EnablePerStepStats:       true,
		EnableDelayedNameRemoval: cfg.DelayedNameRemoval,
		UseStartTimestamps:       cfg.UseStartTimestamps,
		Parser:                   promParser,
	})

	mux := http.NewServeMux()
	rwOpts := remotewrite.DefaultOptions()
	rwOpts.MaxBodyBytes = cfg.RemoteWriteMaxBytes
	rwOpts.Limits = cfg.RemoteWriteLimits
	rwOpts.Logger = logger.With("component", "remote-write")
	ingestMetrics := ingest.NewMetricVecs(reg)
	rwOpts.Metrics = ingestMetrics.ForReceiver("remote-write")
	// One budget for remote-write samples and OTLP points together.
	limiter := ingest.NewRateLimiter(cfg.RemoteWriteLimits.MaxSamplesPerSecond)
	rwOpts.RateLimiter = limiter
	mux.Handle("POST /api/v1/write", httpMetrics.wrap("write", remotewrite.NewHandler(store, rwOpts)))
	impOpts := importer.DefaultOptions()
	impOpts.Limits = cfg.RemoteWriteLimits
	impOpts.RateLimiter = limiter
	impOpts.Metrics = ingestMetrics.ForReceiver("import")
	imp := importer.New(store, impOpts)
	mux.Handle("POST /api/v1/import", httpMetrics.wrap("import", imp.JSONLines()))
	mux.Handle("POST /api/v1/import/prometheus", httpMetrics.wrap("import", imp.Text()))
	otlpOpts := cfg.OTLP
	otlpOpts.LookbackDelta = cfg.LookbackDelta
	otlpOpts.Logger = logger.With("component", "otlp")
	otlpOpts.Metrics = ingestMetrics.ForReceiver("otlp")
	otlpOpts.RateLimiter = limiter
	// closeAll undoes what is open so far, when the start fails.
	closeAll := func() {
		ln.Close()
		if grpcLn != nil {
			grpcLn.Close()
		}
		if storeLn != nil {
			storeLn.Close()
		}
		store.Close()
	}
	otlpReceiver, err := otlp.NewHandler(store, otlpOpts)
	if err != nil {
		closeAll()
		return fmt.Errorf("OTLP receiver: %w", err)
	}
	defer otlpReceiver.Close()
	otlpHandler := httpMetrics.wrap("otlp", otlpReceiver)
	mux.Handle("POST /v1/metrics", otlpHandler)
	mux.Handle("POST /api/v1/otlp/v1/metrics", otlpHandler)

	var rollupEngine promql.QueryEngine
	if cfg.QueryEngine == QueryEngineRollup {
		rollupEngine = rollup.New(rollup.Options{
			Engine: engine, Parser: promParser, MaxSamples: cfg.QueryMaxSamples, DelayedNameRemoval: cfg.DelayedNameRemoval,
			LookbackDelta: cfg.LookbackDelta, UseStartTimestamps: cfg.UseStartTimestamps,
		})
	}

	ruleEngine := promql.QueryEngine(engine)
	if rollupEngine != nil {
		ruleEngine = rollupEngine
	}
	var configSource api.ConfigSource = api.StaticConfig(effective, start)
	// The service discoveries' metrics serve the targets' and the
	// Alertmanagers' discovery managers, and can be registered once.
	sdMetrics, err := discovery.CreateAndRegisterSDMetrics(reg)
	if err != nil {
		closeAll()
		return fmt.Errorf("service discovery metrics: %w", err)
	}
	var evaluator *rules.Evaluator
	var scraper *scrape.Scraper
	var cf *configFile
	if fileConf != nil {
		ro := cfg.Rules
		ro.Appendable, ro.Queryable, ro.Engine, ro.Parser = store, store, ruleEngine, promParser
		ro.ExternalURL, ro.Logger, ro.Registerer, ro.SDMetrics = externalURL, logger, reg, sdMetrics
		if evaluator, err = rules.New(ro); err == nil {
			err = evaluator.ApplyConfig(fileConf)
		}
		if err == nil {
			if scraper, err = newScraper(store, sdMetrics, cfg.ScrapeDiscoveryInterval, logger, reg); err == nil {
				err = scraper.ApplyConfig(fileConf)
			}
		}
		if err != nil {
			if evaluator != nil {
				evaluator.Stop()
			}
			if scraper != nil {
				scraper.Stop()
			}
			closeAll()
			return fmt.Errorf("couldn't load configuration (--config.file=%q): %w", cfg.ConfigFile, err)
		}
		cf = newConfigFile(cfg.ConfigFile, flagsCfg, cfg, fileConf, evaluator, scraper, logger.With("component", "config"), reg)
		configSource = cf
	} else if cfg.SelfScrape && cfg.WebConfigFile == "" {
		self, err := scrape.SelfConfig(ln.Addr().String())
		if err == nil {
			if scraper, err = newScraper(store, sdMetrics, cfg.ScrapeDiscoveryInterval, logger, reg); err == nil {
				err = scraper.ApplyConfig(self)
			}
		}
		if err != nil {
			closeAll()
			return fmt.Errorf("self-scrape: %w", err)
		}
	}
	apiOpts := api.Options{
		Engine:        engine,
		Rollup:        rollupEngine,
		Queryable:     store,
		Parser:        promParser,
		Logger:        logger.With("component", "api"),
		QueryTimeout:  cfg.QueryTimeout,
		LookbackDelta: cfg.LookbackDelta,
		Metadata:      store,
		Exemplars:     store,
		TSDBStatus:    tsdbStatus{store},
		Blocks:        tsdbStatus{store},
		Version:       cfg.Version,
		Flags:         cfg.Flags,
		Config:        configSource,
		StartTime:     start,
		ExternalURL:   externalURL,
		ListenAddress: ln.Addr().String(),

		RangeParallelism:     cfg.QueryRangeParallelism,
		MaxConcurrentQueries: cfg.QueryMaxConcurrency,

		StorageRetention: retentionString(cfg.RetentionTime, cfg.RetentionSize),
	}
	if evaluator != nil {
		apiOpts.Rules, apiOpts.Alertmanagers = evaluator, evaluator
	}
	if cfg.EnableAdminAPI {
		apiOpts.Admin = store
	}
	if scraper != nil {
		apiOpts.Targets = scraper
	}
	apiMux := http.NewServeMux()
	api.New(apiOpts).Register(apiMux)
	compress, err := responseCompression(cfg.ResponseCompression)
	if err != nil {
		return err
	}
	mux.Handle("/api/v1/", httpMetrics.wrap("api", compress(apiMux)))
	mux.Handle("POST /api/v1/read", httpMetrics.wrap("remote-read", newRemoteReadHandler(logger.With("component", "remote-read"), store, cfg.RemoteRead, cfg.ExternalLabels)))

	webUI := compress(ui.Handler())
	mux.Handle("GET /{$}", webUI)
	mux.Handle("GET /graph", webUI)
	mux.Handle("GET /query", webUI)
	mux.Handle("GET /static/", webUI)
	mux.HandleFunc("/-/healthy", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "strata is healthy.")
	})
	mux.HandleFunc("/-/ready", func(w http.ResponseWriter, _ *http.Request) {
		if !store.Ready() {
			http.Error(w, "strata is not ready: replaying the write-ahead log.", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "strata is ready.")
	})
	handleReload(mux, cfg.EnableLifecycle, cf)
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	// Go's profiles, as Prometheus serves them, for finding where CPU
	// and memory go in a running server.
	handlePprof(mux)

	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	serveErr := make(chan error, 3) // HTTP, OTLP/gRPC and the StoreAPI
	go func() {
		serveErr <- web.Serve(ln, srv, &web.FlagConfig{WebConfigFile: &cfg.WebConfigFile}, logger.With("component", "web"))
	}()
	var grpcSrv *grpc.Server
	if grpcLn != nil {
		grpcSrv = otlpReceiver.GRPCServer(append(grpcOpts, grpc.UnaryInterceptor(grpcMetrics(reg)))...)
		go func() {
			if err := grpcSrv.Serve(grpcLn); err != nil {
				serveErr <- fmt.Errorf("OTLP/gRPC: %w", err)
			}
		}()
		logger.Info("OTLP/gRPC listening", "listen", grpcLn.Addr().String())
	}
	var storeSrv *grpc.Server
	if storeLn != nil {
		storeSrv = serveStoreAPI(storeLn, grpcOpts, storeapi.New(storeapi.Chunks(store), storeapi.Options{
			ExternalLabels: cfg.ExternalLabels,
			LowestTime:     store.LowestTime,
			Limits:         cfg.StoreAPILimits,
		}), serveErr)
		logger.Info("Thanos StoreAPI listening", "listen", storeLn.Addr().String())
	}
	logger.Info("strata started", "version", cfg.Version, "listen", ln.Addr().String(), "data_dir", cfg.DataDir)
	if onListen != nil {
		onListen(ln.Addr())
	}

	openErr := make(chan error, 1)
	go func() { openErr <- store.Wait(ctx) }()

	var runErr error
	// stopShipper stops uploads, cutting one in flight short, before
	// the store closes.
	stopShipper := func() {}
	select {
	case <-ctx.Done():
	case err := <-serveErr:
		runErr = fmt.Errorf("serve HTTP: %w", err)
	case err := <-openErr:
		if err != nil && ctx.Err() == nil {
			runErr = fmt.Errorf("open store in %s: %w", cfg.DataDir, err)
			break
		}
		logger.Info("store ready")
		if shipper != nil {
			shipCtx, stopShipping := context.WithCancel(ctx)
			shipped := make(chan struct{})
			go func() {
				defer close(shipped)
				shipper.Run(shipCtx)
			}()
			stopShipper = func() { stopShipping(); <-shipped }
		}
		if cf != nil {
			cf.run()
			go reloadOn(ctx, cfg.Reload, cf)
		} else if scraper != nil {
			scraper.Run()
		}
		select {
		case <-ctx.Done():
		case err := <-serveErr:
			runErr = fmt.Errorf("serve HTTP: %w", err)
		}
	}
	logger.Info("shutting down")
	// Scraping and rules end while the HTTP server still serves, so that
	// no self-scrape finds strata gone and records it down: a reload
	// running finishes first, a group being evaluated commits its
	// results, and a scrape in flight is cut short and rolled back.
	if cf != nil {
		cf.stop()
	} else if scraper != nil {
		scraper.Stop()
	}

	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		logger.Warn("HTTP shutdown incomplete", "err", err)
	}
	if grpcSrv != nil {
		stopGRPC(shutdownCtx, grpcSrv)
	}
	if storeSrv != nil {
		stopGRPC(shutdownCtx, storeSrv)
	}
	stopShipper()
	if err := store.Close(); err != nil && runErr == nil {
		runErr = fmt.Errorf("close store: %w", err)
	}
	if runErr == nil {
		logger.Info("stopped cleanly")
	}
	return runErr
}

// serveStoreAPI serves api on ln in the background with Thanos' codec
// and opts; an error of Serve goes to errs.
func serveStoreAPI(ln net.Listener, opts []grpc.ServerOption, api *storeapi.Server, errs chan<- error) *grpc.Server {
	srv := grpc.NewServer(append(opts, grpc.ForceServerCodec(storeapi.Codec{}))...)
	api.Register(srv)
	go func() {
		if err := srv.Serve(ln); err != nil {
			errs <- fmt.Errorf("StoreAPI: %w", err)
		}
	}()
	return srv
}

// stopGRPC lets the RPCs in flight finish, as the HTTP server's Shutdown
// does, until ctx ends; then it cuts them off.
func stopGRPC(ctx context.Context, s *grpc.Server) {
	done := make(chan struct{})
	go func() {
		s.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		s.Stop()
		<-done
	}
}

// handlePprof serves Go's profiles under /debug/pprof/, as Prometheus and
// Thanos do.
func handlePprof(mux *http.ServeMux) {
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
}

// newScraper returns a scraper into store.
func newScraper(store *db.DB, sdMetrics *discovery.SDMetrics, every time.Duration, logger *slog.Logger, reg prometheus.Registerer) (*scrape.Scraper, error) {
	return scrape.New(scrape.Options{Appendable: store, SDMetrics: sdMetrics, DiscoveryInterval: every, Logger: logger, Registerer: reg})
}
