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
	p, err := proc.Start(proc.StartOptions{Command: t.Command, DataDir: dataDir, LogPath: logPath, Vars: env.Vars})
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

// cpu returns the CPU time the process and its descendants have used so
// far.
func (s *server) cpu() (time.Duration, error) {
	c, err := proc.ReadTreeCPU(s.pid)
	return c.Total(), err
}

// Settling: after a load a server compacts, merges or flushes in the
// background, for seconds to minutes, and a query timed meanwhile
// measures that work too, more of it the faster the server answers.
const (
	// settleEvery is how often the server's CPU time is read.
	settleEvery = time.Second
	// settleShare is the share of one core below which the server is
	// idle: what an idle Go server with a scraped self-monitor uses is
	// well under it.
	settleShare = 0.05
	// settleTimeout bounds the wait: a server that never idles is
	// measured busy, and the report says so.
	settleTimeout = 5 * time.Minute
)

// settle waits until the process has used less than settleShare of a
// core over two settleEvery intervals in a row, and returns how long
// that took and whether it did within settleTimeout. It returns at once
// if the process cannot be measured.
func (s *server) settle(ctx context.Context) (time.Duration, bool, error) {
	if !s.measured() {
		return 0, true, nil
	}
	start := time.Now()
	prev, err := s.cpu()
	if err != nil {
		return 0, false, err
	}
	quiet := 0
	t := time.NewTicker(settleEvery)
	defer t.Stop()
	for quiet < 2 {
		if time.Since(start) >= settleTimeout {
			return time.Since(start), false, nil
		}
		select {
		case <-ctx.Done():
			return 0, false, ctx.Err()
		case <-s.gone():
			return 0, false, s.alive()
		case <-t.C:
		}
		cur, err := s.cpu()
		if err != nil {
			return 0, false, err
		}
		if float64(cur-prev) < settleShare*float64(settleEvery) {
			quiet++
		} else {
			quiet = 0
		}
		prev = cur
	}
	return time.Since(start), true, nil
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
