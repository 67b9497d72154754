// Package redisserver starts and controls a real redis-server process on loopback, for
// tests and for the harness's local backend.
//
// The server runs with an append-only file unless Options.NoPersistence is set: the
// election's token counter must survive a restart, and without an AOF it does not.
package redisserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fenceline/fenceline/internal/freeport"
	"github.com/fenceline/fenceline/internal/testbin"
)

// ErrNotInstalled is returned when no redis-server binary can be found.
var ErrNotInstalled = errors.New("redisserver: redis-server not found in PATH (install it: apt-get install -y redis-server)")

// Options configure a server.
type Options struct {
	// Dir holds the append-only file and the log. Required.
	Dir string
	// Port to listen on; 0 picks a free port.
	Port int
	// NoPersistence runs without an append-only file (and without snapshots), so a
	// restart loses every key, the token counter included. Default false.
	NoPersistence bool
	// Binary is the redis-server to run. Default: "redis-server" from PATH.
	Binary string
	// Sentinel runs a Redis Sentinel (redis-server --sentinel) instead of a data node:
	// no persistence settings, and Args carry its sentinel directives.
	Sentinel bool
	// Config is the first content of the server's config file (redis.conf in Dir),
	// written when the file does not exist yet: a role (replicaof) or the sentinel
	// directives, which the server may rewrite later. Command-line settings override it,
	// so what may change at run time belongs here, not in Args.
	Config string
	// Args are more redis-server arguments, after the harness's own.
	Args []string
}

// Server is a running (or stopped) redis-server process. Its methods are safe for
// concurrent use.
type Server struct {
	opts Options
	addr string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd exits
}

// Start starts redis-server and waits until it answers PING.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.Dir == "" {
		return nil, errors.New("redisserver: Options.Dir is required")
	}
	if opts.Binary == "" {
		opts.Binary = "redis-server"
	}
	// redis-server changes into --dir before it opens --logfile: a relative path would
	// be resolved twice.
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("redisserver: %w", err)
	}
	opts.Dir = dir
	if _, err := exec.LookPath(opts.Binary); err != nil {
		return nil, ErrNotInstalled
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("redisserver: %w", err)
	}
	// O_EXCL: a restarted server of the same directory keeps what was rewritten into it.
	if f, err := os.OpenFile(filepath.Join(opts.Dir, "redis.conf"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); err == nil {
		_, werr := f.WriteString(opts.Config)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return nil, fmt.Errorf("redisserver: %w", werr)
		}
	} else if !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("redisserver: %w", err)
	}
	var s *Server
	err = freeport.Start(opts.Port, func(port int) error {
		o := opts
		o.Port = port
		s = &Server{opts: o, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
		return s.Restart(ctx)
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Addr is host:port of the server.
func (s *Server) Addr() string { return s.addr }

// Dir is the server's data directory.
func (s *Server) Dir() string { return s.opts.Dir }

// Persistent reports whether the server runs with an append-only file.
func (s *Server) Persistent() bool { return !s.opts.NoPersistence }

// PID is the process id of the running server, or 0.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// confFile is the server's own config file. The server always runs from one: Sentinel
// rewrites its file to persist what it learns, and a data node's file receives the
// REPLICAOF that Sentinel sends (CONFIG REWRITE), so a restart keeps its role.
func (s *Server) confFile() string { return filepath.Join(s.opts.Dir, "redis.conf") }

func (s *Server) args() []string {
	a := []string{s.confFile(),
		"--bind", "127.0.0.1",
		"--port", strconv.Itoa(s.opts.Port),
		"--dir", s.opts.Dir,
		"--logfile", filepath.Join(s.opts.Dir, "redis.log"),
		"--save", "",
		"--protected-mode", "no",
		"--daemonize", "no",
	}
	switch {
	case s.opts.Sentinel:
		return append(append(a, "--sentinel"), s.opts.Args...)
	case s.opts.NoPersistence:
		return append(append(a, "--appendonly", "no"), s.opts.Args...)
	}
	// always, not everysec: with everysec, while a background fsync is slow (a loaded
	// disk), Redis postpones writing its AOF buffer for up to 2 s and still answers the
	// clients, so a kill -9 then loses acknowledged writes. Seen in a soak run: six
	// accepted commits gone after a redis-restart, the cursor back by 50 events.
	return append(append(a, "--appendonly", "yes", "--appendfsync", "always"), s.opts.Args...)
}

// Restart starts the server if it is not running (after Kill or Stop) and waits for it
// to answer. It is an error to call it while the server runs.
func (s *Server) Restart(ctx context.Context) error {
	s.mu.Lock()
	if s.cmd != nil {
		s.mu.Unlock()
		return errors.New("redisserver: already running")
	}
	cmd := exec.Command(s.opts.Binary, s.args()...)
	// Own process group: a Ctrl-C aimed at the harness must not kill Redis before the
	// harness has read the final state.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		s.mu.Unlock()
		return fmt.Errorf("redisserver: start: %w", err)
	}
	done := make(chan struct{})
	s.cmd, s.done = cmd, done
	go func() {
		_ = cmd.Wait()
		// Forget the process before saying it is gone: whoever waited on done (Kill)
		// may Restart at once.
		s.mu.Lock()
		if s.cmd == cmd {
			s.cmd = nil
		}
		s.mu.Unlock()
		close(done)
	}()
	s.mu.Unlock()

	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := Ping(ctx, s.addr); err == nil {
			return nil
		}
		select {
		case <-done:
			log, _ := os.ReadFile(filepath.Join(s.opts.Dir, "redis.log"))
			return fmt.Errorf("redisserver: redis-server exited at start: %s%s", stderr.String(), tail(log, 800))
		case <-ctx.Done():
			s.Kill()
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Kill()
			return fmt.Errorf("redisserver: %s did not answer PING within 10s", s.addr)
		}
	}
}

// Kill sends SIGKILL and waits for the process to exit. Acknowledged writes survive only
// with persistence on.
func (s *Server) Kill() { s.signal(syscall.SIGKILL) }

// Stop sends SIGTERM (Redis flushes its append-only file) and waits for exit.
func (s *Server) Stop() { s.signal(syscall.SIGTERM) }

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// Pause stops the process with SIGSTOP; Resume continues it.
func (s *Server) Pause() error  { return s.sendOnly(syscall.SIGSTOP) }
func (s *Server) Resume() error { return s.sendOnly(syscall.SIGCONT) }

func (s *Server) sendOnly(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return errors.New("redisserver: not running")
	}
	return s.cmd.Process.Signal(sig)
}

