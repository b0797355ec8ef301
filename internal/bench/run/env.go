package run

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Env is what every workload runs in.
type Env struct {
	// WorkDir holds each launched server's data directory and log.
	WorkDir string
	// Keep keeps data directories after a run instead of removing them.
	Keep bool
	// Progress receives one line per step, for the person waiting; nil
	// discards.
	Progress io.Writer
	// ReadyTimeout bounds the wait for a server to become ready (and a
	// replay to finish); StopTimeout the wait for it to exit on SIGTERM.
	ReadyTimeout time.Duration
	StopTimeout  time.Duration
	// Vars are placeholders a workload adds to the server command, such
	// as the files it wrote in Prepare.
	Vars map[string]string

	runs int // numbers data directories
	// cleanups undo what a workload's Prepare started (a target server),
	// once every run is over.
	cleanups []func()
}

// cleanup runs the cleanups, last first.
func (e *Env) cleanup() {
	for i := len(e.cleanups) - 1; i >= 0; i-- {
		e.cleanups[i]()
	}
	e.cleanups = nil
}

// DefaultEnv returns an environment working in dir.
func DefaultEnv(dir string) *Env {
	return &Env{
		WorkDir: dir,
		// Replaying a large log can take minutes on two cores; anything
		// slower is a failure to report, not to wait for.
		ReadyTimeout: 10 * time.Minute,
		// Prometheus and VictoriaMetrics flush and close their stores on
		// SIGTERM; that takes seconds, rarely more.
		StopTimeout: 2 * time.Minute,
	}
}

func (e *Env) logf(format string, args ...any) {
	if e.Progress != nil {
		fmt.Fprintf(e.Progress, "strata-bench: "+format+"\n", args...)
	}
}

// newDataDir creates a fresh data directory for a run of the named server
// and returns it with the path for its log.
func (e *Env) newDataDir(name string) (dir, log string, err error) {
	e.runs++
	base := filepath.Join(e.WorkDir, sanitize(name)+"-"+strconv.Itoa(e.runs))
	dir = filepath.Join(base, "data")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", fmt.Errorf("create data directory: %w", err)
	}
	// The log sits beside the data directory, not in it, so it does not
	// count towards the disk figures.
	return dir, filepath.Join(base, "server.log"), nil
}

// removeRun deletes a run's data directory unless Keep is set.
func (e *Env) removeRun(dataDir string) {
	if e.Keep || dataDir == "" {
		return
	}
	os.RemoveAll(filepath.Dir(dataDir))
}

func sanitize(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '_'
		}
	}
	return string(b)
}
