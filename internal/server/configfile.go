package server

import (
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/api"
	"github.com/strata-db/strata/internal/rules"
	"github.com/strata-db/strata/internal/scrape"
)

// A configuration file in Prometheus' format (--config.file), parsed by
// Prometheus' own config package. strata applies:
//   - global: the scrape and evaluation settings and external_labels;
//   - scrape_configs, scrape_config_files, rule_files and alerting, at
//     start and on every reload;
//   - storage (tsdb.out_of_order_time_window, tsdb.retention,
//     exemplars.max_exemplars) and otlp, at start: where the file sets
//     them it wins over the flags, and a flag given another value is
//     logged.
//
// The sections strata does not act on are named in a warning at each
// load. A file that does not load refuses the start; on reload it keeps
// the configuration in effect (see rules.Evaluator.ApplyConfig); the rules
// are applied before the scrape configurations, so a rule file that does
// not parse changes neither.

// loadConfigFile loads path, applies what it sets of storage, otlp and
// external labels to cfg, and warns of what strata does not act on. The
// configuration returned has cfg's external labels, the flags' with the
// file's: one set for rules, alerts and the rest of the server.
func loadConfigFile(path string, cfg *Config, logger *slog.Logger) (*config.Config, error) {
	conf, err := config.LoadFile(path, false, logger)
	if err != nil {
		return nil, fmt.Errorf("couldn't load configuration (--config.file=%q): %w", path, err)
	}
	warnUnsupported(conf, logger)
	cfg.ExternalLabels = mergeExternalLabels(cfg.ExternalLabels, conf.GlobalConfig.ExternalLabels, logger)
	conf.GlobalConfig.ExternalLabels = cfg.ExternalLabels
	applyStorage(conf, cfg, logger)
	return conf, nil
}

// warnUnsupported names the sections of conf strata does not act on.
func warnUnsupported(conf *config.Config, logger *slog.Logger) {
	var ignored []string
	if len(conf.RemoteWriteConfigs) > 0 {
		ignored = append(ignored, "remote_write")
	}
	if len(conf.RemoteReadConfigs) > 0 {
		ignored = append(ignored, "remote_read")
	}
	if conf.TracingConfig.Endpoint != "" {
		ignored = append(ignored, "tracing")
	}
	if conf.Runtime.GoGC != config.DefaultRuntimeConfig.GoGC {
		ignored = append(ignored, "runtime.gogc")
	}
	if len(ignored) > 0 {
		logger.Warn("configuration file sections strata does not act on are ignored", "sections", ignored)
	}
}

// mergeExternalLabels is the flags' external labels with the file's
// added; where both name a label, the file's value wins and the
// conflict is logged.
func mergeExternalLabels(flags, file labels.Labels, logger *slog.Logger) labels.Labels {
	if flags.IsEmpty() {
		return file
	}
	b := labels.NewBuilder(flags)
	file.Range(func(l labels.Label) {
		if v := flags.Get(l.Name); v != "" && v != l.Value {
			logger.Warn("the configuration file's external label wins over --external-label", "name", l.Name, "file", l.Value, "flag", v)
		}
		b.Set(l.Name, l.Value)
	})
	return b.Labels()
}

// applyStorage applies the file's storage and otlp sections to cfg where
// the file sets them.
func applyStorage(conf *config.Config, cfg *Config, logger *slog.Logger) {
	def := DefaultConfig()
	override := func(what, flag string, flagSet bool) {
		if flagSet {
			logger.Warn("the configuration file wins over a flag", "setting", what, "flag", flag)
		}
	}
	if t := conf.StorageConfig.TSDBConfig; t != nil {
		if w := time.Duration(t.OutOfOrderTimeWindowFlag); w > 0 && w != cfg.OutOfOrderWindow {
			override("storage.tsdb.out_of_order_time_window", "--storage.out-of-order-window", cfg.OutOfOrderWindow != def.OutOfOrderWindow)
			cfg.OutOfOrderWindow = w
		}
		if r := t.Retention; r != nil {
			if d := time.Duration(r.Time); d > 0 && d != cfg.RetentionTime {
				override("storage.tsdb.retention.time", "--retention.time", cfg.RetentionTime != def.RetentionTime)
				cfg.RetentionTime = d
			}
			if s := int64(r.Size); s > 0 && s != cfg.RetentionSize {
				override("storage.tsdb.retention.size", "--retention.size", cfg.RetentionSize != def.RetentionSize)
				cfg.RetentionSize = s
			}
		}
	}
	if e := conf.StorageConfig.ExemplarsConfig; e != nil && int(e.MaxExemplars) != cfg.MaxExemplars {
		override("storage.exemplars.max_exemplars", "--storage.max-exemplars", cfg.MaxExemplars != def.MaxExemplars)
		cfg.MaxExemplars = int(e.MaxExemplars)
	}
	if !reflect.DeepEqual(conf.OTLPConfig, config.DefaultOTLPConfig) && !reflect.DeepEqual(conf.OTLPConfig, cfg.OTLP.Translation) {
		override("otlp", "--otlp.*", !reflect.DeepEqual(cfg.OTLP.Translation, def.OTLP.Translation))
		cfg.OTLP.Translation = conf.OTLPConfig
	}
}

