// Package scrape scrapes the targets of a configuration file's
// scrape_configs into strata's store. It is Prometheus' own machinery,
// wired as Prometheus' main wires it: the discovery package's Manager
// (named "scrape") turns each job's service discovery configurations
// into target groups, and the scrape package's Manager relabels them into
// targets, scrapes each at its interval, parses the exposition (text,
// OpenMetrics or protobuf with native histograms), applies
// metric_relabel_configs and the limits, and appends the samples, the
// report series (up, scrape_duration_seconds, scrape_samples_scraped,
// scrape_samples_post_metric_relabeling, scrape_series_added) and the
// staleness markers of vanished series and targets.
//
// What strata brings is the storage: samples, exemplars and metadata go
// through strata's appender (internal/promstore) and so through the head
// and its WAL as remote-written samples do; a scrape's samples are
// durable once its Commit returns. The scrape loop's cache keeps each
// series' labels and strata's series reference across scrapes, so a
// steady target costs a reference lookup per sample, not a label hash.
//
// # Reloading
//
// ApplyConfig replaces the scrape configurations and the discovery
// configurations together; the scrape manager keeps the loops of
// targets whose configuration did not change, and with them their
// caches and staleness tracking.
package scrape

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/discovery"
	promscrape "github.com/prometheus/prometheus/scrape"
	"github.com/prometheus/prometheus/util/logging"

	"github.com/strata-db/strata/internal/promstore"
	_ "github.com/strata-db/strata/internal/sd" // the targets' service discoveries
	"github.com/strata-db/strata/internal/storage"
)

// Options configure a Scraper.
type Options struct {
	// Appendable takes the scraped samples. Required.
	Appendable storage.Appendable
	// SDMetrics are the service discoveries' metrics, shared with the
	// Alertmanagers' discovery (they can be registered once); nil
	// creates and registers them.
	SDMetrics *discovery.SDMetrics
	// Logger; nil discards. Registerer takes the scrape manager's and
	// the discovery's metrics; nil registers none.
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	// DiscoveryInterval is how long target updates are gathered before
	// they are applied; 0 is DefaultDiscoveryInterval.
	DiscoveryInterval time.Duration
}

// DefaultDiscoveryInterval is Prometheus' (its discovery managers' and
// its hidden --scrape.discovery-reload-interval): it keeps a churning
// Kubernetes cluster from restarting scrape pools at every event.
const DefaultDiscoveryInterval = 5 * time.Second

// Scraper scrapes the targets of the scrape configurations in effect.
// ApplyConfig may be called before Run and any number of times while it
// runs, from one goroutine at a time; Run and Stop are called once each,
// from that goroutine too. The accessors are safe for concurrent use.
type Scraper struct {
	logger        *slog.Logger
	manager       *promscrape.Manager
	discovery     *discovery.Manager
	stopDiscovery context.CancelFunc
	running       bool
	done          chan struct{}
}

// New returns a Scraper with no targets.
func New(opts Options) (*Scraper, error) {
	if opts.Appendable == nil {
		return nil, errors.New("scrape: Appendable is required")
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	reg := opts.Registerer
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	sdMetrics := opts.SDMetrics
	if sdMetrics == nil {
		var err error
		if sdMetrics, err = discovery.CreateAndRegisterSDMetrics(reg); err != nil {
			return nil, fmt.Errorf("scrape: service discovery metrics: %w", err)
		}
	}
	every := opts.DiscoveryInterval
	if every <= 0 {
		every = DefaultDiscoveryInterval
	}
	manager, err := promscrape.NewManager(&promscrape.Options{
		// Metadata goes with the samples, as remote-write 2.0 sends it,
		// for /api/v1/metadata.
		AppendMetadata:          true,
		DiscoveryReloadInterval: model.Duration(every),
	}, logger.With("component", "scrape manager"), logging.NewJSONFileLogger, nil, promstore.AppendableV2(opts.Appendable), reg)
	if err != nil {
		return nil, fmt.Errorf("scrape: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := discovery.NewManager(ctx, logger.With("component", "discovery manager scrape"), reg, sdMetrics, discovery.Name("scrape"), discovery.Updatert(every))
	if d == nil {
		cancel()
		manager.UnregisterMetrics()
		return nil, errors.New("scrape: could not create the target discovery")
	}
	return &Scraper{logger: logger, manager: manager, discovery: d, stopDiscovery: cancel, done: make(chan struct{})}, nil
}

// ApplyConfig makes conf's scrape configurations (scrape_configs and
// those of scrape_config_files) the ones in effect. A file of
// scrape_config_files that does not load is an error, and nothing
// changes.
func (s *Scraper) ApplyConfig(conf *config.Config) error {
	scfgs, err := conf.GetScrapeConfigs()
	if err != nil {
		return fmt.Errorf("scrape configurations: %w", err)
	}
	// The scrape manager first, so that it knows a job's configuration
	// by the time the discovery sends its targets.
	if err := s.manager.ApplyConfig(conf); err != nil {
		return fmt.Errorf("scrape: %w", err)
	}
	sd := make(map[string]discovery.Configs, len(scfgs))
	for _, c := range scfgs {
		sd[c.JobName] = c.ServiceDiscoveryConfigs
	}
	if err := s.discovery.ApplyConfig(sd); err != nil {
		return fmt.Errorf("target discovery: %w", err)
	}
	return nil
}

// Run starts discovering and scraping targets and returns at once. Call
// it once the store has replayed its WAL.
func (s *Scraper) Run() {
	s.running = true
	go func() {
		// Stop ends it with its context: no error then.
		if err := s.discovery.Run(); err != nil && !errors.Is(err, context.Canceled) {
			s.logger.Error("target discovery stopped", "err", err)
		}
	}()
	go func() {
		if err := s.manager.Run(s.discovery.SyncCh()); err != nil {
			s.logger.Error("scrape manager stopped", "err", err)
		}
		close(s.done)
	}()
}

// Stop ends scraping, then discovery. A scrape in flight is cut short
// and what it had appended is rolled back; every committed scrape is in
// the WAL.
func (s *Scraper) Stop() {
	s.manager.Stop()
	if s.running {
		<-s.done
	}
	s.stopDiscovery()
}

// TargetsActive returns the targets being scraped, by scrape pool.
func (s *Scraper) TargetsActive() map[string][]*promscrape.Target { return s.manager.TargetsActive() }

// TargetsDropped returns targets that relabelling dropped, by scrape
// pool, up to each job's keep_dropped_targets.
func (s *Scraper) TargetsDropped() map[string][]*promscrape.Target {
	return s.manager.TargetsDropped()
}

// TargetsDroppedCounts returns how many targets relabelling dropped, by
// scrape pool.
func (s *Scraper) TargetsDroppedCounts() map[string]int { return s.manager.TargetsDroppedCounts() }

// ScrapePools returns the names of the scrape pools in effect.
func (s *Scraper) ScrapePools() []string { return s.manager.ScrapePools() }

// SelfConfig is the configuration strata runs without --config.file: it
// scrapes its own /metrics at addr (host:port; an unspecified host is
// localhost) every 15s as job "strata", so that a new server shows data
// at once.
func SelfConfig(addr string) (*config.Config, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("self-scrape address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	yaml := fmt.Sprintf("global:\n  scrape_interval: 15s\nscrape_configs:\n  - job_name: strata\n    static_configs:\n      - targets: [%q]\n", net.JoinHostPort(host, port))
	return config.Load(yaml, slog.New(slog.DiscardHandler))
}
