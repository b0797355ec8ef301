package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/strata-db/strata/internal/server"
)

// storeHelp is what `strata store --help` says before the flags.
const storeHelp = "The blocks of a bucket that strata nodes upload to (--objstore.config-file), served over Thanos' StoreAPI and the Prometheus HTTP API."

// runStore runs `strata store`: the blocks of a bucket served over
// Thanos' StoreAPI and the Prometheus HTTP API.
func runStore(args []string, stdout, stderr io.Writer) int {
	return runCommand("strata store", args, stdout, stderr, parseStoreFlags, func(ctx context.Context, cfg server.StoreConfig, logger *slog.Logger) error {
		cfg.Logger, cfg.Version = logger, version
		setGC()
		return server.RunStore(ctx, cfg, nil)
	})
}

// runCommand parses a subcommand's flags, printing help and --version
// to stdout, and runs it until SIGINT or SIGTERM, with a logger at the
// level the flags give; it returns the exit code: 2 for bad flags, 1 for
// a failed run.
func runCommand[C any](name string, args []string, stdout, stderr io.Writer, parseArgs func([]string, io.Writer) (C, slog.Level, error), run func(context.Context, C, *slog.Logger) error) int {
	cfg, level, err := parseArgs(args, stdout)
	if errors.Is(err, errPrinted) {
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

func parseStoreFlags(args []string, out io.Writer) (server.StoreConfig, slog.Level, error) {
	cfg := server.DefaultStoreConfig()
	var level slog.Level
	app := newApp("strata store", storeHelp, out)
	fs := flags{app}
	fs.String(&cfg.ObjstoreConfigFile, "objstore.config-file", "bucket configuration file in Thanos' format, the one the nodes upload their blocks with (required)")
	fs.String(&cfg.DataDir, "data-dir", "directory for the local copies of the blocks' indexes; may be deleted, at the cost of downloading them again")
	fs.String(&cfg.ListenAddress, "listen-address", "address to serve the Prometheus HTTP API, metrics and health probes on")
	fs.String(&cfg.StoreAPIAddress, "grpc.listen-address", "address to serve Thanos' StoreAPI on, for a Thanos Querier")
	fs.Duration(&cfg.SyncInterval, "sync-interval", "how often the bucket is listed for blocks added or deleted")
	cacheSize := "512MB"
	fs.String(&cacheSize, "store.cache-size", "most bytes of chunk pages kept in memory (units B, KB, MB, GB, base 2)")
	encodedSize := "256MB"
	fs.String(&encodedSize, "store.encoded-cache-size", "most bytes of chunks re-encoded for the StoreAPI kept in memory (units as --store.cache-size; 0 encodes every request's chunks anew)")
	fs.Int(&cfg.StoreAPILimits.MaxSeries, "store.limits.request-series", "most series a StoreAPI Series request may select; more is refused with ResourceExhausted (0: no limit)")
	fs.Int(&cfg.StoreAPILimits.MaxChunks, "store.limits.request-chunks", "most chunks a StoreAPI Series request may send (0: no limit)")
	fs.String(&cfg.WebConfigFile, "web.config.file", "TLS, client certificates and basic auth users in Prometheus' web configuration format, for HTTP and the StoreAPI")
	fs.Duration(&cfg.LookbackDelta, "query.lookback-delta", "how far back PromQL looks for the latest sample of a series")
	fs.Duration(&cfg.QueryTimeout, "query.timeout", "longest a query may run")
	fs.Int(&cfg.QueryMaxSamples, "query.max-samples", "most samples a single query may load into memory")
	logLevel := "info"
	fs.String(&logLevel, "log.level", "log level: debug, info, warn or error")
	if _, err := parse(app, args); err != nil {
		return cfg, level, err
	}
	if cfg.ObjstoreConfigFile == "" {
		return cfg, level, errors.New("--objstore.config-file is required")
	}
	if err := level.UnmarshalText([]byte(logLevel)); err != nil {
		return cfg, level, fmt.Errorf("--log.level: %w", err)
	}
	var err error
	if cfg.CacheBytes, err = parseBytes(cacheSize); err != nil {
		return cfg, level, fmt.Errorf("--store.cache-size: %w", err)
	}
	if cfg.EncodedCacheBytes, err = parseBytes(encodedSize); err != nil {
		return cfg, level, fmt.Errorf("--store.encoded-cache-size: %w", err)
	}
	return cfg, level, nil
}
