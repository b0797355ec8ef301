// Command strata is a metrics database: it receives Prometheus remote-write
// requests, keeps the samples in a crash-safe store and answers PromQL over
// the Prometheus HTTP API.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/KimMachineGun/automemlimit/memlimit"

	"github.com/strata-db/strata/internal/server"
)

// defaultGOGC is the garbage collector's target unless the GOGC
// environment variable sets one. Go's default of 100 lets the heap grow to
// twice what is live before a collection; strata's heap is mostly the
// head's series, which live for hours, and ingestion allocates almost
// nothing per sample, so collections are rare either way and a lower
// target costs little CPU while it saves most of that headroom. With 100k
// series over 8 simulated hours (docs/benchmarks.md), RSS at the end was
// 373 MiB at 100, 302 at 50 and 234 at 30, with CPU per sample within the
// runs' noise (1.72, 1.84 and 1.79 s per million). With 1M series over
// 3.5 simulated hours, the mean RSS over the second half was 0.72 KiB a
// series at 30 and 0.65 at 15, the collector's CPU 1.4 and 2.3 s, under
// 1% of the server's. Below about 107 MiB of live heap minGCHeadroom
// applies instead.
const defaultGOGC = 15

// setGC runs the collector at defaultGOGC, with minGCHeadroom, unless the
// GOGC environment variable sets a target: for the server and for `strata
// store`, whose heaps are mostly what lives for hours (the head's series;
// the store's caches of chunk pages and encoded chunks).
func setGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGOGC)
		keepGCHeadroom(defaultGOGC)
	}
}

// reloadOnHangup receives once for each SIGHUP, as Prometheus reloads
// its configuration file on it; signals that come while a reload runs
// make one more reload.
func reloadOnHangup() <-chan struct{} {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	reload := make(chan struct{}, 1)
	go func() {
		for range hup {
			select {
			case reload <- struct{}{}:
			default:
			}
		}
	}()
	return reload
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "tsdb" {
		os.Exit(runTSDB(os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "store" {
		os.Exit(runStore(os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "compact" {
		os.Exit(runCompact(os.Args[2:], os.Stdout, os.Stderr))
	}
	cfg, err := parseFlags(os.Args[1:], os.Stdout)
	if err != nil {
		if errors.Is(err, errPrinted) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "strata:", err)
		os.Exit(2)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.logLevel}))
	for _, f := range cfg.unknownFeatures {
		logger.Warn("unknown --enable-feature ignored", "feature", f)
	}
	cfg.server.Logger = logger
	cfg.server.Version = version
	setGC()
	if cfg.memLimitRatio > 0 {
		// As Prometheus does (--auto-gomemlimit): the cgroup's limit, or
		// else the machine's memory. GOMEMLIMIT in the environment wins.
		if _, err := memlimit.SetGoMemLimitWithOpts(
			memlimit.WithRatio(cfg.memLimitRatio),
			memlimit.WithProvider(memlimit.ApplyFallback(memlimit.FromCgroup, memlimit.FromSystem)),
			memlimit.WithLogger(logger),
		); err != nil {
			logger.Warn("could not set GOMEMLIMIT from the memory limit", "err", err)
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg.server.Reload = reloadOnHangup()
	if err := server.Run(ctx, cfg.server, nil); err != nil {
		fmt.Fprintln(os.Stderr, "strata:", err)
		os.Exit(1)
	}
}
