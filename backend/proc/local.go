package proc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	toxiproxyserver "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/internal/etcdserver"
	"github.com/fenceline/fenceline/internal/pgserver"
	"github.com/fenceline/fenceline/internal/redisserver"
	"github.com/fenceline/fenceline/node"
)

// Config configures a local cluster.
type Config struct {
	backend.Spec
	// Binary is the fenceline executable run for nodes and the source. Required.
	Binary string
	// Logger receives the backend's own events. Default: discard.
	Logger *slog.Logger
}

// Backend is a cluster of processes on 127.0.0.1.
type Backend struct {
	cfg   Config
	log   *slog.Logger
	redis *redisserver.Server // the single topology's Redis
	// redlock are the Redlock servers (Spec.RedlockServers), without persistence.
	redlock []*redisserver.Server
	// replicas runs the sentinel or the cluster topology instead (redis is then nil);
	// ReplicaFaults forwards the Redis faults to it.
	replicas backend.LocalReplicas
	backend.ReplicaFaults
	pg *pgserver.Server // nil unless the nodes keep the cursor in PostgreSQL
	// etcd is nil unless Spec.EtcdMembers > 0; it may be only part-started (Start failed).
	etcd *etcdserver.Cluster

	toxi     *toxiproxyserver.ApiServer
	toxiHTTP *http.Server
	links    backend.Links

	source    *process
	sourceURL string

	mu    sync.Mutex
	nodes map[string]*localNode
	ids   []string

	closeOnce sync.Once
	closeErr  error
}

type localNode struct {
	id      string
	control string // host:port of the control endpoint
	redis   string // its redis proxy's listen address
	source  string // its source URL through its proxy
	// redisArgs are the node's arguments for a replicated topology: its Sentinels
	// or cluster seeds, and its proxies to the data nodes (see backend.SentinelSet.NodeArgs,
	// backend.ClusterSet.NodeArgs).
	redisArgs []string
	redlock   []string // its proxies to the Redlock servers, in server order
	postgres  string   // its PostgreSQL URL through its proxy ("" for a Redis store)
	etcd      []string // its proxies to the etcd members, in member order
	proc      *process
	paused    bool
}

var _ backend.Backend = (*Backend)(nil)

