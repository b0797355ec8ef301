package main

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/bench/run"
	"github.com/strata-db/strata/internal/bench/workload"
)

func TestParse(t *testing.T) {
	const cmd = "strata --listen-address {addr} --data-dir {data}"
	t.Run("quick defaults, explicit flags win", func(t *testing.T) {
		cfg, err := parse("ingest", false, []string{"--series", "777", "--quick", "--url", "http://127.0.0.1:1/api/v1/write"}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		q := run.QuickIngestOptions()
		if cfg.ingest.Workload.Series != 777 || cfg.ingest.Duration != q.Duration || !cfg.quick {
			t.Fatalf("series %d duration %v", cfg.ingest.Workload.Series, cfg.ingest.Duration)
		}
		if cfg.seedNote == "" || cfg.ingest.Workload.Seed == 1 {
			t.Fatal("against --url the seed should come from the clock")
		}
		if cfg.targets[0].Name != "server" {
			t.Fatalf("name %q", cfg.targets[0].Name)
		}
	})
	t.Run("launched keeps the seed", func(t *testing.T) {
		cfg, err := parse("ingest", false, []string{"--server-cmd", cmd, "--protocol", "2.0", "--samples-per-request", "10", "--interval", "30s"}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		o := cfg.ingest
		if o.Workload.Seed != 1 || o.Protocol != workload.V2 || o.Workload.SeriesPerRequest != 200 || o.Workload.Interval != 30_000 {
			t.Fatalf("options %+v", o)
		}
		if cfg.targets[0].Name != "strata" || cfg.targets[0].Command != cmd {
			t.Fatalf("target %+v", cfg.targets[0])
		}
	})
	t.Run("OTLP over gRPC needs both addresses of a running server", func(t *testing.T) {
		for _, args := range [][]string{
			{"--server-cmd", cmd, "--protocol", "otlp-grpc"},
			{"--url", "grpc://127.0.0.1:4317", "--protocol", "otlp-grpc"},
		} {
			if _, err := parse("ingest", false, args, io.Discard); err == nil || !strings.Contains(err.Error(), "otlp-grpc") {
				t.Errorf("parse(%q) = %v, want an error about otlp-grpc", args, err)
			}
		}
		cfg, err := parse("ingest", false, []string{"--url", "grpc://127.0.0.1:4317", "--query-url", "http://127.0.0.1:9201", "--protocol", "otlp-grpc"}, io.Discard)
		if err != nil || cfg.ingest.Protocol != workload.OTLPGRPC {
			t.Fatalf("parse = %+v, %v", cfg, err)
		}
	})
	t.Run("a write path per compared server", func(t *testing.T) {
		cfg, err := parse("ingest", true, []string{"--server", "strata=" + cmd, "--server", "vm=vm -httpListenAddr {addr}",
			"--server-write-path", "vm=/opentelemetry/v1/metrics", "--write-path", "/v1/metrics", "--protocol", "otlp"}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if p0, p1 := cfg.targets[0].WritePath, cfg.targets[1].WritePath; p0 != "/v1/metrics" || p1 != "/opentelemetry/v1/metrics" {
			t.Errorf("write paths %q, %q", p0, p1)
		}
		for _, bad := range []string{"prom=/x", "vm=x", "vm"} {
			if _, err := parse("ingest", true, []string{"--server", "strata=" + cmd, "--server", "vm=vm", "--server-write-path", bad}, io.Discard); err == nil {
				t.Errorf("--server-write-path %q accepted", bad)
			}
		}
	})
	t.Run("samples spread over series", func(t *testing.T) {
		cfg, err := parse("replay", false, []string{"--server-cmd", cmd, "--series", "300", "--samples", "1000"}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.load.SamplesPerSeries != 4 {
			t.Fatalf("samples per series %d", cfg.load.SamplesPerSeries)
		}
	})
	t.Run("compare", func(t *testing.T) {
		cfg, err := parse("disk", true, []string{"--server", "a=" + cmd, "--server", "b=x {data}", "--ready-path", "/health"}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if len(cfg.targets) != 2 || cfg.targets[1].Name != "b" || cfg.targets[1].ReadyPath != "/health" || cfg.rounds != 3 {
			t.Fatalf("targets %+v rounds %d", cfg.targets, cfg.rounds)
		}
	})
	bad := []struct {
		name    string
		compare bool
		args    []string
		want    string
	}{
		{"ingest", false, nil, "--url"},
		{"replay", false, []string{"--url", "http://127.0.0.1:1/"}, "flag provided but not defined"},
		{"ingest", false, []string{"--url", "http://127.0.0.1:1/", "--server-cmd", "x"}, "not both"},
		{"ingest", false, []string{"--server-cmd", "x", "--protocol", "3"}, "protocol"},
		{"ingest", true, []string{"--server", "a=x"}, "2 or 3"},
		{"ingest", true, []string{"--server", "a=x", "--server", "a=y"}, "twice"},
		{"ingest", true, []string{"--server", "ax", "--server", "b=y"}, "name=command"},
		{"query", false, []string{"--server-cmd", "x", "extra"}, "unexpected argument"},
		{"disk", false, []string{"--server-cmd", "x", "--samples", "0"}, "--samples"},
	}
	for _, tt := range bad {
		t.Run("bad "+strings.Join(tt.args, " "), func(t *testing.T) {
			_, err := parse(tt.name, tt.compare, tt.args, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}

func TestCLIUsage(t *testing.T) {
	var out, errOut strings.Builder
	ctx := t.Context()
	if code := cli(ctx, nil, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "usage") {
		t.Fatalf("no args: %d %q", code, errOut.String())
	}
	if code := cli(ctx, []string{"nope"}, &out, &errOut); code != 2 {
		t.Fatalf("unknown workload: %d", code)
	}
	if code := cli(ctx, []string{"compare", "--server", "x"}, &out, &errOut); code != 2 {
		t.Fatalf("compare without workload: %d", code)
	}
	if code := cli(ctx, []string{"ingest", "--url", "http://10.1.2.3:9201/api/v1/write", "--ready-timeout", time.Second.String()}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "127.0.0.1") {
		t.Fatalf("non-local URL: %d %q", code, errOut.String())
	}
}
