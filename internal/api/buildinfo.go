package api

import (
	"net/http"
	"runtime"
	"runtime/debug"
)

// buildInfo is the data of /api/v1/status/buildinfo, with Prometheus'
// fields. Branch, build user and date are left empty: strata's build does
// not stamp them.
type buildInfo struct {
	version, revision, branch, buildUser, buildDate, goVersion string
}

func newBuildInfo(version string) buildInfo {
	bi := buildInfo{version: version, goVersion: runtime.Version()}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				bi.revision = s.Value
			}
		}
	}
	return bi
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