// Start starts Redis, toxiproxy, the source and every node, and waits until each
// node's control endpoint answers. On error everything already started is removed.
func Start(ctx context.Context, cfg Config) (_ *Backend, err error) {
	if cfg.Binary == "" {
		return nil, errors.New("cluster: Config.Binary is required")
	}
	if cfg.Spec, err = cfg.Spec.WithDefaults(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(cfg.Binary); err != nil {
		return nil, fmt.Errorf("cluster: fenceline binary: %w (run 'make build')", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	for _, d := range []string{history.HistoryDir, history.LogsDir, "redis", "addr"} {
		if err := os.MkdirAll(filepath.Join(cfg.Dir, d), 0o755); err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
	}
	l := &Backend{cfg: cfg, log: cfg.Logger, ReplicaFaults: backend.ReplicaFaults{Topology: cfg.Redis.Topology}, nodes: map[string]*localNode{}, ids: backend.NodeIDs(cfg.Nodes)}
	defer func() {
		if err != nil {
			_ = l.Close(context.Background())
		}
	}()

	if err := l.startToxiproxy(); err != nil {
		return nil, err
	}
	switch cfg.Redis.Topology {
	case backend.TopologySentinel:
		var s *backend.SentinelSet
		if s, err = backend.StartSentinelSet(ctx, filepath.Join(cfg.Dir, "redis"), &l.links, cfg.Redis); err == nil {
			l.replicas, l.Set = s, s
		}
	case backend.TopologyCluster:
		var s *backend.ClusterSet
		if s, err = backend.StartClusterSet(ctx, filepath.Join(cfg.Dir, "redis"), &l.links, cfg.Redis, cmp.Or(cfg.Node.Election, "fenceline")); err == nil {
			l.replicas, l.Set = s, s
		}
	default:
		l.redis, err = redisserver.Start(ctx, redisserver.Options{
			Dir:           filepath.Join(cfg.Dir, "redis"),
			NoPersistence: cfg.NoPersistence,
		})
	}
	if err != nil {
		return nil, err
	}
	for i := range cfg.RedlockServers {
		srv, err := redisserver.Start(ctx, redisserver.Options{
			Dir: filepath.Join(cfg.Dir, "redis", fmt.Sprintf("redlock%d", i+1)), NoPersistence: true,
		})
		if err != nil {
			return nil, err
		}
		l.redlock = append(l.redlock, srv)
	}
	if err := l.startSource(ctx); err != nil {
		return nil, err
	}
	for _, id := range l.ids {
		n := &localNode{id: id}
		var rp string
		switch {
		case l.replicas != nil:
			// The node never dials --redis: its Sentinels, or the cluster's slots, tell
			// it where the primary is.
			rp = "127.0.0.1:1"
			n.redisArgs, err = l.replicas.NodeArgs(ctx, id)
		default:
			rp, err = l.links.CreateProxy(ctx, backend.RedisProxyName(id), "127.0.0.1:0", l.redis.Addr())
		}
		if err != nil {
			return nil, err
		}
		sp, err := l.links.CreateProxy(ctx, backend.SourceProxyName(id), "127.0.0.1:0", l.source.addr)
		if err != nil {
			return nil, err
		}
		n.redis, n.source = rp, "http://"+sp
		for i, srv := range l.redlock {
			p, err := l.links.CreateProxy(ctx, backend.RedlockProxyName(id, i+1), "127.0.0.1:0", srv.Addr())
			if err != nil {
				return nil, err
			}
			n.redlock = append(n.redlock, p)
		}
		l.nodes[id] = n
	}
	if cfg.Node.Store == backend.StorePostgres {
		if err := l.startPostgres(ctx); err != nil {
			return nil, err
		}
	}
	if cfg.EtcdMembers > 0 {
		if err := l.startEtcd(ctx); err != nil {
			return nil, err
		}
	}
	for _, id := range l.ids {
		if err := l.StartNode(ctx, id); err != nil {
			return nil, err
		}
	}
	return l, nil
}

func (l *Backend) startToxiproxy() error {
	l.toxi = toxiproxyserver.NewServer(toxiproxyserver.NewMetricsContainer(nil), zerolog.Nop())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("cluster: toxiproxy: %w", err)
	}
	l.toxiHTTP = &http.Server{Handler: l.toxi.Routes(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = l.toxiHTTP.Serve(ln) }()
	l.links.SetAPI("http://" + ln.Addr().String())
	return nil
}

func (l *Backend) startSource(ctx context.Context) error {
	addrFile := filepath.Join(l.cfg.Dir, "addr", "source")
	args := []string{"source", "--listen", "127.0.0.1:0", "--addr-file", addrFile,
		"--rate", strconv.FormatFloat(l.cfg.SourceRate, 'f', -1, 64),
		"--backlog", strconv.FormatInt(l.cfg.SourceBacklog, 10)}
	p, err := startProcess(l.cfg.Binary, args, filepath.Join(l.cfg.Dir, history.LogsDir, "source.log"))
	if err != nil {
		return err
	}
	l.source = p
	if p.addr, err = waitAddrFile(ctx, p, addrFile); err != nil {
		return err
	}
	l.sourceURL = "http://" + p.addr
	return waitHTTP(ctx, p, l.sourceURL+"/health")
}

// Nodes implements backend.Backend.
func (l *Backend) Nodes() []string { return append([]string(nil), l.ids...) }

func (l *Backend) node(id string) (*localNode, error) {
	n, ok := l.nodes[id]
	if !ok {
		return nil, fmt.Errorf("%w: %q", backend.ErrUnknownNode, id)
	}
	return n, nil
}

// StartNode implements backend.Backend.
func (l *Backend) StartNode(ctx context.Context, id string) error {
	l.mu.Lock()
	n, err := l.node(id)
	if err != nil {
		l.mu.Unlock()
		return err
	}
	if n.proc != nil && !n.proc.exited() {
		l.mu.Unlock()
		return fmt.Errorf("%w: %s", backend.ErrRunning, id)
	}
	// The node binds a port of its own choosing and tells us which: a port picked here
	// and bound later could be taken in between by anyone else on the machine.
	addrFile := filepath.Join(l.cfg.Dir, "addr", id)
	_ = os.Remove(addrFile)
	histPath := filepath.Join(l.cfg.Dir, history.HistoryDir, id+".jsonl")
	logPath := filepath.Join(l.cfg.Dir, history.LogsDir, id+".log")
	bin, args, env := l.cfg.Binary, append(l.cfg.Node.Args(id, n.redis, n.source, "127.0.0.1:0", addrFile, histPath), n.redisArgs...), []string(nil)
	if n.postgres != "" {
		args = append(args, "--postgres", n.postgres)
	}
	if len(n.redlock) > 0 {
		args = append(args, "--redlock-servers", strings.Join(n.redlock, ","))
	}
	args = append(args, l.cfg.Node.EtcdArgs(n.etcd)...)
	if c := l.cfg.Node.Cmd; c != "" {
		// exec: the shell becomes the node, so that signals (stop, kill, pause) reach it.
		bin, args = "/bin/sh", []string{"-c", "exec " + c}
		env = append(os.Environ(), l.cfg.Node.Env(id, n.redis, n.source, "127.0.0.1:0", addrFile, histPath)...)
	}
	p, err := startProcessEnv(bin, args, env, logPath)
	if err != nil {
		l.mu.Unlock()
		return err
	}
	n.proc, n.paused = p, false
	l.mu.Unlock()
	l.log.Info("node-started", slog.String("node", id), slog.Int("pid", p.cmd.Process.Pid))
	control, err := waitAddrFile(ctx, p, addrFile)
	if err != nil {
		return nodeFailed(id, "write its control address to "+addrFile, err, logPath)
	}
	l.mu.Lock()
	n.control = control
	l.mu.Unlock()
	if err := waitHTTP(ctx, p, "http://"+control+"/health"); err != nil {
		return nodeFailed(id, "answer GET /health with 200 on "+control, err, logPath)
	}
	return nil
}

// nodeFailed says which node failed to do what at start, with the last lines of its log
// (its stderr), so that a node in any language can be debugged from the message alone.
func nodeFailed(id, what string, err error, logPath string) error {
	b, _ := os.ReadFile(logPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	tail := "  " + strings.Join(lines, "\n  ")
	if len(b) == 0 {
		tail = "  (it wrote nothing)"
	}
	return fmt.Errorf("node %s did not %s: %w; the last lines of its stderr (%s):\n%s", id, what, err, logPath, tail)
}

func (l *Backend) running(id string) (*localNode, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.node(id)
	if err != nil {
		return nil, err
	}
	if n.proc == nil || n.proc.exited() {
		return nil, fmt.Errorf("%w: %s", backend.ErrNotRunning, id)
	}
	return n, nil
}

// StopNode implements backend.Backend. A paused node is resumed first so it can release.
func (l *Backend) StopNode(ctx context.Context, id string) error {
	n, err := l.running(id)
	if err != nil {
		return err
	}
	_ = n.proc.signal(syscall.SIGTERM)
	_ = n.proc.signal(syscall.SIGCONT)
	l.setPaused(n, false)
	err = n.proc.wait(ctx, stopGrace)
	if errors.Is(err, errGraceOver) {
		return &backend.StopTimeoutError{Node: id, Grace: stopGrace}
	}
	return err
}

// KillNode implements backend.Backend.
func (l *Backend) KillNode(ctx context.Context, id string) error {
	n, err := l.running(id)
	if err != nil {
		return err
	}
	_ = n.proc.signal(syscall.SIGKILL)
	l.setPaused(n, false)
	return n.proc.wait(ctx, 10*time.Second)
}

// PauseNode implements backend.Backend.
func (l *Backend) PauseNode(ctx context.Context, id string) error {
	n, err := l.running(id)
	if err != nil {
		return err
	}
	if err := n.proc.signal(syscall.SIGSTOP); err != nil {
		return err
	}
	l.setPaused(n, true)
	return nil
}

// ResumeNode implements backend.Backend.
func (l *Backend) ResumeNode(ctx context.Context, id string) error {
	n, err := l.running(id)
	if err != nil {
		return err
	}
	if err := n.proc.signal(syscall.SIGCONT); err != nil {
		return err
	}
	l.setPaused(n, false)
	return nil
}

func (l *Backend) setPaused(n *localNode, p bool) {
	l.mu.Lock()
	n.paused = p
	l.mu.Unlock()
}

// Running implements backend.Backend.
func (l *Backend) Running(id string) bool {
	_, err := l.running(id)
	return err == nil
}

// NodeStatus implements backend.Backend.
func (l *Backend) NodeStatus(ctx context.Context, id string) (node.Status, error) {
	control, err := l.control(id)
	if err != nil {
		return node.Status{}, err
	}
	return backend.GetStatus(ctx, control)
}

// SetClock implements backend.Backend.
func (l *Backend) SetClock(ctx context.Context, id string, offset time.Duration, rate float64) error {
	control, err := l.control(id)
	if err != nil {
		return err
	}
	return backend.PostClock(ctx, control, offset, rate)
}

// ArmFailpoint implements backend.Backend.
func (l *Backend) ArmFailpoint(ctx context.Context, id, name, action string) error {
	control, err := l.control(id)
	if err != nil {
		return err
	}
	return backend.PutFailpoint(ctx, control, name, action)
}

// DisarmFailpoints implements backend.Backend.
func (l *Backend) DisarmFailpoints(ctx context.Context, id string) error {
	control, err := l.control(id)
	if err != nil {
		return err
	}
	return backend.DeleteFailpoints(ctx, control)
}

// FailpointHits reads the hit counts of a node's failpoints (see backend.FailpointHits).
func (l *Backend) FailpointHits(ctx context.Context, id string) (map[string]int64, error) {
	control, err := l.control(id)
	if err != nil {
		return nil, err
	}
	return backend.FailpointHits(ctx, control)
}

// control is the control endpoint of a running node.
func (l *Backend) control(id string) (string, error) {
	n, err := l.running(id)
	if err != nil {
		return "", err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return n.control, nil
}

// KillRedis implements backend.Backend. A replicated topology has no single Redis to kill.
func (l *Backend) KillRedis(ctx context.Context) error {
	if l.replicas != nil {
		return fmt.Errorf("%w: kill Redis (%s: use the replicated faults)", backend.ErrTopology, l.cfg.Redis.Topology)
	}
	l.redis.Kill()
	return nil
}

// StartRedis implements backend.Backend: it starts Redis if it is down. In the sentinel
// topology it starts every data node and Sentinel that is down (in the cluster
// topology, every data node) and waits until the
// topology settles (ErrUnsettled if it does not within SettleTimeout).
func (l *Backend) StartRedis(ctx context.Context) error {
	if l.replicas != nil {
		return l.replicas.StartRedis(ctx)
	}
	if l.redis.PID() != 0 {
		return nil
	}
	return l.redis.Restart(ctx)
}

// RedisAddr implements backend.Backend: in the cluster topology, the primary of the election's
// slot as last seen; in the sentinel topology, the primary the Sentinels
// last announced (see PrimaryAddr for one that is checked).
func (l *Backend) RedisAddr() string {
	if l.replicas != nil {
		return l.replicas.CurrentAddr()
	}
	return l.redis.Addr()
}

// PrimaryAddr returns the address of the primary, bypassing every proxy, once the
// topology has settled (a majority of Sentinels names it, it says it is the primary, and
// every other data node replicates it); an error wrapping ErrUnsettled if it does not
// within SettleTimeout. The final read reads from it.
func (l *Backend) PrimaryAddr(ctx context.Context) (string, error) {
	if l.replicas == nil {
		return l.redis.Addr(), nil
	}
	return l.replicas.PrimaryAddr(ctx)
}

// redisProxies are node id's proxies to Redis: one, or (sentinel, cluster) one to each data
// node and Sentinel, so that a partition cuts the node off from all of them.
func (l *Backend) redisProxies(id string) ([]string, error) {
	if _, err := l.node(id); err != nil {
		return nil, err
	}
	if l.replicas != nil {
		return l.replicas.NodeProxies(id), nil
	}
	ps := []string{backend.RedisProxyName(id)}
	for i := range l.redlock {
		ps = append(ps, backend.RedlockProxyName(id, i+1))
	}
	return ps, nil
}

// RedlockServers implements nemesis.RedlockServers: how many there are.
func (l *Backend) RedlockServers() int { return len(l.redlock) }

// RestartRedlockServer implements nemesis.RedlockServers: it kills Redlock server i
// (1-based) and starts it again at once, on the same address, empty.
func (l *Backend) RestartRedlockServer(ctx context.Context, i int) error {
	if i < 1 || i > len(l.redlock) {
		return fmt.Errorf("%w: Redlock server %d of %d", backend.ErrTopology, i, len(l.redlock))
	}
	srv := l.redlock[i-1]
	srv.Kill()
	return srv.Restart(ctx)
}

// AddRedlockToxic implements nemesis.RedlockServers: t on node id's link to Redlock
// server i alone.
func (l *Backend) AddRedlockToxic(ctx context.Context, id string, i int, t backend.Toxic) error {
	if _, err := l.node(id); err != nil {
		return err
	}
	return l.links.AddToxic(ctx, backend.RedlockProxyName(id, i), t)
}

// AddSourceToxic implements nemesis.SourceLinks.
func (l *Backend) AddSourceToxic(ctx context.Context, id string, t backend.Toxic) error {
	if _, err := l.node(id); err != nil {
		return err
	}
	return l.links.AddToxic(ctx, backend.SourceProxyName(id), t)
}

// RemoveSourceToxics implements nemesis.SourceLinks.
func (l *Backend) RemoveSourceToxics(ctx context.Context, id string, names ...string) error {
	if _, err := l.node(id); err != nil {
		return err
	}
	return l.links.RemoveToxics(ctx, backend.SourceProxyName(id), names...)
}

// RemoveRedlockToxics implements nemesis.RedlockServers.
func (l *Backend) RemoveRedlockToxics(ctx context.Context, id string, i int, names ...string) error {
	if _, err := l.node(id); err != nil {
		return err
	}
	return l.links.RemoveToxics(ctx, backend.RedlockProxyName(id, i), names...)
}

// AddRedisToxic implements backend.Backend.
func (l *Backend) AddRedisToxic(ctx context.Context, id string, t backend.Toxic) error {
	ps, err := l.redisProxies(id)
	if err != nil {
		return err
	}
	for _, p := range ps {
		if err := l.links.AddToxic(ctx, p, t); err != nil {
			return err
		}
	}
	return nil
}

// RemoveRedisToxics implements backend.Backend.
func (l *Backend) RemoveRedisToxics(ctx context.Context, id string, names ...string) error {
	ps, err := l.redisProxies(id)
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range ps {
		errs = append(errs, l.links.RemoveToxics(ctx, p, names...))
	}
	return errors.Join(errs...)
}

// ResetLinks implements backend.Backend.
func (l *Backend) ResetLinks(ctx context.Context) error {
	var err error
	if l.replicas != nil {
		err = l.replicas.ResetLinks(ctx)
	}
	return errors.Join(err, l.links.ResetLinks(ctx))
}

// ControlAddr is node id's control endpoint (host:port).
func (l *Backend) ControlAddr(id string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n, ok := l.nodes[id]; ok {
		return n.control
	}
	return ""
}

// Close implements backend.Backend: it kills every node and the source, stops toxiproxy (closing
// every proxy and its port), kills Redis, PostgreSQL and the etcd members.
func (l *Backend) Close(ctx context.Context) error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		var procs []*process
		for _, n := range l.nodes {
			if n.proc != nil {
				procs = append(procs, n.proc)
			}
		}
		l.mu.Unlock()
		if l.source != nil {
			procs = append(procs, l.source)
		}
		for _, p := range procs {
			_ = p.signal(syscall.SIGKILL)
		}
		var errs []error
		for _, p := range procs {
			if err := p.wait(ctx, 10*time.Second); err != nil {
				errs = append(errs, err)
			}
		}
		if l.toxi != nil {
			_ = l.toxi.Collection.Clear()
			_ = l.toxiHTTP.Close()
		}
		if l.redis != nil {
			l.redis.Kill()
		}
		for _, srv := range l.redlock {
			srv.Kill()
		}
		if l.replicas != nil {
			l.replicas.Close()
			// The promotions the run saw, for the topology table (Redis's own record
			// is spread over three Sentinel logs).
			if err := history.WriteJSON(filepath.Join(l.cfg.Dir, backend.PromotionsFile), l.Promotions()); err != nil {
				l.closeErr = err
			}
		}
		if err := l.closePostgres(); err != nil {
			errs = append(errs, err)
		}
		if err := l.closeEtcd(); err != nil {
			errs = append(errs, err)
		}
		l.closeErr = errors.Join(append(errs, l.closeErr)...)
	})
	return l.closeErr
}

// process is a child process whose exit is observed by one goroutine.
type process struct {
	cmd  *exec.Cmd
	addr string
	log  *os.File
	done chan struct{}
}

func startProcess(bin string, args []string, logPath string) (*process, error) {
	return startProcessEnv(bin, args, nil, logPath)
}

// startProcessEnv is startProcess with an environment (nil: the runner's).
func startProcessEnv(bin string, args, env []string, logPath string) (*process, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr, cmd.Env = f, f, env
	// Own process group, so a Ctrl-C meant for the runner reaches the runner only (it
	// heals and then stops the nodes); Pdeathsig so nothing outlives a crashed runner.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("cluster: start %s: %w", bin, err)
	}
	p := &process{cmd: cmd, log: f, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *process) signal(sig syscall.Signal) error {
	if p.exited() {
		return nil
	}
	return p.cmd.Process.Signal(sig)
}

// stopGrace is how long StopNode waits for a node to exit after its SIGTERM.
const stopGrace = 10 * time.Second

// errGraceOver is wait's error when the process outlived its grace.
var errGraceOver = errors.New("did not exit within its grace")

// wait waits for exit; after grace, or when ctx ends, it kills the process.
func (p *process) wait(ctx context.Context, grace time.Duration) error {
	t := time.NewTimer(grace)
	defer t.Stop()
	cause := fmt.Errorf("%w (%v)", errGraceOver, grace)
	select {
	case <-p.done:
		return nil
	case <-t.C:
	case <-ctx.Done():
		cause = ctx.Err()
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	return fmt.Errorf("cluster: pid %d: %w; killed", p.cmd.Process.Pid, cause)
}

// waitAddrFile waits until the process has written the address it listens on to path.
func waitAddrFile(ctx context.Context, p *process, path string) (string, error) {
	var addr string
	err := backend.WaitReady(ctx, "the address in "+path, 15*time.Second, p.done, func(context.Context) error {
		b, err := os.ReadFile(path)
		if err != nil || len(b) == 0 {
			return errors.New("no address yet")
		}
		addr = strings.TrimSpace(string(b))
		return nil
	})
	return addr, p.exitedErr(err)
}

// waitHTTP polls url until it answers 200, the process exits, or ctx ends.
func waitHTTP(ctx context.Context, p *process, url string) error {
	return p.exitedErr(backend.WaitReady(ctx, url, 15*time.Second, p.done, func(ctx context.Context) error { return backend.ProbeHTTP(ctx, url) }))
}

// exitedErr says which program exited at start, and where to look.
func (p *process) exitedErr(err error) error {
	if errors.Is(err, backend.ErrExited) {
		return fmt.Errorf("%w: %s (see its log)", backend.ErrExited, filepath.Base(p.cmd.Path))
	}
	return err
}

// Dir is the run directory the cluster writes to.
func (l *Backend) Dir() string { return l.cfg.Dir }
