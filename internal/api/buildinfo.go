package api

import (
	"net/http"
	"runtime"
	"runtime/debug"
	"strings"
)

// buildInfo is the data of /api/v1/status/buildinfo, with Prometheus'
// fields. Branch, build user and date are left empty: strata's build does
// not stamp them.
type buildInfo struct {
	version, revision, branch, buildUser, buildDate, goVersion string
}

// prometheusRelease is the Prometheus release whose query engine and API
// types strata is built with: its Go module is
// github.com/prometheus/prometheus v0.315.0, Prometheus' tag of 3.15.0
// (TestPrometheusRelease keeps the two in step).
const prometheusRelease = "3.15.0"

// newBuildInfo returns the build information of strata at version.
//
// Clients of the Prometheus API read the version to choose what they may
// ask: Thanos' sidecar sends label names and values with matchers only
// to Prometheus 2.24 and later, and goes through /api/v1/series for the
// rest; Grafana turns features on by version too. strata's own version
// (0.x) would read as a Prometheus older than all of them. So version is
// prometheusRelease, the Prometheus API level strata answers at, with
// strata and its version as semantic-version build metadata:
// "3.15.0+strata.0.1.0-dev". Build metadata takes no part in version
// comparisons, so clients see the API level, and a person sees which
// program answers.
func newBuildInfo(version string) buildInfo {
	bi := buildInfo{version: prometheusRelease + "+strata." + buildMetadata(version), goVersion: runtime.Version()}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				bi.revision = s.Value
			}
		}
	}
	return bi
}

// buildMetadata makes v fit semantic-version build metadata: ASCII
// letters, digits, hyphens and dots between non-empty identifiers.
func buildMetadata(v string) string {
	var b strings.Builder
	for _, r := range strings.TrimPrefix(v, "v") {
		switch {
		case r >= '0' && r <= '9', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '-':
			b.WriteRune(r)
		case r == '.' && b.Len() > 0 && !strings.HasSuffix(b.String(), "."):
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	out := strings.TrimSuffix(b.String(), ".")
	if out == "" {
		return "unknown"
	}
	return out
}

func (b *buildInfo) appendJSON(dst []byte) ([]byte, error) {
	for i, f := range [...]struct{ key, value string }{
		{"version", b.version},
		{"revision", b.revision},
		{"branch", b.branch},
		{"buildUser", b.buildUser},
		{"buildDate", b.buildDate},
		{"goVersion", b.goVersion},
	} {
		if i == 0 {
			dst = append(dst, '{')
		} else {
			dst = append(dst, ',')
		}
		dst = appendString(dst, f.key)
		dst = append(dst, ':')
		dst = appendString(dst, f.value)
	}
	return append(dst, '}'), nil
}

func (a *API) serveBuildInfo(*http.Request) result {
	return result{data: &a.buildInfo}
}
