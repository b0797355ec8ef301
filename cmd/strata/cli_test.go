package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of the help")

// TestHelp compares the help of each command with its golden file, so
// that a flag renamed or dropped (every name strata has taken must keep
// working) shows in review; go test -run TestHelp -update rewrites them.
func TestHelp(t *testing.T) {
	for _, tc := range []struct {
		golden string
		run    func(stdout io.Writer) int
	}{
		{"help.txt", func(w io.Writer) int {
			if _, err := parseFlags([]string{"--help"}, w); err != errPrinted {
				t.Errorf("--help: %v", err)
			}
			return 0
		}},
		{"help-tsdb.txt", func(w io.Writer) int { return runTSDB([]string{"-h"}, w, io.Discard) }},
		{"help-tsdb-list.txt", func(w io.Writer) int { return runTSDB([]string{"list", "--help"}, w, io.Discard) }},
		{"help-store.txt", func(w io.Writer) int { return runStore([]string{"--help"}, w, io.Discard) }},
		{"help-compact.txt", func(w io.Writer) int { return runCompact([]string{"-h"}, w, io.Discard) }},
	} {
		var out bytes.Buffer
		if code := tc.run(&out); code != 0 {
			t.Errorf("%s: exit %d", tc.golden, code)
		}
		path := filepath.Join("testdata", tc.golden)
		if *update {
			if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if out.String() != string(want) {
			t.Errorf("%s differs (go test -run TestHelp -update rewrites it):\n%s", tc.golden, out.String())
		}
	}
}

// TestVersion checks that every command answers --version in
// Prometheus' layout.
func TestVersion(t *testing.T) {
	for name, run := range map[string]func(io.Writer) int{
		"strata": func(w io.Writer) int {
			if _, err := parseFlags([]string{"--version"}, w); err != errPrinted {
				return 1
			}
			return 0
		},
		"tsdb":    func(w io.Writer) int { return runTSDB([]string{"--version"}, w, io.Discard) },
		"store":   func(w io.Writer) int { return runStore([]string{"--version"}, w, io.Discard) },
		"compact": func(w io.Writer) int { return runCompact([]string{"--version"}, w, io.Discard) },
	} {
		var out bytes.Buffer
		if code := run(&out); code != 0 {
			t.Errorf("%s --version: exit %d", name, code)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) != 6 || !strings.HasPrefix(lines[0], "strata, version "+version+" (branch: ") ||
			lines[3] != "  go version:       "+runtime.Version() || !strings.HasPrefix(lines[2], "  build date:") {
			t.Errorf("%s --version printed:\n%s", name, out.String())
		}
	}
}

// TestCompatArgs checks that the command lines Go's flag package took
// still work: one dash, booleans with a value, a flag given twice.
func TestCompatArgs(t *testing.T) {
	for _, tc := range []struct {
		args, want []string
	}{
		{[]string{"-data-dir", "d", "-listen-address=:1"}, []string{"--data-dir", "d", "--listen-address=:1"}},
		{[]string{"--self-scrape=false", "--auto-gomemlimit=true", "-web.enable-admin-api"}, []string{"--no-self-scrape", "--auto-gomemlimit", "--web.enable-admin-api"}},
		{[]string{"--listen-address", ":1", "--data-dir=a", "--listen-address=:2"}, []string{"--data-dir=a", "--listen-address=:2"}},
		{[]string{"--self-scrape", "--no-self-scrape"}, []string{"--no-self-scrape"}},
		{[]string{"--external-label", "a=1", "--external-label=b=2"}, []string{"--external-label", "a=1", "--external-label=b=2"}},
		{[]string{"-h", "-x", "--nope", "arg", "--", "-data-dir"}, []string{"-h", "-x", "--nope", "arg", "--", "-data-dir"}},
		{[]string{"--query.lookback-delta", "-data-dir"}, []string{"--query.lookback-delta", "-data-dir"}},
	} {
		app := newApp("strata", "", io.Discard)
		// A few of the server's flags, of each kind.
		fs := flags{app}
		var s string
		var b bool
		var d []string
		for _, n := range []string{"data-dir", "listen-address", "query.lookback-delta"} {
			fs.String(&s, n, "")
		}
		for _, n := range []string{"self-scrape", "auto-gomemlimit", "web.enable-admin-api"} {
			fs.Bool(&b, n, "")
		}
		fs.Strings(&d, "external-label", "")
		if got := compatArgs(app, tc.args); !slices.Equal(got, tc.want) {
			t.Errorf("compatArgs(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
	cfg, err := parseFlags([]string{"-data-dir", "x", "--self-scrape=false", "--listen-address=:1", "--listen-address", ":2", "-otlp.grpc-listen-address="}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if sc := cfg.server; sc.DataDir != "x" || sc.SelfScrape || sc.ListenAddress != ":2" || sc.OTLPGRPCAddress != "" {
		t.Errorf("parsed %+v", sc)
	}
}
