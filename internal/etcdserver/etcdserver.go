// Package etcdserver starts and controls real etcd members on loopback, a single member or
// a cluster, for tests and for the harness's local backend.
//
// It runs Debian's etcd (package etcd-server, 3.4.x) or any etcd on PATH. Each member has
// its own data directory, so a member killed or stopped and started again rejoins with its
// log, as a restarted server does in production.
package etcdserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fenceline/fenceline/internal/freeport"
)

// ErrNotInstalled is returned when no etcd binary can be found.
var ErrNotInstalled = errors.New("etcdserver: etcd not found in PATH (install it: apt-get install -y etcd-server)")

// Options configure a cluster.
type Options struct {
	// Dir holds one directory per member (its data and its log). Required.
	Dir string
	// Members is the number of members; 0 is 1.
	Members int
	// Binary is the etcd to run. Default: "etcd" from PATH.
	Binary string
	// Args are more etcd arguments for every member, after the harness's own.
	Args []string
}

// Cluster is a set of etcd members that were started together.
type Cluster struct {
	members []*Member
}

// Member is one etcd process (running or stopped). Its methods are safe for concurrent use.
type Member struct {
	name       string
	dir        string
	binary     string
	clientPort int
	peerPort   int
	args       []string // every argument but the ones that depend on the first start

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{} // closed when cmd exits
	started bool          // the member has run once: its data directory holds the cluster
}

// Start starts opts.Members members as one cluster and waits until each reports healthy
// (a cluster is healthy once it has a leader).
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.Dir == "" {
		return nil, errors.New("etcdserver: Options.Dir is required")
	}
	n := opts.Members
	if n == 0 {
		n = 1
	}
	if n < 0 {
		return nil, fmt.Errorf("etcdserver: %d members", n)
	}
	bin := opts.Binary
	if bin == "" {
		bin = "etcd"
	}
	if _, err := exec.LookPath(bin); err != nil {
		return nil, ErrNotInstalled
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("etcdserver: %w", err)
	}
	c := &Cluster{}
	var initial []string
	for i := range n {
		m := &Member{name: "e" + strconv.Itoa(i+1), binary: bin}
		m.dir = filepath.Join(dir, m.name)
		if err := os.MkdirAll(m.dir, 0o755); err != nil {
			return nil, fmt.Errorf("etcdserver: %w", err)
		}
		if m.clientPort, err = freeport.Get(); err != nil {
			return nil, err
		}
		if m.peerPort, err = freeport.Get(); err != nil {
			return nil, err
		}
		initial = append(initial, m.name+"="+m.PeerURL())
		c.members = append(c.members, m)
	}
	for _, m := range c.members {
		m.args = append([]string{
			"--name", m.name,
			"--data-dir", filepath.Join(m.dir, "data"),
			"--listen-client-urls", m.ClientURL(),
			"--advertise-client-urls", m.ClientURL(),
			"--listen-peer-urls", m.PeerURL(),
			"--initial-advertise-peer-urls", m.PeerURL(),
			"--initial-cluster", strings.Join(initial, ","),
			"--initial-cluster-token", "fenceline",
			"--logger", "zap",
			"--log-outputs", filepath.Join(m.dir, "etcd.log"),
		}, opts.Args...)
		if err := m.spawn(); err != nil {
			c.Kill()
			return nil, err
		}
	}
	// Each member waits for the others to elect a leader: start them all, then wait.
	for _, m := range c.members {
		if err := m.waitHealthy(ctx); err != nil {
			c.Kill()
			return nil, err
		}
	}
	return c, nil
}

// Members lists the members, in the order of their names (e1, e2, ...).
func (c *Cluster) Members() []*Member { return append([]*Member(nil), c.members...) }

// Endpoints lists the members' client addresses (host:port).
func (c *Cluster) Endpoints() []string {
	out := make([]string, len(c.members))
	for i, m := range c.members {
		out[i] = m.Addr()
	}
	return out
}

// Kill kills every member (SIGKILL) and waits for each.
func (c *Cluster) Kill() {
	for _, m := range c.members {
		m.Kill()
	}
}

// Name is the member's name (e1, e2, ...).
func (m *Member) Name() string { return m.name }

// Addr is host:port of the member's client URL.
func (m *Member) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(m.clientPort)) }

