package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/strata-db/strata/internal/bench/proc"
	"github.com/strata-db/strata/internal/bench/run"
	"github.com/strata-db/strata/internal/bench/workload"
)

// config is everything the flags set.
type config struct {
	name  string
	quick bool

	targets []run.Target
	rounds  int

	ingest run.IngestOptions
	load   run.LoadOptions // replay, query and disk
	// samples is the total a load writes (--samples).
	samples    int64
	iterations int
	rules      run.RulesOptions // its Load is load's
	scrape     run.ScrapeOptions

	jsonPath, reportDir string
	workDir             string
	keep                bool
	readyTimeout        time.Duration
	stopTimeout         time.Duration
	seedNote            string
}

// serverList is the repeated --server name=command flag.
type serverList []string

func (s *serverList) String() string     { return strings.Join(*s, ", ") }
func (s *serverList) Set(v string) error { *s = append(*s, v); return nil }

// hasQuick reports whether args ask for --quick; it decides the defaults
// the flags are then registered with, so explicit flags still win.
func hasQuick(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		switch a {
		case "-quick", "--quick", "-quick=true", "--quick=true":
			return true
		}
	}
	return false
}

func parse(name string, compare bool, args []string, stderr io.Writer) (*config, error) {
	cfg := &config{name: name, quick: hasQuick(args), rounds: 1}
	switch {
	case name == "ingest" && cfg.quick:
		cfg.ingest = run.QuickIngestOptions()
	case name == "ingest":
		cfg.ingest = run.DefaultIngestOptions()
	case name == "replay" && cfg.quick:
		cfg.load = run.QuickReplayOptions().Load
	case name == "replay":
		cfg.load = run.DefaultReplayOptions().Load
	case name == "disk" && cfg.quick:
		cfg.load = run.QuickDiskOptions().Load
	case name == "disk":
		cfg.load = run.DefaultDiskOptions().Load
	case name == "rules":
		cfg.rules = run.DefaultRulesOptions()
		if cfg.quick {
			cfg.rules = run.QuickRulesOptions()
		}
		cfg.load = cfg.rules.Load
	case name == "scrape" && cfg.quick:
		cfg.scrape = run.QuickScrapeOptions()
	case name == "scrape":
		cfg.scrape = run.DefaultScrapeOptions()
	case name == "query":
		q := run.DefaultQueryOptions()
		if cfg.quick {
			q = run.QuickQueryOptions()
		}
		cfg.load, cfg.iterations = q.Load, q.Iterations
	}
	if compare {
		// An odd number of rounds has a true median; two are enough to
		// see the noise in a smoke run.
		cfg.rounds = 3
		if cfg.quick {
			cfg.rounds = 2
		}
	}

	title := "strata-bench " + name
	if compare {
		title = "strata-bench compare " + name
	}
	fs := flag.NewFlagSet(title, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Bool("quick", cfg.quick, "smoke-test sizes: finishes in well under a minute")

	// The server.
	target := run.DefaultTarget()
	var servers, writePaths serverList
	if compare {
		fs.Var(&servers, "server", "a server to compare, as name=command (repeat 2 or 3 times); the command's {addr}, {host}, {port}, {data} and {addr2} (a second free address) are replaced, and for rules and scrape {config}, for rules {rules}")
		fs.Var(&writePaths, "server-write-path", "a server's own write path, as name=path, where servers differ (OTLP: /v1/metrics on strata, /opentelemetry/v1/metrics on VictoriaMetrics, /api/v1/otlp/v1/metrics on Prometheus); the others use --write-path")
		fs.IntVar(&cfg.rounds, "rounds", cfg.rounds, "rounds of running every server in turn; figures are medians")
	} else {
		fs.StringVar(&target.Command, "server-cmd", "", "launch the server with this command ({addr}, {host}, {port}, {data} and {addr2}, a second free address, are replaced, and for rules and scrape {config}, for rules {rules}; run directly, not by a shell)")
		fs.StringVar(&target.Name, "name", "", "the server's name in reports (default: the command's program name, or \"server\")")
		if name == "ingest" || name == "query" {
			fs.StringVar(&target.WriteURL, "url", "", "remote-write URL of a running server on this machine, e.g. http://127.0.0.1:9201/api/v1/write")
			fs.StringVar(&target.QueryURL, "query-url", "", "base URL of the running server's query API (default: --url's scheme and host)")
			fs.IntVar(&target.Pid, "pid", 0, "process id of the running server, to measure its CPU and memory")
		}
	}
	fs.StringVar(&target.WritePath, "write-path", target.WritePath, "remote-write path of a launched server")
	fs.StringVar(&target.ReadyPath, "ready-path", target.ReadyPath, "readiness path, polled until it answers 200 (VictoriaMetrics before v1.70: /health)")

	// The data: a scrape's targets, or what is written.
	var finishData func(set map[string]bool) error
	if name == "scrape" {
		so := &cfg.scrape
		fs.IntVar(&so.Targets, "targets", so.Targets, "number of targets the harness serves")
		fs.IntVar(&so.SeriesPerTarget, "series-per-target", so.SeriesPerTarget, fmt.Sprintf("series of each target, rounded up to whole node catalogs of %d", workload.SeriesPerInstance()))
		fs.DurationVar(&so.Interval, "interval", so.Interval, "scrape interval")
		fs.DurationVar(&so.Warmup, "warmup", so.Warmup, "how long the server scrapes before it is measured")
		fs.DurationVar(&so.Duration, "duration", so.Duration, "how long the scraping is measured")
		fs.Uint64Var(&so.Seed, "seed", so.Seed, "seed of the generated values")
	} else {
		var wo *workload.Options
		var protocol *workload.Protocol
		if name == "ingest" {
			wo, protocol = &cfg.ingest.Workload, &cfg.ingest.Protocol
		} else {
			wo, protocol = &cfg.load.Workload, &cfg.load.Protocol
		}
		protoFlag := fs.String("protocol", string(*protocol), "1.0 or 2.0 (remote-write); otlp (OTLP/HTTP, gzipped protobuf: give the OTLP endpoint as --url or --write-path, e.g. /v1/metrics on strata, /api/v1/otlp/v1/metrics on Prometheus, /opentelemetry/v1/metrics on VictoriaMetrics); or otlp-grpc (uncompressed, to a running server: --url grpc://host:port and --query-url)")
		seed := fs.Uint64("seed", wo.Seed, "seed of the generated labels and values (against --url, the default is the clock, so a repeat run sends new series)")
		fs.IntVar(&wo.Series, "series", wo.Series, "number of series")
		fs.IntVar(&wo.Labels, "labels", wo.Labels, fmt.Sprintf("labels per series besides __name__ (%d to %d)", workload.MinLabels, workload.MaxLabels))
		fs.IntVar(&wo.SamplesPerSeries, "samples-per-request", wo.SamplesPerSeries, "samples of each series in one request")
		spr := fs.Int("series-per-request", 0, "series in one request (default: about 2000 samples a request, Prometheus' max_samples_per_send)")
		fs.IntVar(&wo.Senders, "concurrency", wo.Senders, "requests in flight at once; series are sharded across the senders")
		interval := fs.Duration("interval", time.Duration(wo.Interval)*time.Millisecond, "time between a series' samples")
		values := fs.String("values", string(workload.ValuesNode), "sample values: node (node-exporter-like counters, gauges and histogram buckets) or noisy (random gauges with full float precision, for disk figures)")
		switch name {
		case "ingest":
			fs.DurationVar(&cfg.ingest.Duration, "duration", cfg.ingest.Duration, "how long to send")
			fs.Int64Var(&cfg.ingest.Requests, "requests", 0, "send this many requests instead of for --duration")
			fs.DurationVar(&cfg.ingest.Since, "since", 0, "start the timestamps this long before now instead of at now: a history pushed in time order, for servers that refuse future samples (Prometheus); with --requests, keep the data's span (requests x series per request / series x interval) under it")
			fs.Float64Var(&wo.Churn, "churn", 0, "fraction of each sender's series replaced by new ones at every churn event")
			fs.IntVar(&wo.ChurnEvery, "churn-every", wo.ChurnEvery, "requests of a sender between churn events")
			fs.Int64Var(&cfg.ingest.PoolBytes, "pool-bytes", cfg.ingest.PoolBytes, "memory for requests encoded before the timed run; more is encoded in phases, with the clock stopped")
		default:
			cfg.samples = cfg.load.SamplesPerSeries * int64(wo.Series)
			fs.Int64Var(&cfg.samples, "samples", cfg.samples, "samples to load, spread evenly over --series")
			if name == "query" {
				fs.IntVar(&cfg.iterations, "iterations", cfg.iterations, "timed runs of each query")
			}
			if name == "rules" {
				fs.DurationVar(&cfg.rules.Warmup, "warmup", cfg.rules.Warmup, "how long the server runs on live samples after the load before it is measured")
				fs.DurationVar(&cfg.rules.Duration, "duration", cfg.rules.Duration, "how long the rule evaluation is measured")
			}
		}

		finishData = func(set map[string]bool) error {
			var err error
			if *protocol, err = workload.ParseProtocol(*protoFlag); err != nil {
				return err
			}
			// OTLP/gRPC is on a port of its own: the harness needs the server's
			// HTTP address too, for readiness, and cannot derive either for a
			// server it launches.
			if *protocol == workload.OTLPGRPC && (target.WriteURL == "" || target.QueryURL == "") {
				return errors.New("--protocol otlp-grpc needs a running server: --url grpc://127.0.0.1:4317 and --query-url of its HTTP API")
			}
			if *interval < time.Millisecond {
				return errors.New("--interval must be at least 1ms")
			}
			wo.Interval = interval.Milliseconds()
			wo.Values = workload.Values(*values) // the workload validates it
			wo.Seed = *seed
			if *spr > 0 {
				wo.SeriesPerRequest = *spr
			} else if set["samples-per-request"] {
				wo.SeriesPerRequest = max(1, 2000/wo.SamplesPerSeries)
			}
			if name != "ingest" {
				if cfg.samples < 1 {
					return errors.New("--samples must be positive")
				}
				if wo.Series < 1 {
					return errors.New("--series must be positive")
				}
				cfg.load.SamplesPerSeries = (cfg.samples + int64(wo.Series) - 1) / int64(wo.Series)
			}
			if target.WriteURL != "" && !set["seed"] {
				// A running server still holds the series of the last
				// run, with later timestamps than a repeat would send.
				wo.Seed = uint64(time.Now().Unix())
				cfg.seedNote = "seed " + strconv.FormatUint(wo.Seed, 10) + " from the clock (pass --seed to repeat this data)"
			}
			return nil
		}
	}

	// The outputs.
	fs.StringVar(&cfg.jsonPath, "json", "", "write the result as JSON to this file")
	fs.StringVar(&cfg.reportDir, "report", "", "write report.md and chart.png into this directory")
	fs.StringVar(&cfg.workDir, "work-dir", "", "directory for data directories and server logs (default: a new temporary directory)")
	fs.BoolVar(&cfg.keep, "keep", false, "keep data directories and logs")
	fs.DurationVar(&cfg.readyTimeout, "ready-timeout", run.DefaultEnv("").ReadyTimeout, "longest wait for a server to become ready")
	fs.DurationVar(&cfg.stopTimeout, "stop-timeout", run.DefaultEnv("").StopTimeout, "longest wait for a server to exit on SIGTERM before it is killed")

	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	if finishData != nil {
		if err := finishData(set); err != nil {
			return nil, err
		}
	}

	if compare {
		if len(servers) < 2 || len(servers) > 3 {
			return nil, fmt.Errorf("compare needs 2 or 3 --server name=command flags, got %d", len(servers))
		}
		seen := map[string]bool{}
		for _, s := range servers {
			n, c, ok := strings.Cut(s, "=")
			if !ok || n == "" || c == "" {
				return nil, fmt.Errorf("--server %q: want name=command", s)
			}
			if seen[n] {
				return nil, fmt.Errorf("--server name %q given twice", n)
			}
			seen[n] = true
			t := target
			t.Name, t.Command = n, c
			cfg.targets = append(cfg.targets, t)
		}
		for _, wp := range writePaths {
			n, path, ok := strings.Cut(wp, "=")
			if !ok || !strings.HasPrefix(path, "/") {
				return nil, fmt.Errorf("--server-write-path %q: want name=/path", wp)
			}
			if !seen[n] {
				return nil, fmt.Errorf("--server-write-path %q: no --server named %q", wp, n)
			}
			for i := range cfg.targets {
				if cfg.targets[i].Name == n {
					cfg.targets[i].WritePath = path
				}
			}
		}
		if cfg.rounds < 1 {
			return nil, errors.New("--rounds must be at least 1")
		}
	} else {
		switch {
		case target.Command != "" && target.WriteURL != "":
			return nil, errors.New("give --server-cmd or --url, not both")
		case target.Command == "" && target.WriteURL == "" && (name == "ingest" || name == "query"):
			return nil, errors.New("give --url of a running server or --server-cmd to launch one")
		case target.Command == "" && target.WriteURL == "":
			return nil, errors.New("give --server-cmd: this workload launches, kills or stops the server")
		}
		if target.Name == "" {
			target.Name = "server"
			if target.Command != "" {
				target.Name = proc.Name(target.Command)
			}
		}
		cfg.targets = []run.Target{target}
	}
	return cfg, nil
}

// workload builds the configured workload.
func (cfg *config) workload() (run.Workload, error) {
	switch cfg.name {
	case "ingest":
		return run.NewIngest(cfg.ingest)
	case "replay":
		return run.NewReplay(run.ReplayOptions{Load: cfg.load})
	case "disk":
		return run.NewDisk(run.DiskOptions{Load: cfg.load})
	case "query":
		return run.NewQuery(run.QueryOptions{Load: cfg.load, Iterations: cfg.iterations})
	case "rules":
		o := cfg.rules
		o.Load = cfg.load
		return run.NewRules(o)
	case "scrape":
		return run.NewScrape(cfg.scrape)
	}
	return nil, fmt.Errorf("unknown workload %q", cfg.name)
}
