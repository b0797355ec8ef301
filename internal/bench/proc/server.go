package proc

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Server is a server process the harness started. Its methods are safe for
// concurrent use.
type Server struct {
	// Addr is the host:port it was told to listen on, Addr2 a second
	// free one for a companion process ({addr2}), DataDir its data
	// directory and Args the command it runs.
	Addr    string
	Addr2   string
	DataDir string
	Args    []string
	LogPath string

	cmd     *exec.Cmd
	log     *os.File
	exited  chan struct{}
	waitErr error // valid once exited is closed
}

// StartOptions say how to start a server.
type StartOptions struct {
	// Command is the command line with placeholders: {addr} (host:port),
	// {host}, {port}, {data} (DataDir), {addr2} (a second free host:port,
	// for a process launched beside the server, such as vmalert beside
	// VictoriaMetrics) and those of Vars.
	Command string
	// Vars are a workload's own placeholders, such as the path of a file
	// it wrote for the server.
	Vars map[string]string
	// DataDir is the server's data directory; it must exist.
	DataDir string
	// LogPath receives the server's stdout and stderr.
	LogPath string
	// Addr is the address to give it; empty picks a free port on
	// 127.0.0.1.
	Addr string
}

// Start starts the server. It does not wait for it to be ready.
func Start(opts StartOptions) (*Server, error) {
	args, err := SplitCommand(opts.Command)
	if err != nil {
		return nil, fmt.Errorf("server command: %w", err)
	}
	addr := opts.Addr
	if addr == "" {
		if addr, err = FreeAddr(); err != nil {
			return nil, err
		}
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("server address %q: %w", addr, err)
	}
	addr2, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	vars := map[string]string{"addr": addr, "host": host, "port": port, "data": opts.DataDir, "addr2": addr2}
	for k, v := range opts.Vars {
		vars[k] = v
	}
	args, err = Expand(args, vars)
	if err != nil {
		return nil, fmt.Errorf("server command: %w", err)
	}
	log, err := os.Create(opts.LogPath)
	if err != nil {
		return nil, fmt.Errorf("server log: %w", err)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s: %w", args[0], err)
	}
	s := &Server{Addr: addr, Addr2: addr2, DataDir: opts.DataDir, Args: args, LogPath: opts.LogPath, cmd: cmd, log: log, exited: make(chan struct{})}
	go func() {
		s.waitErr = cmd.Wait()
		log.Close()
		close(s.exited)
	}()
	return s, nil
}

// Pid returns the server's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Exited is closed when the server process has exited.
func (s *Server) Exited() <-chan struct{} { return s.exited }

// ExitError returns how the process ended; call it after Exited is closed.
func (s *Server) ExitError() error { return s.waitErr }

// Kill sends SIGKILL to the server's process group, which holds what a
// script launched beside the server, and waits for the group to be gone.
func (s *Server) Kill() error {
	err := s.signalGroup(syscall.SIGKILL)
	<-s.exited
	// The rest of the group dies at once; its parent, init, reaps it.
	t := time.NewTimer(killReapTimeout)
	defer t.Stop()
	if !s.waitGroup(t.C) {
		return fmt.Errorf("processes of server %d still run %v after SIGKILL", s.Pid(), killReapTimeout)
	}
	return err
}

// killReapTimeout bounds the wait for killed processes to be reaped.
const killReapTimeout = 10 * time.Second

// waitGroup waits until no process of the server's group is left, or
// until timeout fires, and reports whether the group is gone.
func (s *Server) waitGroup(timeout <-chan time.Time) bool {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for s.groupAlive() {
		select {
		case <-tick.C:
		case <-timeout:
			return false
		}
	}
	return true
}

// Stop sends SIGTERM to the server's process group, which makes every
// server this harness targets flush what it buffers and exit, and waits
// up to timeout for the group to be gone before killing what is left. It
// returns an error if the server had to be killed or exited with an error.
func (s *Server) Stop(timeout time.Duration) error {
	select {
	case <-s.exited:
		s.Kill() // nothing of a dead server runs on
		return s.exitErr()
	default:
	}
	if err := s.signalGroup(syscall.SIGTERM); err != nil {
		return fmt.Errorf("stop server %d: %w", s.Pid(), err)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-s.exited:
	case <-t.C:
		s.Kill()
		return fmt.Errorf("server %d did not exit within %v of SIGTERM and was killed", s.Pid(), timeout)
	}
	// The rest of the group (a store beside a rule evaluator) may still
	// be flushing.
	if !s.waitGroup(t.C) {
		s.Kill()
		return fmt.Errorf("processes of server %d did not exit within %v of SIGTERM and were killed", s.Pid(), timeout)
	}
	return s.exitErr()
}

// signalGroup sends sig to the server's process group; a group that is
// gone already is no error.
func (s *Server) signalGroup(sig syscall.Signal) error {
	if err := syscall.Kill(-s.Pid(), sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal server %d: %w", s.Pid(), err)
	}
	return nil
}

// groupAlive reports whether a process of the server's group still runs
// or has not been reaped.
func (s *Server) groupAlive() bool {
	return !errors.Is(syscall.Kill(-s.Pid(), 0), syscall.ESRCH)
}

// exitErr reports an unclean exit; a server stopped by our SIGTERM that
// exits from the signal rather than handling it counts as clean.
func (s *Server) exitErr() error {
	var ee *exec.ExitError
	if errors.As(s.waitErr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM {
			return nil
		}
		return fmt.Errorf("server exited: %v; log %s:\n%s", s.waitErr, s.LogPath, s.LogTail(logTailLines))
	}
	return s.waitErr
}

// logTailLines is how much of a failed server's log an error quotes:
// enough for a startup error and the lines leading to it.
const logTailLines = 20

// LogTail returns the last n lines of the server's log.
func (s *Server) LogTail(n int) string {
	b, err := os.ReadFile(s.LogPath)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	b = bytes.TrimRight(b, "\n")
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' {
			n--
			if n == 0 {
				return string(b[i+1:])
			}
		}
	}
	return string(b)
}

// Name returns a short name for the command: the base name of the program.
func Name(command string) string {
	args, err := SplitCommand(command)
	if err != nil {
		return "server"
	}
	return filepath.Base(args[0])
}

// FreeAddr returns a 127.0.0.1 address with a port that was free a moment
// ago. Another process may take it before the server binds it; the window
// is short and the server then fails to start with a clear error.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return "127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), nil
}

// Died describes how the server ended, with the tail of its log; call it
// after Exited is closed.
func (s *Server) Died() error {
	return fmt.Errorf("server %s exited (%v); last lines of %s:\n%s", filepath.Base(s.Args[0]), s.waitErr, s.LogPath, s.LogTail(logTailLines))
}
