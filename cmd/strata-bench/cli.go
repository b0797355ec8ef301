package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/strata-db/strata/internal/bench/report"
	"github.com/strata-db/strata/internal/bench/run"
)

const usage = `usage: strata-bench <workload> [flags]
       strata-bench compare <workload> --server name=command --server name=command [flags]

workloads:
  ingest   remote-write throughput, latency, server CPU per sample and peak RSS
  replay   kill -9 a loaded server, restart it and time its way back; check no data was lost
  query    PromQL latency over loaded data
  disk     bytes on disk per sample after the server persisted everything
  rules    CPU per round and group durations of 700 rules over live data
  scrape   CPU per scraped sample, memory and scrape durations of 1,000 targets

A server is either launched from --server-cmd, with {addr}, {host}, {port}
and {data} replaced, or already running at --url (ingest and query only).
Run "strata-bench <workload> -h" for its flags; docs/benchmarks.md has more.
`

// cli is main without the process: it returns the exit code.
func cli(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	name, rest := args[0], args[1:]
	compare := false
	if name == "compare" {
		if len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
			fmt.Fprintln(stderr, "strata-bench compare: name the workload first: compare ingest|replay|query|disk|rules|scrape --server ...")
			return 2
		}
		compare = true
		name, rest = rest[0], rest[1:]
	}
	switch name {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	case "ingest", "replay", "query", "disk", "rules", "scrape":
	default:
		fmt.Fprintf(stderr, "strata-bench: unknown workload %q\n\n%s", name, usage)
		return 2
	}
	cfg, err := parse(name, compare, rest, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "strata-bench %s: %v\n", name, err)
		return 2
	}
	if err := execute(ctx, cfg, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "strata-bench %s: %v\n", name, err)
		return 1
	}
	return 0
}

// execute runs the parsed command and writes its outputs.
func execute(ctx context.Context, cfg *config, stdout, stderr io.Writer) error {
	w, err := cfg.workload()
	if err != nil {
		return err
	}
	workDir := cfg.workDir
	if workDir == "" {
		if workDir, err = os.MkdirTemp("", "strata-bench-"); err != nil {
			return err
		}
		if !cfg.keep {
			defer os.RemoveAll(workDir)
		}
	} else if err := os.MkdirAll(workDir, 0o755); err != nil {
		return err
	}
	env := run.DefaultEnv(workDir)
	env.Keep = cfg.keep
	env.Progress = stderr
	env.ReadyTimeout = cfg.readyTimeout
	env.StopTimeout = cfg.stopTimeout
	if cfg.keep {
		fmt.Fprintf(stderr, "strata-bench: keeping data directories and logs in %s\n", workDir)
	}

	res, err := run.Compare(ctx, env, w, cfg.targets, cfg.rounds)
	if err != nil {
		return err
	}
	if cfg.quick {
		res.Notes = append(res.Notes, "--quick: a smoke run with a small data set; its figures are not benchmarks")
	}
	if cfg.seedNote != "" {
		res.Notes = append(res.Notes, cfg.seedNote)
	}
	if err := report.WriteTable(stdout, res); err != nil {
		return err
	}
	if cfg.jsonPath != "" {
		if err := report.SaveJSON(cfg.jsonPath, res); err != nil {
			return err
		}
	}
	if cfg.reportDir != "" {
		if err := report.SaveReport(cfg.reportDir, res); err != nil {
			return err
		}
	}
	return nil
}
