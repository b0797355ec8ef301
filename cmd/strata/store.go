package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/strata-db/strata/internal/server"
)

// runStore runs `strata store`: the blocks of a bucket served over
// Thanos' StoreAPI and the Prometheus HTTP API.
func runStore(args []string, stderr io.Writer) int {
	return runCommand("strata store", args, stderr, parseStoreFlags, func(ctx context.Context, cfg server.StoreConfig, logger *slog.Logger) error {
		cfg.Logger, cfg.Version = logger, version
		setGC()
		return server.RunStore(ctx, cfg, nil)
	})
}

// runCommand parses a subcommand's flags and runs it until SIGINT or
// SIGTERM, with a logger at the level the flags give; it returns the
// exit code: 2 for bad flags, 1 for a failed run.
func runCommand[C any](name string, args []string, stderr io.Writer, parse func([]string, io.Writer) (C, slog.Level, error), run func(context.Context, C, *slog.Logger) error) int {
	cfg, level, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, name+":", err)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, logger); err != nil {
		fmt.Fprintln(stderr, name+":", err)
		return 1
	}
	return 0
}

func parseStoreFlags(args []string, stderr io.Writer) (server.StoreConfig, slog.Level, error) {
	cfg := server.DefaultStoreConfig()
	var level slog.Level
	fs := flag.NewFlagSet("strata store", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.ObjstoreConfigFile, "objstore.config-file", "", "bucket configuration file in Thanos' format, the one the nodes upload their blocks with (required)")
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "directory for the local copies of the blocks' indexes; may be deleted, at the cost of downloading them again")
	fs.StringVar(&cfg.ListenAddress, "listen-address", cfg.ListenAddress, "address to serve the Prometheus HTTP API, metrics and health probes on")
	fs.StringVar(&cfg.StoreAPIAddress, "grpc.listen-address", cfg.StoreAPIAddress, "address to serve Thanos' StoreAPI on, for a Thanos Querier")
	fs.DurationVar(&cfg.SyncInterval, "sync-interval", cfg.SyncInterval, "how often the bucket is listed for blocks added or deleted")
	cacheSize := fs.String("store.cache-size", "512MB", "most bytes of chunk pages kept in memory (units B, KB, MB, GB, base 2)")
	encodedSize := fs.String("store.encoded-cache-size", "256MB", "most bytes of chunks re-encoded for the StoreAPI kept in memory (units as --store.cache-size; 0 encodes every request's chunks anew)")
	fs.IntVar(&cfg.StoreAPILimits.MaxSeries, "store.limits.request-series", 0, "most series a StoreAPI Series request may select; more is refused with ResourceExhausted (0: no limit)")
	fs.IntVar(&cfg.StoreAPILimits.MaxChunks, "store.limits.request-chunks", 0, "most chunks a StoreAPI Series request may send (0: no limit)")
	fs.StringVar(&cfg.WebConfigFile, "web.config.file", "", "TLS, client certificates and basic auth users in Prometheus' web configuration format, for HTTP and the StoreAPI")
	fs.DurationVar(&cfg.LookbackDelta, "query.lookback-delta", cfg.LookbackDelta, "how far back PromQL looks for the latest sample of a series")
	fs.DurationVar(&cfg.QueryTimeout, "query.timeout", cfg.QueryTimeout, "longest a query may run")
	fs.IntVar(&cfg.QueryMaxSamples, "query.max-samples", cfg.QueryMaxSamples, "most samples a single query may load into memory")
	logLevel := fs.String("log.level", "info", "log level: debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return cfg, level, err
	}
	if fs.NArg() > 0 {
		return cfg, level, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if cfg.ObjstoreConfigFile == "" {
		return cfg, level, errors.New("--objstore.config-file is required")
	}
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return cfg, level, fmt.Errorf("--log.level: %w", err)
	}
	var err error
	if cfg.CacheBytes, err = parseBytes(*cacheSize); err != nil {
		return cfg, level, fmt.Errorf("--store.cache-size: %w", err)
	}
	if cfg.EncodedCacheBytes, err = parseBytes(*encodedSize); err != nil {
		return cfg, level, fmt.Errorf("--store.encoded-cache-size: %w", err)
	}
	return cfg, level, nil
}