// Ping dials addr and sends a RESP PING, with no client library in between.
func Ping(ctx context.Context, addr string) error {
	d := net.Dialer{Timeout: time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return err
	}
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(buf[:n], []byte("+PONG")) {
		return fmt.Errorf("redisserver: unexpected reply %q", buf[:n])
	}
	return nil
}

// FreePort returns a free TCP port on 127.0.0.1 for a server that is yet to start (see
// package freeport for why not port 0).
func FreePort() (int, error) { return freeport.Get() }

// New starts a persistent redis-server for a test on a free port, in a temporary
// directory, and kills it when the test ends. It fails the test if redis-server is not
// installed: integration tests are not skipped silently.
func New(tb testing.TB) *Server {
	tb.Helper()
	return NewWith(tb, Options{})
}

// NewWith is New with options; Dir defaults to a temporary directory.
func NewWith(tb testing.TB, opts Options) *Server {
	tb.Helper()
	if opts.Dir == "" {
		opts.Dir = tb.TempDir()
	}
	s, err := Start(context.Background(), opts)
	if err != nil {
		tb.Fatalf("start redis: %v", err)
	}
	tb.Cleanup(s.Kill)
	return s
}

// Main is the whole TestMain of a test binary whose tests share one persistent server
// (examples take no testing.TB): it starts the server, sets *addr to its address, runs
// the tests, kills the server and exits (testbin.MainWith).
func Main(m *testing.M, addr *string) {
	testbin.MainWith(m, func(dir string) (func(), error) {
		s, err := Start(context.Background(), Options{Dir: dir})
		if err != nil {
			return nil, err
		}
		*addr = s.Addr()
		return s.Kill, nil
	})
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	if len(b) == 0 {
		return ""
	}
	return "\n" + string(b)
}
