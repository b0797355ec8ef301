package run

import (
	"errors"

	"github.com/strata-db/strata/internal/bench/client"
	"github.com/strata-db/strata/internal/bench/proc"
)

// Target says how to reach a server.
type Target struct {
	// Name labels the server in reports.
	Name string
	// Command launches the server; see proc.StartOptions for its
	// placeholders. Empty means the server is already running at WriteURL.
	Command string
	// WriteURL is the remote-write URL of a running server, and QueryURL
	// the base of its query API (default: WriteURL's scheme and host).
	WriteURL string
	QueryURL string
	// Pid, if not 0, is the process id of a running server to measure.
	Pid int
	// WritePath and ReadyPath are the paths of a launched server's
	// remote-write endpoint and readiness check (VictoriaMetrics before
	// v1.70 has no /-/ready; /health works on every version).
	WritePath string
	ReadyPath string
}

// DefaultTarget returns the paths strata, Prometheus and VictoriaMetrics
// all serve.
func DefaultTarget() Target {
	return Target{WritePath: "/api/v1/write", ReadyPath: "/-/ready"}
}

// Validate checks the target before anything runs: a running server
// must be on this machine.
func (t Target) Validate() error {
	if t.Launched() {
		_, err := proc.SplitCommand(t.Command)
		return err
	}
	if t.WriteURL == "" {
		return errors.New("no server command and no URL")
	}
	if _, err := client.CheckLocal(t.WriteURL); err != nil {
		return err
	}
	if t.QueryURL != "" {
		if _, err := client.CheckLocal(t.QueryURL); err != nil {
			return err
		}
	}
	return nil
}

// Launched reports whether the harness starts the server itself.
func (t Target) Launched() bool { return t.Command != "" }

// Describe returns the command line or URL, for reports.
func (t Target) Describe() string {
	if t.Launched() {
		return t.Command
	}
	return t.WriteURL
}
