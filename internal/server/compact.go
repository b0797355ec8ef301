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

	"github.com/strata-db/strata/internal/bucket"
)

// CompactConfig is what `strata compact` runs with.
type CompactConfig struct {
	ObjstoreConfigFile string
	// DataDir holds the blocks a merge reads and writes.
	DataDir          string
	Retention        time.Duration
	DeleteDelay      time.Duration
	MaxBlockDuration time.Duration
	// Wait keeps compacting every WaitInterval, serving /metrics and the
	// health probe on ListenAddress; without it one pass is made.
	Wait          bool
	WaitInterval  time.Duration
	ListenAddress string
	Logger        *slog.Logger
}

// DefaultCompactConfig returns the configuration of `strata compact`
// without flags but the bucket's.
func DefaultCompactConfig() CompactConfig {
	return CompactConfig{
		DataDir:       "./compact-data",
		DeleteDelay:   bucket.DefaultCompactorOptions().DeleteDelay,
		WaitInterval:  5 * time.Minute,
		ListenAddress: ":10912",
	}
}

// RunCompact compacts a bucket: one pass, or with Wait one every
// WaitInterval until ctx is cancelled.
func RunCompact(ctx context.Context, cfg CompactConfig) error {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ObjstoreConfigFile == "" {
		return errors.New("compact: --objstore.config-file is required")
	}
	bkt, err := bucket.Open(cfg.ObjstoreConfigFile, logger.With("component", "objstore"))
	if err != nil {
		return err
	}
	defer bkt.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	co := bucket.DefaultCompactorOptions()
	co.Bucket, co.Dir, co.Retention, co.DeleteDelay, co.MaxBlockDuration = bkt, cfg.DataDir, cfg.Retention, cfg.DeleteDelay, cfg.MaxBlockDuration
	co.Logger, co.Registerer = logger.With("component", "compactor"), reg
	c := bucket.NewCompactor(co)
	logger.Info("strata compact started", "retention", cfg.Retention, "delete_delay", cfg.DeleteDelay, "wait", cfg.Wait)
	if !cfg.Wait {
		return c.Compact(ctx)
	}

	ln, err := net.Listen("tcp", cfg.ListenAddress)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.ListenAddress, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/-/healthy", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "strata compact is healthy.") })
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 30 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx, cfg.WaitInterval)
	}()
	var runErr error
	select {
	case <-ctx.Done():
	case err := <-serveErr:
		runErr = fmt.Errorf("serve: %w", err)
	}
	<-done
	srv.Close()
	return runErr
}
