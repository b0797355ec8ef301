package run

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/strata-db/strata/internal/bench/client"
	"github.com/strata-db/strata/internal/bench/proc"
	"github.com/strata-db/strata/internal/bench/workload"
)

// server is a server a workload talks to: launched by the harness or
// already running. Its fields do not change after it is made.
type server struct {
	name      string
	writeURL  string
	queryBase string
	readyURL  string
	http      *http.Client

	proc    *proc.Server // nil when not launched
	pid     int          // 0 when not known
	sampler *proc.Sampler
	dataDir string

	// started is when the process was started and readyAfter how long it
	// took until its ready check first answered 200; readyCPU and
	// readyPeak are its CPU time and peak RSS at that moment, read as
	// soon as the check passed.
	started    time.Time
	readyAfter time.Duration
	readyCPU   time.Duration
	readyPeak  int64
}

// conns is how many keep-alive connections a server's HTTP client keeps:
// workload.MaxSenders, so that no sender's connection is ever closed and
// reopened in a timed window. Connections are only opened when used.
const conns = workload.MaxSenders

// launch starts t's command with dataDir and waits until it is ready.
func launch(ctx context.Context, env *Env, t Target, dataDir, logPath string) (*server, error) {
	started := time.Now()
	p, err := proc.Start(proc.StartOptions{Command: t.Command, DataDir: dataDir, LogPath: logPath})
	if err != nil {
		return nil, err
	}
	env.logf("started %s (pid %d) on %s, data in %s", t.Name, p.Pid(), p.Addr, dataDir)
	base := "http://" + p.Addr
	s := &server{
		name:      t.Name,
		writeURL:  base + t.WritePath,
		queryBase: base,
		readyURL:  base + t.ReadyPath,
		http:      client.NewHTTPClient(conns),
		proc:      p,
		pid:       p.Pid(),
		sampler:   proc.StartSampler(p.Pid()),
		dataDir:   dataDir,
		started:   started,
	}
	if err := s.waitReady(ctx, env.ReadyTimeout); err != nil {
		s.kill()
		return nil, err
	}
	s.readyAfter = time.Since(started)
	if s.readyCPU, err = s.cpu(); err != nil {
		s.kill()
		return nil, fmt.Errorf("read server CPU: %w", err)
	}
	s.readyPeak, _ = s.peakRSS()
	return s, nil
}

// connect checks that t's running server is ready.
func connect(ctx context.Context, env *Env, t Target) (*server, error) {
	u, err := client.CheckLocal(t.WriteURL)
	if err != nil {
		return nil, err
	}
	base := t.QueryURL
	if base == "" {
		base = client.BaseURL(u)
	}
	if _, err := client.CheckLocal(base); err != nil {
		return nil, err
	}
	base = strings.TrimSuffix(base, "/")
	s := &server{
		name:      t.Name,
		writeURL:  t.WriteURL,
		queryBase: base,
		readyURL:  base + t.ReadyPath,
		http:      client.NewHTTPClient(conns),
		pid:       t.Pid,
	}
	if t.Pid != 0 {
		if _, err := proc.ReadCPU(t.Pid); err != nil {
			return nil, fmt.Errorf("--pid %d: %w", t.Pid, err)
		}
		s.sampler = proc.StartSampler(t.Pid)
	}
	if err := s.waitReady(ctx, env.ReadyTimeout); err != nil {
		return nil, err
	}
	return s, nil
}

// open launches t in a fresh data directory or connects to it.
func open(ctx context.Context, env *Env, t Target) (*server, error) {
	if !t.Launched() {
		return connect(ctx, env, t)
	}
	dir, log, err := env.newDataDir(t.Name)
	if err != nil {
		return nil, err
	}
	s, err := launch(ctx, env, t, dir, log)
	if err != nil {
		env.removeRun(dir)
		return nil, err
	}
	return s, nil
}

// waitReady polls the ready URL until it answers 200.
func (s *server) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := client.Poll(ctx, s.gone(), client.Ready(s.http, s.readyURL))
	switch {
	case err == nil:
		return nil
	case errors.Is(err, client.ErrGone):
		return s.proc.Died()
	}
	return fmt.Errorf("%s not ready at %s: %w", s.name, s.readyURL, err)
}

// gone is closed when a launched server exits; nil otherwise.
func (s *server) gone() <-chan struct{} {
	if s.proc == nil {
		return nil
	}
	return s.proc.Exited()
}

// alive returns an error describing the server's death, if it died.
func (s *server) alive() error {
	if s.proc == nil {
		return nil
	}
	select {
	case <-s.proc.Exited():
		return s.proc.Died()
	default:
		return nil
	}
}

// measured reports whether the server's process can be measured.
func (s *server) measured() bool { return s.pid != 0 }

// cpu returns the CPU time the process has used so far.
func (s *server) cpu() (time.Duration, error) {
	c, err := proc.ReadCPU(s.pid)
	return c.Total(), err
}

// peakRSS returns the process' peak resident memory in bytes.
func (s *server) peakRSS() (int64, error) {
	return s.sampler.Peak()
}

// meanRSS returns the process' RSS averaged from from to to, in bytes.
func (s *server) meanRSS(from, to time.Time) (int64, bool) {
	return s.sampler.MeanRSS(from, to)
}

// stop stops a launched server with SIGTERM and waits for it; for a
// running one it only stops measuring.
func (s *server) stop(env *Env) error {
	if s.sampler != nil {
		defer s.sampler.Stop()
	}
	if s.proc == nil {
		return nil
	}
	return s.proc.Stop(env.StopTimeout)
}

// kill kills a launched server with SIGKILL.
func (s *server) kill() error {
	if s.sampler != nil {
		defer s.sampler.Stop()
	}
	if s.proc == nil {
		return nil
	}
	return s.proc.Kill()
}
