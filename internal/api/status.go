package api

import (
	"encoding/json"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"time"
)

// The status endpoints that describe the server (its flags, its
// configuration, its runtime). The shapes are Prometheus' (web/api/v1),
// field for field.

// ConfigSource is the configuration in effect.
type ConfigSource interface {
	// ConfigStatus returns the configuration in effect and how its
	// last load or reload went.
	ConfigStatus() ConfigStatus
}

// ConfigStatus is what /api/v1/status/config and runtimeinfo show of the
// configuration.
type ConfigStatus struct {
	// YAML is the configuration in effect, in the shape of Prometheus'
	// configuration file.
	YAML string
	// ReloadSuccess says whether the last load or reload succeeded;
	// LoadedAt is when the configuration in effect was loaded.
	ReloadSuccess bool
	LoadedAt      time.Time
}

// StaticConfig is a configuration that is never reloaded: yaml, loaded
// at loadedAt.
func StaticConfig(yaml string, loadedAt time.Time) ConfigSource {
	return staticConfig{YAML: yaml, ReloadSuccess: true, LoadedAt: loadedAt}
}

type staticConfig ConfigStatus

func (c staticConfig) ConfigStatus() ConfigStatus { return ConfigStatus(c) }

// jsonData is data encoded by encoding/json: for the small, rarely
// requested status answers, whose shapes are Prometheus' structs.
type jsonData struct{ v any }

func (d jsonData) appendJSON(dst []byte) ([]byte, error) {
	b, err := json.Marshal(d.v)
	return append(dst, b...), err
}

// runtimeInfo is the data of /api/v1/status/runtimeinfo.
type runtimeInfo struct {
	StartTime           time.Time `json:"startTime"`
	CWD                 string    `json:"CWD"`
	Hostname            string    `json:"hostname"`
	ServerTime          time.Time `json:"serverTime"`
	ReloadConfigSuccess bool      `json:"reloadConfigSuccess"`
	LastConfigTime      time.Time `json:"lastConfigTime"`
	CorruptionCount     int64     `json:"corruptionCount"`
	GoroutineCount      int       `json:"goroutineCount"`
	GOMAXPROCS          int       `json:"GOMAXPROCS"`
	GOMEMLIMIT          int64     `json:"GOMEMLIMIT"`
	GOGC                string    `json:"GOGC"`
	GODEBUG             string    `json:"GODEBUG"`
	StorageRetention    string    `json:"storageRetention"`
}

func (a *API) serveRuntimeInfo(*http.Request) result {
	cwd, err := os.Getwd()
	if err != nil {
		cwd = "<error retrieving current working directory>"
	}
	host, err := os.Hostname()
	if err != nil {
		host = "<error retrieving hostname>"
	}
	cs := a.config.ConfigStatus()
	return result{data: jsonData{runtimeInfo{
		StartTime:           a.startTime,
		CWD:                 cwd,
		Hostname:            host,
		ServerTime:          a.now().UTC(),
		ReloadConfigSuccess: cs.ReloadSuccess,
		LastConfigTime:      cs.LoadedAt.UTC().Truncate(time.Second), // as Prometheus keeps it
		GoroutineCount:      runtime.NumGoroutine(),
		GOMAXPROCS:          runtime.GOMAXPROCS(0),
		GOMEMLIMIT:          debug.SetMemoryLimit(-1),
		GOGC:                os.Getenv("GOGC"),
		GODEBUG:             os.Getenv("GODEBUG"),
		StorageRetention:    a.storageRetention,
	}}}
}

// serveFlags answers /api/v1/status/flags: every flag with its value.
func (a *API) serveFlags(*http.Request) result {
	flags := a.flags
	if flags == nil {
		flags = map[string]string{}
	}
	return result{data: jsonData{flags}}
}

// serveConfig answers /api/v1/status/config: the configuration in effect,
// as YAML.
func (a *API) serveConfig(*http.Request) result {
	return result{data: jsonData{struct {
		YAML string `json:"yaml"`
	}{a.config.ConfigStatus().YAML}}}
}

// formatQuery answers /api/v1/format_query: the query pretty-printed.
func (a *API) formatQuery(r *http.Request) result {
	expr, err := a.parser.ParseExpr(r.FormValue("query"))
	if err != nil {
		return errResult(invalidParam("query", err))
	}
	return result{data: jsonData{expr.Pretty(0)}}
}
