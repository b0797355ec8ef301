package main

import (
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/strata-db/strata/internal/ingest/otlp"
	"github.com/strata-db/strata/internal/server"
	"github.com/strata-db/strata/internal/wal"
)

// config is everything the flags set.
type config struct {
	server   server.Config
	logLevel slog.Level
	// memLimitRatio is the share of the container's (or else the
	// machine's) memory GOMEMLIMIT is set to, 0 to leave it alone.
	memLimitRatio float64
	// unknownFeatures are --enable-feature names strata does not know.
	unknownFeatures []string
}

// serverHelp is what `strata --help` says of strata before its flags.
const serverHelp = `strata, a metrics database: Prometheus remote-write and OTLP in, PromQL over the Prometheus HTTP API out.

Run without a command, strata serves with the flags below. Its other commands, each with its own --help:
  strata tsdb      tools for a data directory: list, analyze
  strata store     the blocks of a bucket served to a Thanos Querier
  strata compact   merges, retention and deletion of a bucket's blocks`

// parseFlags parses the server's command line; help and --version are
// printed to out.
func parseFlags(args []string, out io.Writer) (config, error) {
	cfg := config{server: server.DefaultConfig()}
	sc := &cfg.server
	app := newApp("strata", serverHelp, out)
	fs := flags{app}
	fs.String(&sc.ListenAddress, "listen-address", "address to serve the HTTP API, remote-write and metrics on")
	fs.String(&sc.DataDir, "data-dir", "directory for the write-ahead log and data")
	logLevel := "info"
	fs.String(&logLevel, "log.level", "log level: debug, info, warn or error")
	autoMemLimit := true
	fs.Bool(&autoMemLimit, "auto-gomemlimit", "set the Go runtime's memory limit (GOMEMLIMIT) to --auto-gomemlimit.ratio of the Linux container's memory limit, or of the machine's memory, unless the environment sets GOMEMLIMIT: the garbage collector then works harder as memory runs short, before the kernel kills the process")
	memLimitRatio := 0.9
	fs.Float64(&memLimitRatio, "auto-gomemlimit.ratio", "share of the container's or machine's memory that --auto-gomemlimit gives the Go runtime, in (0, 1]")
	fs.Duration(&sc.ShutdownTimeout, "shutdown-timeout", "how long requests in flight may take to finish on shutdown")
	fs.Int64(&sc.WALSegmentSize, "wal.segment-size", "WAL segment file size in bytes")
	fs.Int64(&sc.WALCheckpointBytes, "wal.checkpoint-bytes", "WAL bytes written between two checkpoints (at least; a checkpoint after a large one waits for twice its size): what a restart after a crash replays at most beyond the checkpoints, against the CPU the checkpoints take")
	walSync := sc.WALSync.String()
	fs.String(&walSync, "wal.sync", "when a write is acknowledged: never (after the write reaches the OS; survives a crash of strata, not of the machine) or always (after fsync, shared by concurrent writes; survives power loss)")
	fs.Int64(&sc.RemoteWriteMaxBytes, "remote-write.max-request-bytes", "largest accepted remote-write request body (compressed), in bytes; larger ones get 413")
	lim := &sc.RemoteWriteLimits
	fs.Int(&lim.MaxLabelsPerSeries, "remote-write.max-labels-per-series", "most labels a series may have, metric name included; 0 for no limit (series over it are rejected with 400)")
	fs.Int(&lim.MaxLabelNameLength, "remote-write.max-label-name-length", "longest label name in bytes; 0 for no limit")
	fs.Int(&lim.MaxLabelValueLength, "remote-write.max-label-value-length", "longest label value in bytes; 0 for no limit")
	fs.Float64(&lim.MaxSamplesPerSecond, "remote-write.max-samples-per-second", "ingestion rate limit over all senders, remote-write samples and OTLP data points together; requests over it get 429 (OTLP/gRPC: RESOURCE_EXHAUSTED with RetryInfo) and are retried; 0 for no limit")
	fs.String(&sc.WebConfigFile, "web.config.file", "web configuration file in Prometheus' format: TLS, client certificates and basic auth users (bcrypt hashes), for HTTP, OTLP/gRPC and the StoreAPI; read again for every connection and request, as Prometheus does (gRPC: at start)")
	fs.Bool(&sc.ResponseCompression, "web.response-compression", "compress the HTTP API's and the web UI's responses of 1 KiB and more for clients that accept zstd or gzip, as Prometheus and VictoriaMetrics do: a fifth to a quarter of the bytes for a few milliseconds of CPU per megabyte of JSON")
	rr := &sc.RemoteRead
	fs.Int(&rr.MaxSamples, "remote-read.sample-limit", "most samples a sampled remote-read response may hold; 0 for no limit (streamed responses are bounded by the frame size)")
	fs.Int(&rr.MaxConcurrent, "remote-read.concurrent-limit", "most remote-read requests served at once; more wait")
	fs.Int(&rr.MaxBytesInFrame, "remote-read.max-bytes-in-frame", "largest frame of a streamed remote-read response, in bytes")
	fs.String(&sc.StoreAPIAddress, "grpc.listen-address", "address to serve Thanos' StoreAPI on over gRPC, for a Thanos Querier (Thanos' port is 10901); empty: none")
	fs.Int(&sc.StoreAPILimits.MaxSeries, "store.limits.request-series", "most series a StoreAPI Series request may select; more is refused with ResourceExhausted (0: no limit)")
	fs.Int(&sc.StoreAPILimits.MaxChunks, "store.limits.request-chunks", "most chunks a StoreAPI Series request may send; more is refused with ResourceExhausted (0: no limit)")
	fs.String(&sc.ObjstoreConfigFile, "objstore.config-file", "object storage configuration file in Thanos' format (type: S3, GCS, AZURE, SWIFT, FILESYSTEM, ...): every block written from the head is uploaded to that bucket once complete (meta.json last, with Thanos' thanos section); empty: no uploads")
	ot := &sc.OTLP.Translation
	// Not DefaultConfig's: a server run in-process (tests, the bench
	// tool) should not take OTLP's port unless asked to.
	sc.OTLPGRPCAddress = ":4317"
	fs.String(&sc.OTLPGRPCAddress, "otlp.grpc-listen-address", "address to serve OTLP/gRPC on (OpenTelemetry's port 4317); empty: no OTLP/gRPC")
	fs.Int64(&sc.OTLP.MaxBodyBytes, "otlp.max-request-bytes", "largest accepted OTLP request body as sent (gzipped or not), in bytes; larger ones get 413")
	strategy := string(ot.TranslationStrategy)
	fs.String(&strategy, "otlp.translation-strategy", "how OTLP metric and attribute names become Prometheus names, by Prometheus' names for it: UnderscoreEscapingWithSuffixes, UnderscoreEscapingWithoutSuffixes, NoUTF8EscapingWithSuffixes or NoTranslation")
	promote := ""
	fs.String(&promote, "otlp.promote-resource-attributes", "comma-separated resource attributes to add to every series of the resource as labels")
	fs.Bool(&ot.PromoteAllResourceAttributes, "otlp.promote-all-resource-attributes", "add every resource attribute but those of --otlp.ignore-resource-attributes to the resource's series as labels")
	ignore := ""
	fs.String(&ignore, "otlp.ignore-resource-attributes", "comma-separated resource attributes --otlp.promote-all-resource-attributes leaves out")
	fs.Bool(&ot.KeepIdentifyingResourceAttributes, "otlp.keep-identifying-resource-attributes", "keep service.name, service.namespace and service.instance.id on target_info although job and instance hold them")
	fs.Bool(&ot.PromoteScopeMetadata, "otlp.promote-scope-metadata", "add the instrumentation scope's name, version, schema URL and attributes to its series as otel_scope_* labels")
	fs.Bool(&ot.ConvertHistogramsToNHCB, "otlp.convert-histograms-to-nhcb", "store explicit-bucket histograms as native histograms with custom buckets instead of _bucket, _sum and _count series")
	delta := string(sc.OTLP.Delta)
	fs.String(&delta, "otlp.delta", "what becomes of sums and histograms of delta temporality: cumulative (each stream's deltas added up into a cumulative series, as the OpenTelemetry Collector's deltatocumulative processor does), reject (counted as rejected data points) or as-is (each delta stored as a sample of its own, as Prometheus' native delta ingestion)")
	fs.Duration(&sc.OTLP.DeltaMaxStale, "otlp.delta.max-stale", "with --otlp.delta=cumulative, how long a delta stream is remembered after its last point; its next delta starts it again from zero under a new start time")
	fs.Int(&sc.OTLP.DeltaMaxStreams, "otlp.delta.max-streams", "with --otlp.delta=cumulative, most delta streams remembered, of sums and of histograms each; points of new streams beyond it are rejected; 0 for no limit")
	fs.Int(&sc.MaxExemplars, "storage.max-exemplars", "how many exemplars to keep, the newest of all series together (about 100 bytes each); 0 keeps none")
	fs.Int(&sc.MaxSeries, "storage.max-series", "most series the store holds; samples of new series beyond it are rejected with 400; 0 for no limit")
	blockDuration := model.Duration(sc.BlockDuration).String()
	fs.String(&blockDuration, "storage.block-duration", "time range of the blocks the in-memory head is written to; the head holds about one and a half of them (units as Prometheus: ms, s, m, h, d, w, y)")
	oooWindow := "0s"
	fs.String(&oooWindow, "storage.out-of-order-window", "how far behind the newest sample a sample older than its series' newest is still taken, as Prometheus' out_of_order_time_window: 30m suits OpenTelemetry senders, which batch, retry and fan in; 100y takes anything; 0 refuses such samples with 400 (OTLP: rejected points)")
	maxBlockDuration := "0"
	fs.String(&maxBlockDuration, "storage.max-block-duration", "largest block that smaller ones are merged into; 0: the smaller of 31d and a tenth of --retention.time; the value of --storage.block-duration turns merging off")
	retentionTime := model.Duration(sc.RetentionTime).String()
	fs.String(&retentionTime, "retention.time", "how long to keep data: blocks whose newest sample is older than the newest data by more than this are deleted; 0 keeps data forever")
	retentionSize := "0"
	fs.String(&retentionSize, "retention.size", "most bytes blocks, WAL and head chunk files may take together (units B, KB, MB, GB, TB, PB, base 2 as in Prometheus); the oldest blocks are deleted above it; 0 for no limit")
	fs.Duration(&sc.LookbackDelta, "query.lookback-delta", "how far back PromQL looks for the latest sample of a series at an evaluation time")
	fs.Duration(&sc.QueryTimeout, "query.timeout", "longest a query may run")
	fs.Int(&sc.QueryMaxSamples, "query.max-samples", "most samples a single query may load into memory (each part of a split range query on its own)")
	fs.Int(&sc.QueryMaxConcurrency, "query.max-concurrency", "most queries evaluated at once; as many more wait for a slot, and more than that are refused with 503")
	fs.Int(&sc.QueryRangeParallelism, "query.range-parallelism", "most parts a range query's steps are split into and evaluated at once, on different cores (default: the cores strata may use); 1 evaluates every query whole")
	fs.Duration(&sc.DefaultSubqueryStep, "query.default-subquery-step", "step of subqueries that do not give one")
	fs.String(&sc.QueryEngine, "query.engine", "how queries are evaluated: rollup (rate, increase, irate, delta, idelta, changes, resets and sum/avg/min/max/count_over_time over range vectors, and instant vector selectors, and their sum, avg, min, max, count and group, by strata (over all steps of a range query at once), the rest by Prometheus' engine, with the same answers) or prometheus (Prometheus' engine alone); queries asking for stats always run in Prometheus' engine")
	var external []string
	fs.Strings(&external, "external-label", "a label that identifies this server among others, name=value (may be repeated), as Prometheus' global.external_labels: shown in /api/v1/status/config for Thanos' sidecar and added to remote-read's series and to alerts, not stored; --config.file's external labels win over these")
	fs.String(&sc.ConfigFile, "config.file", "configuration file in Prometheus' format: its scrape_configs are scraped, its rule_files and alerting sections are evaluated and sent to Alertmanagers, its global section gives the scrape and evaluation intervals and external labels, its storage and otlp sections win over the flags; reloaded on SIGHUP and, with --web.enable-lifecycle, POST /-/reload; empty: none")
	fs.Duration(&sc.ScrapeDiscoveryInterval, "scrape.discovery-reload-interval", "how long target updates of service discovery are gathered before the scrape pools are updated, as Prometheus' flag of that name")
	fs.Bool(&sc.SelfScrape, "self-scrape", "without --config.file, scrape strata's own /metrics every 15s as job \"strata\" (off with --web.config.file, whose TLS and auth a scrape would need: scrape it from a --config.file then)")
	fs.Bool(&sc.EnableLifecycle, "web.enable-lifecycle", "serve POST /-/reload, which reloads --config.file, as Prometheus does")
	fs.Bool(&sc.EnableAdminAPI, "web.enable-admin-api", "serve the admin endpoints, POST /api/v1/admin/tsdb/delete_series, clean_tombstones and snapshot, as Prometheus does; without it they answer 503")
	fs.String(&sc.ExternalURL, "web.external-url", "the URL users reach strata at (behind a proxy, say), for the links alerts carry back to it; default http://<hostname>:<port>/")
	ro := &sc.Rules
	fs.Duration(&ro.OutageTolerance, "rules.alert.for-outage-tolerance", "longest outage after which the `for` state of alerts is still restored at start")
	fs.Duration(&ro.ForGracePeriod, "rules.alert.for-grace-period", "least time left of an alert's `for` when it is restored at start, so that an alert does not fire at once after a restart")
	fs.Duration(&ro.ResendDelay, "rules.alert.resend-delay", "how long to wait before sending a firing alert to Alertmanager again")
	fs.Int(&ro.NotificationQueueCapacity, "alertmanager.notification-queue-capacity", "most alerts waiting to be sent to Alertmanagers; the oldest are dropped beyond it")
	var features []string
	fs.Strings(&features, "enable-feature", "comma-separated PromQL features to enable, as in Prometheus: promql-experimental-functions, promql-extended-range-selectors, promql-delayed-name-removal, promql-binop-fill-modifiers, promql-duration-expr, use-start-timestamps (may be repeated)")
	if _, err := parse(app, args); err != nil {
		return cfg, err
	}
	sc.Flags = flagValues(app)
	if err := cfg.logLevel.UnmarshalText([]byte(logLevel)); err != nil {
		return cfg, fmt.Errorf("--log.level: %w", err)
	}
	var err error
	if sc.WALSync, err = wal.ParseSyncPolicy(walSync); err != nil {
		return cfg, fmt.Errorf("--wal.sync: %w", err)
	}
	d, err := model.ParseDuration(blockDuration)
	if err != nil {
		return cfg, fmt.Errorf("--storage.block-duration: %w", err)
	}
	sc.BlockDuration = time.Duration(d)
	if d, err = model.ParseDuration(maxBlockDuration); err != nil {
		return cfg, fmt.Errorf("--storage.max-block-duration: %w", err)
	}
	sc.MaxBlockDuration = time.Duration(d)
	if d, err = model.ParseDuration(oooWindow); err != nil {
		return cfg, fmt.Errorf("--storage.out-of-order-window: %w", err)
	}
	sc.OutOfOrderWindow = time.Duration(d)
	if d, err = model.ParseDuration(retentionTime); err != nil {
		return cfg, fmt.Errorf("--retention.time: %w", err)
	}
	sc.RetentionTime = time.Duration(d)
	if sc.RetentionSize, err = parseBytes(retentionSize); err != nil {
		return cfg, fmt.Errorf("--retention.size: %w", err)
	}
	if ot.TranslationStrategy, err = otlp.ParseStrategy(strategy); err != nil {
		return cfg, fmt.Errorf("--otlp.translation-strategy: %w", err)
	}
	ot.PromoteResourceAttributes = splitList(promote)
	ot.IgnoreResourceAttributes = splitList(ignore)
	if err := otlp.ValidateTranslation(*ot); err != nil {
		return cfg, fmt.Errorf("--otlp flags: %w", err)
	}
	if sc.OTLP.Delta, err = otlp.ParseDelta(delta); err != nil {
		return cfg, fmt.Errorf("--otlp.delta: %w", err)
	}
	switch {
	case sc.OTLP.MaxBodyBytes <= 0:
		return cfg, fmt.Errorf("--otlp.max-request-bytes must be positive")
	case sc.OTLP.DeltaMaxStale <= 0:
		return cfg, fmt.Errorf("--otlp.delta.max-stale must be positive")
	case sc.OTLP.DeltaMaxStreams < 0:
		return cfg, fmt.Errorf("--otlp.delta.max-streams must not be negative")
	case sc.WALSegmentSize < 1<<20:
		return cfg, fmt.Errorf("--wal.segment-size %d is below the minimum of 1 MiB", sc.WALSegmentSize)
	case sc.WALCheckpointBytes < 16<<10:
		return cfg, fmt.Errorf("--wal.checkpoint-bytes %d is below the minimum of 16 KiB", sc.WALCheckpointBytes)
	case sc.RemoteWriteMaxBytes <= 0:
		return cfg, fmt.Errorf("--remote-write.max-request-bytes must be positive")
	case lim.MaxLabelsPerSeries < 0 || lim.MaxLabelNameLength < 0 || lim.MaxLabelValueLength < 0 || lim.MaxSamplesPerSecond < 0:
		return cfg, fmt.Errorf("--remote-write limits must not be negative")
	case sc.BlockDuration < time.Minute:
		return cfg, fmt.Errorf("--storage.block-duration %s is below the minimum of 1m", model.Duration(sc.BlockDuration))
	case sc.MaxBlockDuration != 0 && sc.MaxBlockDuration < sc.BlockDuration:
		return cfg, fmt.Errorf("--storage.max-block-duration %s is below --storage.block-duration %s", model.Duration(sc.MaxBlockDuration), model.Duration(sc.BlockDuration))
	case rr.MaxSamples < 0:
		return cfg, fmt.Errorf("--remote-read.sample-limit must not be negative")
	case rr.MaxConcurrent <= 0:
		return cfg, fmt.Errorf("--remote-read.concurrent-limit must be positive")
	case rr.MaxBytesInFrame <= 0:
		return cfg, fmt.Errorf("--remote-read.max-bytes-in-frame must be positive")
	case sc.MaxSeries < 0:
		return cfg, fmt.Errorf("--storage.max-series must not be negative")
	case sc.MaxExemplars < 0:
		return cfg, fmt.Errorf("--storage.max-exemplars must not be negative")
	case !(memLimitRatio > 0 && memLimitRatio <= 1):
		return cfg, fmt.Errorf("--auto-gomemlimit.ratio %g is not in (0, 1]", memLimitRatio)
	case sc.LookbackDelta <= 0:
		return cfg, fmt.Errorf("--query.lookback-delta must be positive")
	case sc.QueryTimeout <= 0:
		return cfg, fmt.Errorf("--query.timeout must be positive")
	case sc.QueryMaxSamples <= 0:
		return cfg, fmt.Errorf("--query.max-samples must be positive")
	case sc.QueryMaxConcurrency <= 0:
		return cfg, fmt.Errorf("--query.max-concurrency must be positive")
	case sc.StoreAPILimits.MaxSeries < 0 || sc.StoreAPILimits.MaxChunks < 0:
		return cfg, fmt.Errorf("--store.limits.request-series and --store.limits.request-chunks must not be negative")
	case sc.QueryRangeParallelism <= 0:
		return cfg, fmt.Errorf("--query.range-parallelism must be positive")
	case sc.DefaultSubqueryStep <= 0:
		return cfg, fmt.Errorf("--query.default-subquery-step must be positive")
	case ro.NotificationQueueCapacity <= 0:
		return cfg, fmt.Errorf("--alertmanager.notification-queue-capacity must be positive")
	case sc.QueryEngine != server.QueryEngineRollup && sc.QueryEngine != server.QueryEnginePrometheus:
		return cfg, fmt.Errorf("--query.engine %q: want %q or %q", sc.QueryEngine, server.QueryEngineRollup, server.QueryEnginePrometheus)
	}
	if sc.ExternalLabels, err = parseExternalLabels(external); err != nil {
		return cfg, fmt.Errorf("--external-label: %w", err)
	}
	for _, f := range splitFeatures(features) {
		switch f {
		case "promql-experimental-functions":
			sc.ParserOptions.EnableExperimentalFunctions = true
		case "promql-extended-range-selectors":
			sc.ParserOptions.EnableExtendedRangeSelectors = true
		case "promql-binop-fill-modifiers":
			sc.ParserOptions.EnableBinopFillModifiers = true
		case "promql-duration-expr":
			sc.ParserOptions.ExperimentalDurationExpr = true
		case "promql-delayed-name-removal":
			sc.DelayedNameRemoval = true
		case "use-start-timestamps":
			sc.UseStartTimestamps = true
		default:
			cfg.unknownFeatures = append(cfg.unknownFeatures, f)
		}
	}
	if autoMemLimit {
		cfg.memLimitRatio = memLimitRatio
	}
	return cfg, nil
}

