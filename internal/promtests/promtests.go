// Package promtests finds Prometheus' own PromQL test files
// (promql/promqltest/testdata), from the Prometheus module strata builds
// against, for the tests that run them over strata's query engine and
// storage.
package promtests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Files returns the test files' contents by file name. It fails tb if
// the module or its files cannot be found.
func Files(tb testing.TB) map[string]string {
	tb.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/prometheus/prometheus").Output()
	if err != nil {
		tb.Fatalf("find the prometheus module: %v", err)
	}
	files, err := filepath.Glob(filepath.Join(strings.TrimSpace(string(out)), "promql", "promqltest", "testdata", "*.test"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no PromQL test files in the prometheus module: %v", err)
	}
	tests := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		tests[filepath.Base(f)] = string(b)
	}
	return tests
}
