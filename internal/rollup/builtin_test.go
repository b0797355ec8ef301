package rollup

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
)

// builtinTests returns Prometheus' own PromQL test files, from the module
// strata builds against, by name.
func builtinTests(t *testing.T) map[string]string {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/prometheus/prometheus").Output()
	if err != nil {
		t.Fatalf("find the prometheus module: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "promql", "promqltest", "testdata")
	files, err := filepath.Glob(filepath.Join(dir, "*.test"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files in %s: %v", dir, err)
	}
	tests := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tests[filepath.Base(f)] = string(b)
	}
	return tests
}

// newPromEngine returns Prometheus' engine as strata's server sets it up.
func newPromEngine(t testing.TB, maxSamples int) *promql.Engine {
	return promqltest.NewTestEngineWithOpts(t, promql.EngineOpts{
		MaxSamples:               maxSamples,
		Timeout:                  100 * time.Second,
		NoStepSubqueryIntervalFn: func(int64) int64 { return time.Minute.Milliseconds() },
		EnableAtModifier:         true,
		EnableNegativeOffset:     true,
		Parser:                   parser.NewParser(promqltest.TestParserOpts),
	})
}

// needsFeatures are the files of Prometheus' tests that fail on
// Prometheus' engine as strata's server sets it up, for features it
// leaves off: delayed __name__ removal, start timestamps in rate and
// increase, and type and unit labels.
var needsFeatures = map[string]bool{
	"histograms.test":          true,
	"name_label_dropping.test": true,
	"native_histograms.test":   true,
	"start_timestamps.test":    true,
	"type_and_unit.test":       true,
}

// TestBuiltin runs Prometheus' own PromQL tests through Engine: every
// answer, and every warning and info, must be what Prometheus' engine
// gives.
func TestBuiltin(t *testing.T) {
	tests := builtinTests(t)
	for name := range needsFeatures {
		if _, ok := tests[name]; !ok {
			t.Errorf("%s is no longer among Prometheus' tests", name)
		}
	}
	var taken int64
	for name, content := range tests {
		if needsFeatures[name] {
			continue
		}
		t.Run(name, func(t *testing.T) {
			const maxSamples = 50000000
			e := New(Options{Engine: newPromEngine(t, maxSamples), Parser: parser.NewParser(promqltest.TestParserOpts), MaxSamples: maxSamples})
			promqltest.RunTest(t, content, e)
			taken += e.taken.Load()
		})
	}
	// The tests' range queries over rates and increases are many: 51
	// took the path at Prometheus v0.315.
	t.Logf("%d queries evaluated inners here", taken)
	if taken < 40 {
		t.Errorf("%d queries evaluated inners", taken)
	}
}
