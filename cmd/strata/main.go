// Command strata is a metrics database: it receives Prometheus remote-write
// requests, keeps the samples in a crash-safe store and answers PromQL over
// the Prometheus HTTP API.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/strata-db/strata/internal/api"
	"github.com/strata-db/strata/internal/db"
	"github.com/strata-db/strata/internal/ingest/remotewrite"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "strata:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "strata:", err)
		os.Exit(1)
	}
}

// run serves until ctx is cancelled, then shuts down cleanly: it stops
// accepting requests, lets the ones in flight finish, and closes the store.
func run(ctx context.Context, cfg config) error {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.logLevel}))

	for _, f := range cfg.unknownFeatures {
		logger.Warn("unknown --enable-feature ignored", "feature", f)
	}

	ln, err := net.Listen("tcp", cfg.listenAddress)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.listenAddress, err)
	}

	dbOpts := db.DefaultOptions()
	dbOpts.Dir = cfg.dataDir
	dbOpts.Head.WAL.SegmentSize = cfg.walSegmentSize
	dbOpts.Logger = logger
	store := db.Open(dbOpts)

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	registerStoreMetrics(reg, store)
	httpMetrics := newHTTPMetrics(reg)

	promParser := parser.NewParser(cfg.parserOptions)
	engine := promql.NewEngine(promql.EngineOpts{
		Logger:                   logger.With("component", "query engine"),
		Reg:                      reg,
		MaxSamples:               cfg.queryMaxSamples,
		Timeout:                  cfg.queryTimeout,
		LookbackDelta:            cfg.lookbackDelta,
		NoStepSubqueryIntervalFn: func(int64) int64 { return cfg.defaultEvaluationInterval.Milliseconds() },
		EnableAtModifier:         true,
		EnableNegativeOffset:     true,
		EnablePerStepStats:       true,
		EnableDelayedNameRemoval: cfg.delayedNameRemoval,
		Parser:                   promParser,
	})

	mux := http.NewServeMux()
	rwOpts := remotewrite.DefaultOptions()
	rwOpts.MaxBodyBytes = cfg.remoteWriteMaxBytes
	rwOpts.Logger = logger.With("component", "remote-write")
	mux.Handle("POST /api/v1/write", httpMetrics.wrap("write", remotewrite.NewHandler(store, rwOpts)))

	apiMux := http.NewServeMux()
	api.New(api.Options{
		Engine:        engine,
		Queryable:     store,
		Parser:        promParser,
		Logger:        logger.With("component", "api"),
		QueryTimeout:  cfg.queryTimeout,
		LookbackDelta: cfg.lookbackDelta,
		Version:       version,
	}).Register(apiMux)
	mux.Handle("/api/v1/", httpMetrics.wrap("api", apiMux))

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
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))

	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	logger.Info("strata started", "version", version, "listen", ln.Addr().String(), "data_dir", cfg.dataDir)

	openErr := make(chan error, 1)
	go func() { openErr <- store.Wait(ctx) }()

	var runErr error
	select {
	case <-ctx.Done():
		logger.Info("shutting down")
	case err := <-serveErr:
		runErr = fmt.Errorf("serve HTTP: %w", err)
	case err := <-openErr:
		if err != nil && ctx.Err() == nil {
			runErr = fmt.Errorf("open store in %s: %w", cfg.dataDir, err)
			break
		}
		logger.Info("store ready")
		select {
		case <-ctx.Done():
			logger.Info("shutting down")
		case err := <-serveErr:
			runErr = fmt.Errorf("serve HTTP: %w", err)
		}
	}

	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		logger.Warn("HTTP shutdown incomplete", "err", err)
	}
	if err := store.Close(); err != nil && runErr == nil {
		runErr = fmt.Errorf("close store: %w", err)
	}
	if runErr == nil {
		logger.Info("stopped cleanly")
	}
	return runErr
}

// splitFeatures turns repeated, comma-separated --enable-feature values
// into a list.
func splitFeatures(values []string) []string {
	var out []string
	for _, v := range values {
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				out = append(out, f)
			}
		}
	}
	return out
}
