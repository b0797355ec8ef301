// Package api serves the Prometheus HTTP API v1 (query, query_range,
// series, labels, label values, build info) over Prometheus' PromQL engine
// and a storage.Queryable, with the parameters, validation messages,
// response shapes, error types and status codes of Prometheus itself, so
// that Grafana and other Prometheus API clients work against strata as
// they are.
//
// Responses are built in pooled buffers by hand-written JSON appenders
// that write what Prometheus' codec writes; see json.go.
package api

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
)

// Options configure an API.
type Options struct {
	// Engine evaluates PromQL. Required. It is typically a *promql.Engine;
	// any promql.QueryEngine will do, so a faster engine can replace it.
	Engine promql.QueryEngine
	// Rollup, if set, evaluates the queries that ask for no statistics
	// (`stats`) in Engine's place: a faster engine that answers as
	// Engine does but whose statistics would not count Engine's work
	// (internal/rollup).
	Rollup promql.QueryEngine
	// Queryable is the data queries and metadata requests read. Required.
	Queryable storage.Queryable
	// Parser parses match[] selectors. It must be the parser the Engine
	// was built with, so that both accept the same syntax. Nil means
	// parser.NewParser(parser.Options{}), the engine's default.
	Parser parser.Parser
	// Logger is told about responses that could not be written. Nil
	// discards.
	Logger *slog.Logger
	// Now is the clock for the default `time` of an instant query. Nil
	// means time.Now.
	Now func() time.Time
	// QueryTimeout bounds the evaluation of a query that has no `timeout`
	// parameter; a request's `timeout` may lower it but not raise it.
	// 0 leaves queries bounded only by the engine's own timeout.
	QueryTimeout time.Duration
	// LookbackDelta is the lookback of queries without a `lookback_delta`
	// parameter. 0 means the engine's default.
	LookbackDelta time.Duration
	// MaxConcurrentQueries bounds the queries (instant and range)
	// evaluated at once; as many more wait, and beyond that a query is
	// refused with 503. 0 means no bound.
	MaxConcurrentQueries int
	// RangeParallelism is how many parts a range query's steps may be
	// split into, evaluated at the same time (see split.go); 1 or less
	// evaluates every query whole. Each part is held to the engine's
	// sample limit on its own.
	RangeParallelism int
	// Metadata answers /api/v1/metadata; nil answers it with no metadata.
	Metadata MetadataSource
	// Exemplars answers /api/v1/query_exemplars; nil answers it with no
	// exemplars.
	Exemplars storage.ExemplarQueryable
	// Blocks answers /api/v1/status/blocks; nil answers it with none.
	Blocks BlocksSource
	// TSDBStatus answers /api/v1/status/tsdb; nil answers it with empty
	// statistics.
	TSDBStatus TSDBStatusSource
	// Version is reported by /api/v1/status/buildinfo. Grafana reads it
	// to decide which Prometheus features it may use.
	Version string
	// Flags are the command line's flags with their values, for
	// /api/v1/status/flags.
	Flags map[string]string
	// Config is the configuration in effect, for /api/v1/status/config
	// and runtimeinfo; nil shows an empty configuration, loaded at
	// StartTime.
	Config ConfigSource
	// Rules answers /api/v1/rules and /api/v1/alerts, Alertmanagers
	// /api/v1/alertmanagers; nil answers with none.
	Rules         RulesSource
	Alertmanagers AlertmanagerSource
	// Targets answers /api/v1/targets, /api/v1/targets/metadata and
	// /api/v1/scrape_pools; nil answers with none. ExternalURL and
	// ListenAddress make the targets' global URLs: a target on
	// localhost is shown at the external URL's host.
	Targets       TargetsSource
	ExternalURL   *url.URL
	ListenAddress string
	// StartTime and StorageRetention are reported by
	// /api/v1/status/runtimeinfo; StorageRetention as Prometheus writes
	// it ("15d", "15d or 512MiB").
	StartTime        time.Time
	StorageRetention string
	// Admin, if set, serves the admin endpoints, /api/v1/admin/tsdb/...
	// (Prometheus' --web.enable-admin-api); nil answers them 503.
	Admin Admin
}

// DefaultOptions returns Options with Prometheus' defaults for what has
// one: a 2 minute query timeout (its --query.timeout). Engine and
// Queryable must still be set.
func DefaultOptions() Options {
	return Options{QueryTimeout: 2 * time.Minute}
}

// API serves the endpoints. It holds nothing that changes after New, so
// it is safe for concurrent use.
type API struct {
	engine        promql.QueryEngine
	rollup        promql.QueryEngine // Options.Rollup, or engine
	queryable     storage.Queryable
	parser        parser.Parser
	logger        *slog.Logger
	now           func() time.Time
	queryTimeout  time.Duration
	lookbackDelta time.Duration
	metadata      MetadataSource
	exemplars     storage.ExemplarQueryable
	tsdbStatus    TSDBStatusSource
	blocks        BlocksSource
	buildInfo     buildInfo
	flags         map[string]string
	config        ConfigSource
	rules         RulesSource
	// alertmanagerSource is Options.Alertmanagers, targetSource
	// Options.Targets.
	alertmanagerSource AlertmanagerSource
	targetSource       TargetsSource
	externalURL        *url.URL
	listenAddress      string
	startTime          time.Time
	// storageRetention as runtimeinfo reports it.
	storageRetention string
	// rangeParallelism is Options.RangeParallelism; queries admits
	// queries up to Options.MaxConcurrentQueries.
	rangeParallelism int
	queries          *gate
	admin            Admin
}