// parseExternalLabels parses --external-label values, name=value each.
// Names are refused where Prometheus' configuration refuses them, and
// also where they begin with "__", which Prometheus reserves for labels of
// its own: an external label is added to series on their way out, where
// it would stand beside or replace those.
func parseExternalLabels(values []string) (labels.Labels, error) {
	b := labels.NewScratchBuilder(len(values))
	seen := map[string]bool{}
	for _, v := range values {
		name, value, ok := strings.Cut(v, "=")
		switch {
		case !ok:
			return labels.EmptyLabels(), fmt.Errorf("%q is not name=value", v)
		case !model.UTF8Validation.IsValidLabelName(name):
			return labels.EmptyLabels(), fmt.Errorf("%q is not a valid label name", name)
		case strings.HasPrefix(name, "__"):
			return labels.EmptyLabels(), fmt.Errorf("%q: names beginning with __ are reserved", name)
		case value == "":
			return labels.EmptyLabels(), fmt.Errorf("%q has no value", name)
		case !model.LabelValue(value).IsValid():
			return labels.EmptyLabels(), fmt.Errorf("%q: value %q is not valid UTF-8", name, value)
		case seen[name]:
			return labels.EmptyLabels(), fmt.Errorf("%q is given twice", name)
		}
		seen[name] = true
		b.Add(name, value)
	}
	b.Sort()
	return b.Labels(), nil
}

// splitFeatures turns repeated, comma-separated --enable-feature values
// into a list.
func splitFeatures(values []string) []string {
	var out []string
	for _, v := range values {
		out = append(out, splitList(v)...)
	}
	return out
}

// splitList splits a comma-separated flag value, leaving out spaces
// around the items and empty ones.
func splitList(v string) []string {
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// byteUnits are the units --retention.size takes, base 2 as Prometheus'
// --storage.tsdb.retention.size.
var byteUnits = []struct {
	suffix string
	mult   int64
}{{"PB", 1 << 50}, {"TB", 1 << 40}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10}, {"B", 1}}

// parseBytes parses a size such as 512MB or 1073741824.
func parseBytes(s string) (int64, error) {
	num, mult := s, int64(1)
	for _, u := range byteUnits {
		if strings.HasSuffix(s, u.suffix) {
			num, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || (n > 0 && n > math.MaxInt64/mult) {
		return 0, fmt.Errorf("%q is not a size in bytes (such as 0, 1073741824 or 512MB)", s)
	}
	return n * mult, nil
}
