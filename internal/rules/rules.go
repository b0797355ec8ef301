// Package rules evaluates Prometheus recording and alerting rules over
// strata's store and sends the alerts to Alertmanagers. It is Prometheus'
// own machinery, wired as Prometheus' main wires it: the rules package's
// Manager evaluates the groups of the configuration file's rule_files;
// the notifier package queues, relabels and batches alerts and sends
// them with Alertmanager's API v2 to the Alertmanagers the discovery
// package finds from the file's alerting section.
//
// What strata brings is the storage: queries go through the engine the
// server queries with (internal/rollup where it applies), and recorded
// samples, stale markers and the ALERTS and ALERTS_FOR_STATE series go
// through strata's appender, so they are in the WAL when a group's
// evaluation has committed them and survive a crash as any written
// sample does. The `for` state of alerts is restored from
// ALERTS_FOR_STATE when the evaluator first runs, as in Prometheus.
//
// # Reloading
//
// ApplyConfig takes a new configuration whole or not at all where that
// can be checked beforehand: the rule files are read and parsed first, and
// if any fails to load, nothing changes and the running rules go on.
package rules

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/discovery"
	"github.com/prometheus/prometheus/notifier"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	promrules "github.com/prometheus/prometheus/rules"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/strata-db/strata/internal/promstore"
	_ "github.com/strata-db/strata/internal/sd" // the Alertmanagers' service discoveries
	"github.com/strata-db/strata/internal/storage"
)

// Options configure an Evaluator.
type Options struct {
	// Appendable takes what rules record. Required.
	Appendable storage.Appendable
	// Queryable is what rules query and what the `for` state of alerts
	// is restored from. Required.
	Queryable promstorage.Queryable
	// Engine evaluates the rules' expressions. Required.
	Engine promql.QueryEngine
	// Parser parses the rules' expressions; it should be the one Engine
	// was built with. Nil means parser.NewParser(parser.Options{}).
	Parser parser.Parser
	// ExternalURL is the server's URL as users reach it, for the
	// generator URL of alerts and the templates' $externalURL. Nil
	// means none.
	ExternalURL *url.URL
	// Logger; nil discards. Registerer takes the rule manager's, the
	// notifier's and the discovery's metrics; nil registers none.
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	// SDMetrics are the service discoveries' metrics, shared with the
	// targets' discovery (they can be registered once); nil creates and
	// registers them.
	SDMetrics *discovery.SDMetrics

	// OutageTolerance is how long an outage may last for the `for`
	// state of alerts to be restored after it; ForGracePeriod the least
	// `for` left to an alert restored after a restart; ResendDelay how
	// long to wait before sending a firing alert again.
	OutageTolerance time.Duration
	ForGracePeriod  time.Duration
	ResendDelay     time.Duration
	// NotificationQueueCapacity is how many alerts wait to be sent at
	// most; older ones are dropped beyond it.
	NotificationQueueCapacity int
}

// DefaultOptions returns Prometheus' defaults: its
// --rules.alert.for-outage-tolerance, --rules.alert.for-grace-period,
// --rules.alert.resend-delay and --alertmanager.notification-queue-capacity.
func DefaultOptions() Options {
	return Options{
		OutageTolerance:           time.Hour,
		ForGracePeriod:            10 * time.Minute,
		ResendDelay:               time.Minute,
		NotificationQueueCapacity: 10000,
	}
}

// Evaluator runs the rules and alerting of a configuration file.
// ApplyConfig may be called once before Run, and then any number of times
// while it runs (Prometheus' rule manager waits for a replaced group's
// evaluation loop to end, which has not started before Run), from one
// goroutine at a time. Run and Stop are called once each, from that
// goroutine too. The accessors are safe for concurrent use.
type Evaluator struct {
	logger      *slog.Logger
	externalURL string
	rules       *promrules.Manager
	notifier    *notifier.Manager
	discovery   *discovery.Manager
	// stopDiscovery ends the discovery manager's context.
	stopDiscovery context.CancelFunc
	// queryOffset is the configuration's global rule_query_offset in
	// nanoseconds, read by the rule manager at each evaluation of a group
	// without its own; set by ApplyConfig.
	queryOffset atomic.Int64
	// running is set by Run; done is closed when the rule manager has
	// stopped.
	running bool
	done    chan struct{}
}