// New returns an API serving opts.Queryable through opts.Engine.
func New(opts Options) *API {
	a := &API{
		engine:        opts.Engine,
		rollup:        opts.Rollup,
		queryable:     opts.Queryable,
		parser:        opts.Parser,
		logger:        opts.Logger,
		now:           opts.Now,
		queryTimeout:  opts.QueryTimeout,
		lookbackDelta: opts.LookbackDelta,
		metadata:      opts.Metadata,
		exemplars:     opts.Exemplars,
		tsdbStatus:    opts.TSDBStatus,
		blocks:        opts.Blocks,
		buildInfo:     newBuildInfo(opts.Version),
		flags:         opts.Flags,
		config:        opts.Config,
		rules:         opts.Rules,

		alertmanagerSource: opts.Alertmanagers,
		targetSource:       opts.Targets,
		externalURL:        opts.ExternalURL,
		listenAddress:      opts.ListenAddress,
		startTime:          opts.StartTime.UTC(),

		storageRetention: opts.StorageRetention,
		rangeParallelism: opts.RangeParallelism,
		queries:          newGate(opts.MaxConcurrentQueries),
		admin:            opts.Admin,
	}
	if a.rollup == nil {
		a.rollup = a.engine
	}
	if a.parser == nil {
		a.parser = parser.NewParser(parser.Options{})
	}
	if a.logger == nil {
		a.logger = slog.New(slog.DiscardHandler)
	}
	if a.now == nil {
		a.now = time.Now
	}
	if a.config == nil {
		a.config = StaticConfig("", a.startTime)
	}
	return a
}

// Register adds the endpoints to mux under /api/v1/. Each answers the
// methods Prometheus answers it with; other methods get 405 from mux.
func (a *API) Register(mux *http.ServeMux) {
	for _, e := range []struct {
		methods []string
		path    string
		serve   func(*http.Request) result
	}{
		{getPost, "/api/v1/query", a.query},
		{getPost, "/api/v1/query_range", a.queryRange},
		{getPost, "/api/v1/series", a.series},
		{getPost, "/api/v1/labels", a.labelNames},
		// Prometheus takes no POST here: the label name is in the path
		// and match[] lists are short enough for a URL.
		{getOnly, "/api/v1/label/{name}/values", a.labelValues},
		{getOnly, "/api/v1/status/buildinfo", a.serveBuildInfo},
		{getOnly, "/api/v1/status/runtimeinfo", a.serveRuntimeInfo},
		{getOnly, "/api/v1/status/flags", a.serveFlags},
		{getOnly, "/api/v1/status/config", a.serveConfig},
		{getPost, "/api/v1/format_query", a.formatQuery},
		{getPost, "/api/v1/parse_query", a.parseQuery},
		{getOnly, "/api/v1/targets", a.targets},
		{getOnly, "/api/v1/targets/metadata", a.targetMetadata},
		{getOnly, "/api/v1/scrape_pools", a.scrapePools},
		{getOnly, "/api/v1/rules", a.rulesList},
		{getOnly, "/api/v1/alerts", a.alerts},
		{getOnly, "/api/v1/alertmanagers", a.alertmanagers},
		{getOnly, "/api/v1/status/tsdb", a.serveTSDBStatus},
		{getOnly, "/api/v1/status/blocks", a.serveBlocks},
		{getOnly, "/api/v1/metadata", a.metricMetadata},
		{getPost, "/api/v1/query_exemplars", a.queryExemplars},
	} {
		h := a.handler(e.serve)
		for _, m := range e.methods {
			mux.Handle(m+" "+e.path, h)
		}
	}
	a.registerAdmin(mux)
	// Export streams its answer rather than build a JSON envelope.
	for _, m := range getPost {
		mux.Handle(m+" /api/v1/export", http.HandlerFunc(a.serveExport))
	}
}

var (
	getPost = []string{http.MethodGet, http.MethodPost}
	getOnly = []string{http.MethodGet}
)

// handler adapts an endpoint to http.Handler: it parses the form (URL
// query and, for POST, a urlencoded or multipart body), runs the endpoint
// and writes what it returns.
func (a *API) handler(serve func(*http.Request) result) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := parseForm(r); err != nil {
			a.writeError(w, badData(fmt.Errorf("error parsing form values: %w", err)))
			return
		}
		res := serve(r)
		if res.finalize != nil {
			defer res.finalize()
		}
		if res.err != nil {
			a.writeError(w, res.err)
			return
		}
		a.writeSuccess(w, r, res.data, res.warnings, r.FormValue("query"))
	})
}

// maxMultipartMemory is what a multipart form may keep in memory before
// spilling to temporary files: net/http's own default for FormValue,
// which is what Prometheus' handlers rely on.
const maxMultipartMemory = 32 << 20

func parseForm(r *http.Request) error {
	err := r.ParseMultipartForm(maxMultipartMemory)
	if err != nil && !errors.Is(err, http.ErrNotMultipart) {
		return err
	}
	return nil
}
