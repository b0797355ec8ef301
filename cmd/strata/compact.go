package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/prometheus/common/model"

	"github.com/strata-db/strata/internal/server"
)

// runCompact runs `strata compact`: merges, retention and deletion of
// the blocks in a bucket.
func runCompact(args []string, stderr io.Writer) int {
	return runCommand("strata compact", args, stderr, parseCompactFlags, func(ctx context.Context, cfg server.CompactConfig, logger *slog.Logger) error {
		cfg.Logger = logger
		return server.RunCompact(ctx, cfg)
	})
}

func parseCompactFlags(args []string, stderr io.Writer) (server.CompactConfig, slog.Level, error) {
	cfg := server.DefaultCompactConfig()
	var level slog.Level
	fs := flag.NewFlagSet("strata compact", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.ObjstoreConfigFile, "objstore.config-file", "", "bucket configuration file in Thanos' format, the one the nodes upload their blocks with (required)")
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "directory for the blocks a merge downloads and writes (emptied after each merge)")
	retention := fs.String("retention.time", "0", "how long the bucket keeps a block after its newest sample, by the clock; older blocks are marked for deletion; 0 keeps every block")
	deleteDelay := fs.String("delete-delay", model.Duration(cfg.DeleteDelay).String(), "how long a block marked for deletion stays in the bucket, for stores to stop reading it, before it is deleted")
	maxBlock := fs.String("max-block-duration", "0", "largest block that merges make; 0: the smaller of 31d and a tenth of --retention.time")
	fs.BoolVar(&cfg.Wait, "wait", false, "keep running, a pass every --wait-interval, with /metrics on --listen-address; without it one pass is made")
	fs.DurationVar(&cfg.WaitInterval, "wait-interval", cfg.WaitInterval, "time between passes with --wait")
	fs.StringVar(&cfg.ListenAddress, "listen-address", cfg.ListenAddress, "address to serve /metrics and /-/healthy on with --wait")
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
	for _, d := range []struct {
		name string
		s    string
		to   *time.Duration
	}{{"--retention.time", *retention, &cfg.Retention}, {"--delete-delay", *deleteDelay, &cfg.DeleteDelay}, {"--max-block-duration", *maxBlock, &cfg.MaxBlockDuration}} {
		v, err := model.ParseDuration(d.s)
		if err != nil {
			return cfg, level, fmt.Errorf("%s: %w", d.name, err)
		}
		*d.to = time.Duration(v)
	}
	return cfg, level, nil
}
