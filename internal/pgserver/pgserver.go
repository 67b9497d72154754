// Package pgserver runs a PostgreSQL server of its own, from the Debian `postgresql`
// package's binaries, for tests and for the chaos harness: initdb into a directory, a
// free loopback port, trust authentication for the superuser "postgres", no Unix socket.
//
// initdb and postgres refuse to run as root. Run as root, the package starts them as the
// "postgres" user (the package creates it) and gives it the data directory. The server
// is a direct child of this process, so Kill, Stop, Pause and Resume act on it, and it
// gets SIGQUIT (an immediate shutdown, which takes its backends along) if this process
// dies first.
package pgserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fenceline/fenceline/internal/freeport"
	"github.com/fenceline/fenceline/internal/testbin"
	"github.com/jackc/pgx/v5"
)

// ErrNotInstalled is returned when no PostgreSQL server binaries can be found.
var ErrNotInstalled = errors.New("pgserver: PostgreSQL server binaries not found (install them: apt-get install -y postgresql)")

// BinDir returns the directory of initdb and postgres: `pg_config --bindir` if that has
// them, else the newest /usr/lib/postgresql/*/bin.
func BinDir() (string, error) {
	has := func(dir string) bool {
		_, err := os.Stat(filepath.Join(dir, "postgres"))
		_, err2 := os.Stat(filepath.Join(dir, "initdb"))
		return err == nil && err2 == nil
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		if dir := string(trimNL(out)); has(dir) {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(dirs) - 1; i >= 0; i-- {
		if has(dirs[i]) {
			return dirs[i], nil
		}
	}
	return "", ErrNotInstalled
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// Options configure a server.
type Options struct {
	// Dir is where the data directory ("data") and the log ("postgres.log") go. It is
	// created if missing. Required. Run as root, if the postgres user cannot reach Dir
	// (a parent directory closed to others, as a test's temporary directory is), the
	// data directory goes to a fresh directory of its own instead (see DataDir).
	Dir string
	// Port to listen on (127.0.0.1); 0 picks a free port.
	Port int
}

// Server is a PostgreSQL server process. Its methods are safe for concurrent use.
type Server struct {
	bin, data, log string
	port           int
	cred           *syscall.Credential // nil: run as ourselves

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd exits
}

// Start runs initdb (unless the data directory exists) and starts the server, and waits
// until it accepts connections.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.Dir == "" {
		return nil, errors.New("pgserver: Options.Dir is required")
	}
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, data: filepath.Join(dir, "data"), log: filepath.Join(dir, "postgres.log"), port: opts.Port}
	if os.Geteuid() == 0 {
		if s.cred, err = postgresUser(); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if s.cred != nil && !reachable(dir, s.cred) {
		own, err := os.MkdirTemp("", "fenceline-postgres-")
		if err != nil {
			return nil, err
		}
		s.data = filepath.Join(own, "data")
		dir = own
	}
	if err := s.own(dir); err != nil {
		return nil, err
	}
	if _, err := os.Stat(s.data); errors.Is(err, os.ErrNotExist) {
		if err := initdb(ctx, bin, s.data, s.cred); err != nil {
			return nil, err
		}
	}
	err = freeport.Start(opts.Port, func(port int) error {
		s.port = port
		return s.start(ctx)
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

func initdb(ctx context.Context, bin, data string, cred *syscall.Credential, extra ...string) error {
	args := append([]string{"-D", data, "-U", "postgres",
		"--auth=trust", "--encoding=UTF8", "--locale=C", "--no-instructions"}, extra...)
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	cmd.Env = append(os.Environ(), "TZ=UTC")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgserver: initdb: %w: %s", err, tail(out, 600))
	}
	return nil
}

// InitDB makes a new database cluster in data with the settings Start uses (superuser
// postgres, trust authentication, UTF8, locale C, time zone UTC), for a server that runs
// elsewhere: the docker backend's image. data must not exist; its parent must, and run
// as root (initdb refuses root: it runs as the postgres user) the parent is given to
// that user, who must be able to reach it. extra are more initdb arguments. It blocks
// until initdb is done.
func InitDB(ctx context.Context, data string, extra ...string) error {
	bin, err := BinDir()
	if err != nil {
		return err
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		if cred, err = postgresUser(); err != nil {
			return err
		}
		if err := os.Chown(filepath.Dir(data), int(cred.Uid), int(cred.Gid)); err != nil {
			return fmt.Errorf("pgserver: give %s to the postgres user: %w", filepath.Dir(data), err)
		}
	}
	return initdb(ctx, bin, data, cred, extra...)
}

// postgresUser returns the credentials of the "postgres" user.
func postgresUser() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgserver: running as root, and PostgreSQL refuses root: %w (the postgresql package creates that user)", err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// own gives dir to the server's user, if that is not us.
func (s *Server) own(dir string) error {
	if s.cred == nil {
		return nil
	}
	if err := os.Chown(dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
		return fmt.Errorf("pgserver: give %s to the postgres user: %w", dir, err)
	}
	return nil
}

func (s *Server) start(ctx context.Context) error {
	logf, err := os.OpenFile(s.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(filepath.Join(s.bin, "postgres"), "-D", s.data, "-p", strconv.Itoa(s.port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
		"-c", "max_connections=100", "-c", "fsync=on", "-c", "synchronous_commit=on")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Pdeathsig: syscall.SIGQUIT, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgserver: start postgres: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()

	deadline := time.Now().Add(30 * time.Second)
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		err := Ping(pctx, s.URL())
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-done:
			b, _ := os.ReadFile(s.log)
			return fmt.Errorf("pgserver: postgres exited: %s", tail(b, 800))
		default:
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			s.Kill()
			return fmt.Errorf("pgserver: postgres did not accept connections in 30s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Ping connects to url and runs SELECT 1.
func Ping(ctx context.Context, url string) error {
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	var one int
	return c.QueryRow(ctx, "SELECT 1").Scan(&one)
}

// Addr is the server's "127.0.0.1:port".
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URL is a connection URL for the superuser's database "postgres" at Addr.
func (s *Server) URL() string { return URLFor(s.Addr()) }

// URLFor is the connection URL of a pgserver's database at addr (a proxy in front of
// it, say).
func URLFor(addr string) string { return "postgres://postgres@" + addr + "/postgres?sslmode=disable" }

// DataDir is the server's data directory.
func (s *Server) DataDir() string { return s.data }

// reachable reports whether the user of cred may enter every directory above dir.
func reachable(dir string, cred *syscall.Credential) bool {
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		var st syscall.Stat_t
		if err := syscall.Stat(d, &st); err != nil {
			return false
		}
		ok := st.Mode&0o001 != 0 || (st.Uid == cred.Uid && st.Mode&0o100 != 0) || (st.Gid == cred.Gid && st.Mode&0o010 != 0)
		if !ok {
			return false
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}

// Log is the server's log file.
func (s *Server) Log() string { return s.log }

// Restart starts the server again after Kill or Stop, on the same port and data: it
// recovers from its write-ahead log.
func (s *Server) Restart(ctx context.Context) error {
	s.mu.Lock()
	done := s.done
	s.mu.Unlock()
	if done != nil {
		select {
		case <-done:
		default:
			return errors.New("pgserver: restart of a running server")
		}
	}
	return s.start(ctx)
}

// Kill shuts the server down at once, as a crash would: SIGQUIT, an immediate shutdown
// without a checkpoint (a restart replays the write-ahead log), which also ends every
// backend. It waits until the server is gone (SIGKILL after 10s).
func (s *Server) Kill() { s.stop(syscall.SIGQUIT) }

// Stop shuts the server down cleanly (SIGINT, a fast shutdown) and waits until it is
// gone (SIGKILL after 10s).
func (s *Server) Stop() { s.stop(syscall.SIGINT) }

func (s *Server) stop(sig syscall.Signal) {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	select {
	case <-done:
		return
	default:
	}
	_ = syscall.Kill(cmd.Process.Pid, syscall.SIGCONT) // a paused server cannot shut down
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// Pause stops the server's processes (SIGSTOP): connections hang.
func (s *Server) Pause() error { return s.signalAll(syscall.SIGSTOP) }

// Resume continues a paused server.
func (s *Server) Resume() error { return s.signalAll(syscall.SIGCONT) }

// signalAll signals the postmaster and its children. Every child of a postmaster calls
// setsid(), so its process group is not theirs: they are found in /proc. The postmaster
// is signalled first when stopping (it forks no new backend meanwhile), last when
// continuing.
func (s *Server) signalAll(sig syscall.Signal) error {
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd == nil {
		return errors.New("pgserver: not started")
	}
	pid := cmd.Process.Pid
	if sig == syscall.SIGSTOP {
		if err := syscall.Kill(pid, sig); err != nil {
			return err
		}
	}
	for _, c := range children(pid) {
		_ = syscall.Kill(c, sig) // a backend may just have exited
	}
	if sig != syscall.SIGSTOP {
		return syscall.Kill(pid, sig)
	}
	return nil
}

// children returns the pids whose parent is pid.
func children(pid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []int
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(b[i+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(pid) {
			continue
		}
		if c, err := strconv.Atoi(filepath.Base(filepath.Dir(f))); err == nil {
			out = append(out, c)
		}
	}
	return out
}

// New starts a server for a test in a fresh directory and stops it, and removes the
// directory, when the test ends. It fails the test if PostgreSQL is not installed:
// integration tests are not skipped silently.
func New(tb testing.TB) *Server {
	tb.Helper()
	dir, err := os.MkdirTemp("", "pgserver-")
	if err != nil {
		tb.Fatal(err)
	}
	s, err := Start(context.Background(), Options{Dir: dir})
	if err != nil {
		os.RemoveAll(dir)
		tb.Fatalf("start postgres: %v", err)
	}
	tb.Cleanup(func() {
		s.Kill()
		os.RemoveAll(dir)
	})
	return s
}

// Main is the whole TestMain of a test binary whose tests share one server (examples
// take no testing.TB): it starts the server, sets *url to its URL, runs the tests,
// kills the server and exits (testbin.MainWith).
func Main(m *testing.M, url *string) {
	testbin.MainWith(m, func(dir string) (func(), error) {
		s, err := Start(context.Background(), Options{Dir: dir})
		if err != nil {
			return nil, err
		}
		*url = s.URL()
		return s.Kill, nil
	})
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
