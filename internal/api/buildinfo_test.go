package api

import (
	"os"
	"regexp"
	"strconv"
	"testing"
)

// TestPrometheusRelease checks that the release buildinfo names is the
// one of the Prometheus module in go.mod: v0.MMM.P is release M.MM.P
// (v0.315.0 is 3.15.0), as Prometheus tags its releases for Go.
func TestPrometheusRelease(t *testing.T) {
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*github\.com/prometheus/prometheus v0\.(\d+)\.(\d+)\b`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod requires no github.com/prometheus/prometheus v0.x.y")
	}
	minor, _ := strconv.Atoi(string(m[1]))
	want := strconv.Itoa(minor/100) + "." + strconv.Itoa(minor%100) + "." + string(m[2])
	if prometheusRelease != want {
		t.Errorf("prometheusRelease is %s; go.mod's Prometheus module is release %s", prometheusRelease, want)
	}
}

func TestBuildInfoVersion(t *testing.T) {
	for version, want := range map[string]string{
		"0.1.0-dev":    prometheusRelease + "+strata.0.1.0-dev",
		"v1.2.3":       prometheusRelease + "+strata.1.2.3",
		"1.2 (abc)":    prometheusRelease + "+strata.1.2--abc-",
		".x..y.":       prometheusRelease + "+strata.-x.-y",
		"":             prometheusRelease + "+strata.unknown",
		"2026-12-02_1": prometheusRelease + "+strata.2026-12-02-1",
	} {
		if got := newBuildInfo(version).version; got != want {
			t.Errorf("version %q: buildinfo says %q, want %q", version, got, want)
		}
	}
}
