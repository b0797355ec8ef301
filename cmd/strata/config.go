package main

import (
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
)

// config is everything the flags set.
type config struct {
	listenAddress   string
	dataDir         string
	logLevel        slog.Level
	shutdownTimeout time.Duration

	walSegmentSize      int64
	remoteWriteMaxBytes int64

	lookbackDelta             time.Duration
	queryTimeout              time.Duration
	queryMaxSamples           int
	defaultEvaluationInterval time.Duration
	parserOptions             parser.Options
	delayedNameRemoval        bool
	// unknownFeatures are --enable-feature names strata does not know.
	unknownFeatures []string
}

// stringList is a flag that may be given many times.
type stringList []string

func (s *stringList) String() string     { return fmt.Sprint(*s) }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func parseFlags(args []string) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("strata", flag.ContinueOnError)
	fs.StringVar(&cfg.listenAddress, "listen-address", ":9201", "address to serve the HTTP API, remote-write and metrics on")
	fs.StringVar(&cfg.dataDir, "data-dir", "./data", "directory for the write-ahead log and data")
	logLevel := fs.String("log.level", "info", "log level: debug, info, warn or error")
	fs.DurationVar(&cfg.shutdownTimeout, "shutdown-timeout", 30*time.Second, "how long requests in flight may take to finish on shutdown")
	fs.Int64Var(&cfg.walSegmentSize, "wal.segment-size", 128<<20, "WAL segment file size in bytes")
	fs.Int64Var(&cfg.remoteWriteMaxBytes, "remote-write.max-request-bytes", 32<<20, "largest accepted remote-write request body (compressed), in bytes; larger ones get 413")
	fs.DurationVar(&cfg.lookbackDelta, "query.lookback-delta", 5*time.Minute, "how far back PromQL looks for the latest sample of a series at an evaluation time")
	fs.DurationVar(&cfg.queryTimeout, "query.timeout", 2*time.Minute, "longest a query may run")
	fs.IntVar(&cfg.queryMaxSamples, "query.max-samples", 50000000, "most samples a single query may load into memory")
	fs.DurationVar(&cfg.defaultEvaluationInterval, "query.default-subquery-step", time.Minute, "step of subqueries that do not give one")
	var features stringList
	fs.Var(&features, "enable-feature", "comma-separated PromQL features to enable, as in Prometheus: promql-experimental-functions, promql-extended-range-selectors, promql-delayed-name-removal, promql-binop-fill-modifiers, promql-duration-expr (may be repeated)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err := cfg.logLevel.UnmarshalText([]byte(*logLevel)); err != nil {
		return cfg, fmt.Errorf("--log.level: %w", err)
	}
	switch {
	case cfg.walSegmentSize < 1<<20:
		return cfg, fmt.Errorf("--wal.segment-size %d is below the minimum of 1 MiB", cfg.walSegmentSize)
	case cfg.remoteWriteMaxBytes <= 0:
		return cfg, fmt.Errorf("--remote-write.max-request-bytes must be positive")
	case cfg.lookbackDelta <= 0:
		return cfg, fmt.Errorf("--query.lookback-delta must be positive")
	case cfg.queryTimeout <= 0:
		return cfg, fmt.Errorf("--query.timeout must be positive")
	case cfg.queryMaxSamples <= 0:
		return cfg, fmt.Errorf("--query.max-samples must be positive")
	case cfg.defaultEvaluationInterval <= 0:
		return cfg, fmt.Errorf("--query.default-subquery-step must be positive")
	}
	for _, f := range splitFeatures(features) {
		switch f {
		case "promql-experimental-functions":
			cfg.parserOptions.EnableExperimentalFunctions = true
		case "promql-extended-range-selectors":
			cfg.parserOptions.EnableExtendedRangeSelectors = true
		case "promql-binop-fill-modifiers":
			cfg.parserOptions.EnableBinopFillModifiers = true
		case "promql-duration-expr":
			cfg.parserOptions.ExperimentalDurationExpr = true
		case "promql-delayed-name-removal":
			cfg.delayedNameRemoval = true
		default:
			cfg.unknownFeatures = append(cfg.unknownFeatures, f)
		}
	}
	return cfg, nil
}