// New returns an Evaluator with no rules and no Alertmanagers.
func New(opts Options) (*Evaluator, error) {
	if opts.Appendable == nil || opts.Queryable == nil || opts.Engine == nil {
		return nil, errors.New("rules: Appendable, Queryable and Engine are required")
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	reg := opts.Registerer
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	e := &Evaluator{logger: logger, done: make(chan struct{})}
	if opts.ExternalURL != nil {
		e.externalURL = opts.ExternalURL.String()
	}
	sdMetrics := opts.SDMetrics
	if sdMetrics == nil {
		var err error
		if sdMetrics, err = discovery.CreateAndRegisterSDMetrics(reg); err != nil {
			return nil, fmt.Errorf("rules: service discovery metrics: %w", err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.discovery = discovery.NewManager(ctx, logger.With("component", "discovery manager notify"), reg, sdMetrics, discovery.Name("notify"))
	if e.discovery == nil {
		cancel()
		return nil, errors.New("rules: could not create the Alertmanager discovery")
	}
	e.stopDiscovery = cancel
	e.notifier = notifier.NewManager(&notifier.Options{
		QueueCapacity: opts.NotificationQueueCapacity,
		Registerer:    reg,
	}, 0, logger.With("component", "notifier"))
	e.rules = promrules.NewManager(&promrules.ManagerOptions{
		Appendable:             promstore.Appendable(opts.Appendable),
		Queryable:              opts.Queryable,
		QueryFunc:              promrules.EngineQueryFunc(opts.Engine, opts.Queryable),
		NotifyFunc:             promrules.SendAlerts(e.notifier, e.externalURL),
		Context:                context.Background(),
		ExternalURL:            opts.ExternalURL,
		Logger:                 logger.With("component", "rule manager"),
		Registerer:             reg,
		OutageTolerance:        opts.OutageTolerance,
		ForGracePeriod:         opts.ForGracePeriod,
		ResendDelay:            opts.ResendDelay,
		DefaultRuleQueryOffset: func() time.Duration { return time.Duration(e.queryOffset.Load()) },
		Parser:                 opts.Parser,
	})
	return e, nil
}

// ApplyConfig makes conf's rule_files, alerting section and global
// evaluation settings the ones in effect. If a rule file cannot be read
// or parsed, it returns the errors and changes nothing.
func (e *Evaluator) ApplyConfig(conf *config.Config) error {
	files, err := ruleFiles(conf.RuleFiles)
	if err != nil {
		return err
	}
	interval := time.Duration(conf.GlobalConfig.EvaluationInterval)
	external := conf.GlobalConfig.ExternalLabels
	if _, errs := e.rules.LoadGroups(interval, external, e.externalURL, nil, false, files...); len(errs) > 0 {
		return fmt.Errorf("load rule files: %w", errors.Join(errs...))
	}
	if err := e.notifier.ApplyConfig(conf); err != nil {
		return fmt.Errorf("alerting: %w", err)
	}
	sd := make(map[string]discovery.Configs)
	for k, v := range conf.AlertingConfig.AlertmanagerConfigs.ToMap() {
		sd[k] = v.ServiceDiscoveryConfigs
	}
	if err := e.discovery.ApplyConfig(sd); err != nil {
		return fmt.Errorf("alertmanager discovery: %w", err)
	}
	e.queryOffset.Store(int64(conf.GlobalConfig.RuleQueryOffset))
	if err := e.rules.Update(interval, files, external, e.externalURL, nil); err != nil {
		return fmt.Errorf("rules: %w", err)
	}
	return nil
}

// ruleFiles expands rule_files' globs, as Prometheus does: a pattern that
// matches nothing adds nothing.
func ruleFiles(patterns []string) ([]string, error) {
	var files []string
	for _, pat := range patterns {
		fs, err := filepath.Glob(pat)
		if err != nil {
			return nil, fmt.Errorf("rule_files %q: %w", pat, err)
		}
		files = append(files, fs...)
	}
	return files, nil
}

// Run starts evaluating rules, discovering Alertmanagers and sending
// alerts, and returns at once. Call it once the store has replayed its
// WAL, so that the `for` state of alerts is restored from all of it.
func (e *Evaluator) Run() {
	e.running = true
	go func() {
		// Stop ends it with its context: no error then.
		if err := e.discovery.Run(); err != nil && !errors.Is(err, context.Canceled) {
			e.logger.Error("Alertmanager discovery stopped", "err", err)
		}
	}()
	go e.notifier.Run(e.discovery.SyncCh())
	go func() {
		e.rules.Run()
		close(e.done)
	}()
}

// Stop ends rule evaluation, then alert sending and discovery. A group
// being evaluated finishes first, so its results are committed.
func (e *Evaluator) Stop() {
	if !e.running {
		// The groups' loops wait for the manager to run before they
		// can see that they are stopped.
		go e.rules.Run()
	}
	e.rules.Stop()
	if e.running {
		<-e.done
		e.notifier.Stop()
	}
	e.stopDiscovery()
}

// RuleGroups returns the groups in effect, sorted by file and name.
func (e *Evaluator) RuleGroups() []*promrules.Group { return e.rules.RuleGroups() }

// AlertingRules returns the alerting rules in effect.
func (e *Evaluator) AlertingRules() []*promrules.AlertingRule { return e.rules.AlertingRules() }

// Alertmanagers returns the Alertmanagers alerts are sent to.
func (e *Evaluator) Alertmanagers() []*url.URL { return e.notifier.Alertmanagers() }

// DroppedAlertmanagers returns the discovered Alertmanagers that
// relabelling dropped.
func (e *Evaluator) DroppedAlertmanagers() []*url.URL { return e.notifier.DroppedAlertmanagers() }