// configFile is the configuration file in effect and its reloads. A
// reload loads the file again and hands it to the evaluator and the
// scraper; what the
// file sets of storage, otlp and external labels for the StoreAPI,
// remote-read and uploads stays as it was at start, and a change to it
// is logged as needing a restart.
type configFile struct {
	path      string
	logger    *slog.Logger
	evaluator *rules.Evaluator
	scraper   *scrape.Scraper
	// start is the server's configuration after the file was applied
	// at start; flags the configuration the flags gave.
	start, flags Config

	// mu serialises loads; running is set once the evaluator and the
	// scraper run, before which reloads are refused (the groups cannot
	// be replaced before they start).
	mu      sync.Mutex
	running bool
	status  atomic.Pointer[api.ConfigStatus]

	success     prometheus.Gauge
	successTime prometheus.Gauge
}

func newConfigFile(path string, flags, start Config, conf *config.Config, evaluator *rules.Evaluator, scraper *scrape.Scraper, logger *slog.Logger, reg prometheus.Registerer) *configFile {
	// Prometheus' names, which its mixin's alerts and dashboards watch.
	c := &configFile{
		path: path, logger: logger, evaluator: evaluator, scraper: scraper, start: start, flags: flags,
		success: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "prometheus_config_last_reload_successful",
			Help: "Whether the last load of the configuration file succeeded.",
		}),
		successTime: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "prometheus_config_last_reload_success_timestamp_seconds",
			Help: "When the configuration file was last loaded successfully.",
		}),
	}
	reg.MustRegister(c.success, c.successTime)
	c.loaded(conf)
	return c
}

// loaded records conf as the configuration in effect.
func (c *configFile) loaded(conf *config.Config) {
	now := time.Now()
	c.status.Store(&api.ConfigStatus{YAML: effectiveFileConfig(conf, c.start), ReloadSuccess: true, LoadedAt: now})
	c.success.Set(1)
	c.successTime.Set(float64(now.UnixNano()) / 1e9)
}

func (c *configFile) failed() {
	st := *c.status.Load()
	st.ReloadSuccess = false
	c.status.Store(&st)
	c.success.Set(0)
}

// ConfigStatus is what the API shows of the configuration.
func (c *configFile) ConfigStatus() api.ConfigStatus { return *c.status.Load() }

// run starts the evaluator and the scraper, from which on reloads apply.
func (c *configFile) run() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evaluator.Run()
	c.scraper.Run()
	c.running = true
}

// stop stops scraping and the evaluator once no reload runs; reloads
// after it are refused.
func (c *configFile) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.running = false
	c.scraper.Stop()
	c.evaluator.Stop()
}

// errNotRunning refuses a reload before the store has opened or after
// the server began to shut down.
var errNotRunning = errors.New("strata is starting or stopping: the configuration can be reloaded while the store is open")

// reload loads the file again and applies it. On an error, the
// configuration in effect stays.
func (c *configFile) reload() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.running {
		return errNotRunning
	}
	c.logger.Info("Loading configuration file", "filename", c.path)
	err := c.apply()
	if err != nil {
		c.failed()
		c.logger.Error("Error reloading config", "err", err)
		return err
	}
	c.logger.Info("Completed loading of configuration file", "filename", c.path)
	return nil
}

func (c *configFile) apply() error {
	after := c.flags
	conf, err := loadConfigFile(c.path, &after, c.logger)
	if err != nil {
		return err
	}
	if !labels.Equal(after.ExternalLabels, c.start.ExternalLabels) {
		c.logger.Warn("external labels changed: rules and alerts take the new ones; the StoreAPI, remote-read and uploads keep those of the start until a restart", "now", after.ExternalLabels, "start", c.start.ExternalLabels)
	}
	if after.OutOfOrderWindow != c.start.OutOfOrderWindow || after.RetentionTime != c.start.RetentionTime || after.RetentionSize != c.start.RetentionSize ||
		after.MaxExemplars != c.start.MaxExemplars || !reflect.DeepEqual(after.OTLP.Translation, c.start.OTLP.Translation) {
		c.logger.Warn("the storage and otlp sections changed: they take effect at the next start")
	}
	if err := c.evaluator.ApplyConfig(conf); err != nil {
		return fmt.Errorf("one or more errors occurred while applying the new configuration (--config.file=%q): %w", c.path, err)
	}
	if err := c.scraper.ApplyConfig(conf); err != nil {
		return fmt.Errorf("one or more errors occurred while applying the new configuration (--config.file=%q): %w", c.path, err)
	}
	c.loaded(conf)
	return nil
}

// effectiveFileConfig is conf as /api/v1/status/config shows it: with
// the external labels, storage and otlp sections strata runs with, and
// without the runtime section, which strata does not apply (its
// collector's target is its own, or the GOGC environment variable's).
func effectiveFileConfig(conf *config.Config, cfg Config) string {
	c := *conf
	c.Runtime = config.RuntimeConfig{}
	c.GlobalConfig.ExternalLabels = cfg.ExternalLabels
	c.StorageConfig = storageConfig(cfg)
	c.OTLPConfig = cfg.OTLP.Translation
	return c.String()
}