// ClientURL is the member's client URL.
func (m *Member) ClientURL() string { return "http://" + m.Addr() }

// PeerURL is the member's peer URL.
func (m *Member) PeerURL() string {
	return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(m.peerPort))
}

// Dir is the member's directory: its data directory and its log, etcd.log.
func (m *Member) Dir() string { return m.dir }

// PID is the process id of the running member, or 0.
func (m *Member) PID() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil || m.cmd.Process == nil {
		return 0
	}
	return m.cmd.Process.Pid
}

// spawn starts the process without waiting for it to serve.
func (m *Member) spawn() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil {
		return fmt.Errorf("etcdserver: %s already running", m.name)
	}
	state := "new"
	if m.started {
		state = "existing" // ignored by etcd once the data directory has a log; said for clarity
	}
	cmd := exec.Command(m.binary, append(m.args, "--initial-cluster-state", state)...)
	// Own process group: a Ctrl-C aimed at the harness must not kill etcd before the
	// harness has read the final state; and etcd dies with its starter.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("etcdserver: start %s: %w", m.name, err)
	}
	m.started = true
	done := make(chan struct{})
	m.cmd, m.done = cmd, done
	go func() {
		_ = cmd.Wait()
		m.mu.Lock()
		if m.cmd == cmd {
			m.cmd = nil
		}
		m.mu.Unlock()
		close(done)
	}()
	return nil
}

// Restart starts the member again after Kill or Stop, with the data it had, and waits
// until it is healthy (which needs a quorum of the cluster up). It is an error to call it
// while the member runs.
func (m *Member) Restart(ctx context.Context) error {
	if err := m.spawn(); err != nil {
		return err
	}
	return m.waitHealthy(ctx)
}

// waitHealthy waits until GET /health answers {"health":"true"}, for at most 20 s.
func (m *Member) waitHealthy(ctx context.Context) error {
	m.mu.Lock()
	done := m.done
	m.mu.Unlock()
	deadline := time.Now().Add(20 * time.Second)
	var last error
	for {
		if last = Health(ctx, m.Addr()); last == nil {
			return nil
		}
		select {
		case <-done:
			log, _ := os.ReadFile(filepath.Join(m.dir, "etcd.log"))
			return fmt.Errorf("etcdserver: %s exited at start:%s", m.name, tail(log, 800))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("etcdserver: %s not healthy within 20s: %v", m.name, last)
		}
	}
}

// Kill sends SIGKILL and waits for the process to exit. A stopped member is left alone.
func (m *Member) Kill() { m.signal(syscall.SIGKILL) }

// Stop sends SIGTERM and waits for the process to exit.
func (m *Member) Stop() { m.signal(syscall.SIGTERM) }

func (m *Member) signal(sig syscall.Signal) {
	m.mu.Lock()
	cmd, done := m.cmd, m.done
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	if sig != syscall.SIGKILL {
		_ = cmd.Process.Signal(syscall.SIGCONT) // a paused member cannot act on SIGTERM
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
func (m *Member) Pause() error  { return m.sendOnly(syscall.SIGSTOP) }
func (m *Member) Resume() error { return m.sendOnly(syscall.SIGCONT) }

func (m *Member) sendOnly(sig syscall.Signal) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return fmt.Errorf("etcdserver: %s not running", m.name)
	}
	return m.cmd.Process.Signal(sig)
}

// Running reports whether the member's process is up (paused counts as up).
func (m *Member) Running() bool { return m.PID() != 0 }

// Health asks the member at addr (host:port) for GET /health, with no client library in
// between, and returns nil if it reports itself healthy: it is serving and its cluster has
// a leader.
func Health(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"health":"true"`)) {
		return fmt.Errorf("etcdserver: %s unhealthy: %s %s", addr, resp.Status, bytes.TrimSpace(body))
	}
	return nil
}

// New starts a cluster of n members for a test in a temporary directory and kills it when
// the test ends. It fails the test if etcd is not installed: integration tests are not
// skipped silently.
func New(tb testing.TB, n int) *Cluster {
	tb.Helper()
	c, err := Start(context.Background(), Options{Dir: tb.TempDir(), Members: n})
	if err != nil {
		tb.Fatalf("start etcd: %v", err)
	}
	tb.Cleanup(c.Kill)
	return c
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
