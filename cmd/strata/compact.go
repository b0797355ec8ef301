package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/prometheus/common/model"

	"github.com/strata-db/strata/internal/server"
)

// compactHelp is what `strata compact --help` says before the flags.
const compactHelp = "Merges, retention and deletion of the blocks in a bucket that strata nodes upload to (--objstore.config-file), as Thanos' compactor does; one pass, or one every --wait-interval with --wait."

// runCompact runs `strata compact`: merges, retention and deletion of
// the blocks in a bucket.
func runCompact(args []string, stdout, stderr io.Writer) int {
	return runCommand("strata compact", args, stdout, stderr, parseCompactFlags, func(ctx context.Context, cfg server.CompactConfig, logger *slog.Logger) error {
		cfg.Logger = logger
		return server.RunCompact(ctx, cfg)
	})
}

func parseCompactFlags(args []string, out io.Writer) (server.CompactConfig, slog.Level, error) {
	cfg := server.DefaultCompactConfig()
	var level slog.Level
	app := newApp("strata compact", compactHelp, out)
	fs := flags{app}
	fs.String(&cfg.ObjstoreConfigFile, "objstore.config-file", "bucket configuration file in Thanos' format, the one the nodes upload their blocks with (required)")
	fs.String(&cfg.DataDir, "data-dir", "directory for the blocks a merge downloads and writes (emptied after each merge)")
	retention := "0"
	fs.String(&retention, "retention.time", "how long the bucket keeps a block after its newest sample, by the clock; older blocks are marked for deletion; 0 keeps every block")
	deleteDelay := model.Duration(cfg.DeleteDelay).String()
	fs.String(&deleteDelay, "delete-delay", "how long a block marked for deletion stays in the bucket, for stores to stop reading it, before it is deleted")
	maxBlock := "0"
	fs.String(&maxBlock, "max-block-duration", "largest block that merges make; 0: the smaller of 31d and a tenth of --retention.time")
	fs.Bool(&cfg.Wait, "wait", "keep running, a pass every --wait-interval, with /metrics on --listen-address; without it one pass is made")
	fs.Duration(&cfg.WaitInterval, "wait-interval", "time between passes with --wait")
	fs.String(&cfg.ListenAddress, "listen-address", "address to serve /metrics and /-/healthy on with --wait")
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
	for _, d := range []struct {
		name string
		s    string
		to   *time.Duration
	}{{"--retention.time", retention, &cfg.Retention}, {"--delete-delay", deleteDelay, &cfg.DeleteDelay}, {"--max-block-duration", maxBlock, &cfg.MaxBlockDuration}} {
		v, err := model.ParseDuration(d.s)
		if err != nil {
			return cfg, level, fmt.Errorf("%s: %w", d.name, err)
		}
		*d.to = time.Duration(v)
	}
	return cfg, level, nil
}
