package container

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	mobynet "github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tcnetwork "github.com/testcontainers/testcontainers-go/network"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/docker"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/node"
)

// Ports inside the containers. Proxies listen in the toxiproxy container on
// redisProxyBase+i (node i's link to Redis) and sourceProxyBase+i (to the source).
const (
	redisPort       = "6379/tcp"
	toxiAPIPort     = "8474/tcp"
	sourcePort      = "8000/tcp"
	controlPort     = "9100/tcp"
	redisProxyBase  = 10000
	sourceProxyBase = 11000
)

var loopback = netip.MustParseAddr("127.0.0.1")

// Backend is a fenceline cluster of containers on a private Docker network: Redis,
// toxiproxy, the event source and the nodes. It implements backend.Backend; its methods
// are safe for concurrent use.
type Backend struct {
	cfg     Config
	dir     string // absolute run directory
	log     *slog.Logger
	cli     *client.Client
	links   backend.Links
	network string

	// ctx lives until Close: log followers and exit watchers run under it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	redis, toxiproxy, source *box
	// postgres is the run's PostgreSQL when the nodes keep the cursor there; else nil.
	postgres *box
	// etcd are the run's etcd members (Spec.EtcdMembers), in member order; else none.
	etcd []*box
	// data and sentinels are the sentinel topology's containers, data and relay the
	// cluster topology's (redis is then nil); ReplicaFaults.Set is the topology's
	// watcher, toxiIP the toxiproxy container's address (sentinel.go, rediscluster.go).
	data, sentinels []*box
	relay           *box
	backend.ReplicaFaults
	toxiIP string
	nodes  map[string]*box
	ids    []string

	mu sync.Mutex // guards every box's addr, exited and paused

	closeOnce sync.Once
	closeErr  error
}

// box is one container of the run.
type box struct {
	role  string // "redis", "toxiproxy", "source" or a node id
	name  string // container name
	port  string // the container port published on 127.0.0.1
	probe func(ctx context.Context, addr string) error
	log   *logFile

	op sync.Mutex // serializes start, stop, kill, pause and resume of this container

	id     string        // set once created
	addr   string        // 127.0.0.1:<host port> of the current incarnation (Backend.mu)
	exited chan struct{} // closed when the current incarnation exits; nil before the first start (Backend.mu)
	paused bool          // (Backend.mu)
}

var _ backend.Backend = (*Backend)(nil)

// Start starts a cluster from the locally built images (see docker.BuildImages): it creates a
// network for the run, starts Redis, toxiproxy and the event source, creates each node's
// two proxies through the toxiproxy API, starts the nodes and waits until every
// container answers. Node i reaches Redis and the source only through its proxies, by
// the network alias toxiproxy. On error, everything already created is removed; the
// images are kept.
func Start(ctx context.Context, cfg Config) (_ *Backend, err error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	if cfg.RedlockServers > 0 {
		return nil, errors.New("docker: Redlock servers (the zoo's redlock-majority) run on the local backend only")
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("docker: %w", err)
	}
	for _, d := range []string{history.HistoryDir, history.LogsDir} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, fmt.Errorf("docker: %w", err)
		}
	}
	cli, err := docker.Connect(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkImages(ctx, cli, cfg.Node.Store == backend.StorePostgres && cfg.PostgresImage == docker.ImagePostgres,
		cfg.EtcdMembers > 0 && cfg.EtcdImage == docker.ImageEtcd); err != nil {
		cli.Close()
		return nil, err
	}
	c := &Backend{cfg: cfg, dir: dir, log: cfg.Logger, ReplicaFaults: backend.ReplicaFaults{Topology: cfg.Redis.Topology}, cli: cli, nodes: map[string]*box{}, ids: backend.NodeIDs(cfg.Nodes)}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			if cerr := c.Close(context.Background()); cerr != nil {
				err = errors.Join(err, cerr)
			}
		}
	}()
	t0 := time.Now()
	nw, err := tcnetwork.New(ctx, tcnetwork.WithLabels(c.labels("network")))
	if err != nil {
		return nil, fmt.Errorf("docker: network: %w", err)
	}
	c.network = nw.Name

	replicated := cfg.Redis.Topology == backend.TopologySentinel || cfg.Redis.Topology == backend.TopologyCluster
	if replicated {
		if err := os.MkdirAll(filepath.Join(dir, sentinelDir), 0o755); err != nil {
			return nil, fmt.Errorf("docker: %w", err)
		}
		if cfg.Redis.Topology == backend.TopologyCluster {
			c.newClusterBoxes()
		} else {
			c.newSentinelBoxes()
		}
	} else {
		c.redis = c.newBox("redis", redisPort, backend.PingRedis)
	}
	c.toxiproxy = c.newBox("toxiproxy", toxiAPIPort, probeHTTP("/version"))
	c.source = c.newBox("source", sourcePort, probeHTTP("/health"))
	if cfg.Node.Store == backend.StorePostgres {
		c.postgres = c.newBox("postgres", postgresPort, probePostgres)
	}
	c.newEtcdBoxes()
	for _, id := range c.ids {
		c.nodes[id] = c.newBox(id, controlPort, probeHTTP("/health"))
	}
	if err := c.openLogs(); err != nil {
		return nil, err
	}

	// Redis, toxiproxy (and the proxies), the source and the nodes' containers in
	// parallel; then the nodes, once what they connect to is there.
	var redisCmd []string // the image's default: AOF on
	if cfg.NoPersistence {
		redisCmd = []string{"--protected-mode", "no", "--save", "", "--appendonly", "no"}
	}
	sourceCmd := []string{"source", "--listen", "0.0.0.0:" + portNum(sourcePort),
		"--rate", strconv.FormatFloat(cfg.SourceRate, 'f', -1, 64),
		"--backlog", strconv.FormatInt(cfg.SourceBacklog, 10)}
	steps := []func() error{
		func() error { return c.createAndStart(ctx, c.source, docker.ImageFenceline, sourceCmd, nil) },
		func() error {
			if err := c.createAndStart(ctx, c.toxiproxy, docker.ImageToxiproxy, nil, nil); err != nil {
				return err
			}
			c.links.SetAPI("http://" + c.addr(c.toxiproxy))
			if err := c.createProxies(ctx); err != nil {
				return err
			}
			if c.postgres != nil {
				if err := c.createPostgresProxies(ctx); err != nil {
					return err
				}
			}
			if err := c.createEtcdProxies(ctx); err != nil {
				return err
			}
			if cfg.Redis.Topology == backend.TopologyCluster {
				// Its servers replicate through the toxiproxy container: it must run first.
				return c.startCluster(ctx)
			}
			if replicated {
				// Its servers announce the toxiproxy container's address: it must run first.
				return c.startSentinels(ctx)
			}
			return nil
		},
	}
	if c.redis != nil {
		steps = append(steps, func() error { return c.createAndStart(ctx, c.redis, cfg.RedisImage, redisCmd, nil) })
	}
	if c.postgres != nil {
		steps = append(steps, func() error { return c.createAndStart(ctx, c.postgres, cfg.PostgresImage, nil, nil) })
	}
	steps = append(steps, c.startEtcdSteps(ctx)...)
	if replicated {
		// The nodes' arguments name the Sentinels' addresses: the topology first.
		if err := parallel(steps...); err != nil {
			return nil, err
		}
		steps = steps[:0]
	}
	historyBind := []string{filepath.Join(dir, history.HistoryDir) + ":/history"}
	for i, id := range c.ids {
		redisAddr := net.JoinHostPort("toxiproxy", strconv.Itoa(redisProxyBase+i+1))
		var topoArgs []string
		if replicated {
			// The node never dials --redis: its Sentinels, or the cluster's slots, tell
			// it where the primary is.
			redisAddr = "127.0.0.1:1"
			nodeArgs := c.sentinelNodeArgs
			if cfg.Redis.Topology == backend.TopologyCluster {
				nodeArgs = c.clusterNodeArgs
			}
			if topoArgs, err = nodeArgs(ctx, i, id); err != nil {
				return nil, err
			}
		}
		args := cfg.Node.Args(id, redisAddr,
			"http://"+net.JoinHostPort("toxiproxy", strconv.Itoa(sourceProxyBase+i+1)),
			"0.0.0.0:"+portNum(controlPort), "", "/history/"+id+".jsonl")
		if cfg.Node.Chaos {
			// Inside the container the control endpoint must listen on every interface;
			// its port is published on the host's 127.0.0.1 only.
			args = append(args, "--chaos-allow-remote-control")
		}
		if c.postgres != nil {
			args = append(args, postgresArgs(i)...)
		}
		args = append(args, cfg.Node.EtcdArgs(c.etcdProxies(i))...)
		args = append(args, topoArgs...)
		steps = append(steps, func() error { return c.create(ctx, c.nodes[id], docker.ImageFenceline, args, historyBind) })
	}
	if err := parallel(steps...); err != nil {
		return nil, err
	}
	steps = steps[:0]
	for _, id := range c.ids {
		steps = append(steps, func() error { return c.StartNode(ctx, id) })
	}
	if err := parallel(steps...); err != nil {
		return nil, err
	}
	c.log.Info("cluster-started", slog.String("run", cfg.RunID), slog.Int("nodes", cfg.Nodes),
		slog.Duration("took", time.Since(t0)))
	return c, nil
}

func (c *Backend) newBox(role, port string, probe func(context.Context, string) error) *box {
	return &box{role: role, name: "fenceline-" + c.cfg.RunID + "-" + role, port: port, probe: probe}
}

func (c *Backend) labels(role string) map[string]string {
	return map[string]string{docker.LabelRun: c.cfg.RunID, docker.LabelRole: role}
}

func (c *Backend) boxes() []*box {
	var all []*box
	for _, b := range slices.Concat([]*box{c.redis, c.toxiproxy, c.source, c.postgres, c.relay}, c.data, c.sentinels, c.etcd) {
		if b != nil {
			all = append(all, b)
		}
	}
	for _, id := range c.ids {
		if b := c.nodes[id]; b != nil {
			all = append(all, b)
		}
	}
	return all
}

func (c *Backend) openLogs() error {
	for _, b := range c.boxes() {
		l, err := openLog(filepath.Join(c.dir, history.LogsDir, b.role+".log"))
		if err != nil {
			return fmt.Errorf("docker: %w", err)
		}
		b.log = l
	}
	return nil
}

// create creates b's container (not started) on the run's network, with b.role as its
// network alias and b.port published on 127.0.0.1 only. Nodes run as the invoking user,
// so that their history files in the bind-mounted run directory belong to that user.
func (c *Backend) create(ctx context.Context, b *box, image string, cmd, binds []string) error {
	port := mobynet.MustParsePort(b.port)
	req := testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image:          image,
			Name:           b.name,
			Cmd:            cmd,
			Labels:         c.labels(b.role),
			Networks:       []string{c.network},
			NetworkAliases: map[string][]string{c.network: {b.role}},
			ExposedPorts:   []string{b.port},
			HostConfigModifier: func(hc *container.HostConfig) {
				hc.Binds = binds
				hc.PortBindings = mobynet.PortMap{port: {{HostIP: loopback}}}
			},
		},
		Logger: tcLogger{c.log},
	}
	if binds != nil {
		req.ConfigModifier = func(cc *container.Config) { cc.User = fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid()) }
	}
	tc, err := testcontainers.GenericContainer(ctx, req)
	if err != nil {
		return fmt.Errorf("docker: create %s: %w", b.role, err)
	}
	b.id = tc.GetContainerID()
	return nil
}

func (c *Backend) createAndStart(ctx context.Context, b *box, image string, cmd, binds []string) error {
	if err := c.create(ctx, b, image, cmd, binds); err != nil {
		return err
	}
	b.op.Lock()
	defer b.op.Unlock()
	return c.start(ctx, b)
}

// start starts b's container (for the first time or again: the same container keeps its
// writable layer), watches for its exit, reads its published port again (it can change
// across restarts), follows its log and waits until it answers. The caller holds b.op.
func (c *Backend) start(ctx context.Context, b *box) error {
	if _, err := c.cli.ContainerStart(ctx, b.id, client.ContainerStartOptions{}); err != nil {
		return fmt.Errorf("docker: start %s: %w", b.role, err)
	}
	exited := make(chan struct{})
	w := c.cli.ContainerWait(c.ctx, b.id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	c.wg.Go(func() {
		defer close(exited)
		select {
		case <-w.Result:
		case err := <-w.Error:
			if c.ctx.Err() == nil {
				c.log.Warn("container-wait-failed", slog.String("container", b.role), slog.Any("error", err))
			}
		}
	})
	b.log.follow(c.ctx, &c.wg, c.cli, b.id)
	addr, err := c.hostAddr(ctx, b)
	c.mu.Lock()
	b.addr, b.exited, b.paused = addr, exited, false
	c.mu.Unlock()
	if err != nil {
		// A container that exits at once loses its published port before we read it:
		// say that it exited, with its last lines, rather than that a port is missing.
		select {
		case <-exited:
			return c.exitedAtStart(b)
		case <-time.After(2 * time.Second):
		}
		return err
	}
	c.log.Info("container-started", slog.String("container", b.role), slog.String("addr", addr))
	return c.waitReady(ctx, b, addr, exited)
}

func (c *Backend) exitedAtStart(b *box) error {
	return fmt.Errorf("docker: %s exited at start; its last lines:\n%s", b.role, tail(c.ctx, c.cli, b.id, 10))
}

// hostAddr reads the host address b.port is published on now.
func (c *Backend) hostAddr(ctx context.Context, b *box) (string, error) {
	ins, err := c.cli.ContainerInspect(ctx, b.id, client.ContainerInspectOptions{})
	if err != nil {
		return "", fmt.Errorf("docker: inspect %s: %w", b.role, err)
	}
	if ns := ins.Container.NetworkSettings; ns != nil {
		for _, pb := range ns.Ports[mobynet.MustParsePort(b.port)] {
			if pb.HostPort != "" {
				return net.JoinHostPort(loopback.String(), pb.HostPort), nil
			}
		}
	}
	return "", fmt.Errorf("docker: %s: port %s is not published", b.role, b.port)
}

func (c *Backend) waitReady(ctx context.Context, b *box, addr string, exited <-chan struct{}) error {
	err := backend.WaitReady(ctx, b.role+" at "+addr, c.cfg.StartTimeout, exited,
		func(ctx context.Context) error { return b.probe(ctx, addr) })
	if errors.Is(err, backend.ErrExited) {
		return c.exitedAtStart(b)
	}
	if err != nil {
		return fmt.Errorf("docker: %w", err)
	}
	return nil
}

// createProxies creates node i's two proxies, listening on all interfaces inside the
// toxiproxy container.
func (c *Backend) createProxies(ctx context.Context) error {
	for i, id := range c.ids {
		// Sentinel: the node's proxies to each server are made with its arguments.
		if c.redis != nil {
			if _, err := c.links.CreateProxy(ctx, backend.RedisProxyName(id), "0.0.0.0:"+strconv.Itoa(redisProxyBase+i+1), "redis:"+portNum(redisPort)); err != nil {
				return fmt.Errorf("docker: %w", err)
			}
		}
		if _, err := c.links.CreateProxy(ctx, backend.SourceProxyName(id), "0.0.0.0:"+strconv.Itoa(sourceProxyBase+i+1), "source:"+portNum(sourcePort)); err != nil {
			return fmt.Errorf("docker: %w", err)
		}
	}
	return nil
}

// RunID is the run's id: the value of the fenceline.run label on its containers and
// network.
func (c *Backend) RunID() string { return c.cfg.RunID }

// Dir is the run directory the cluster writes to.
func (c *Backend) Dir() string { return c.dir }

// Nodes implements backend.Backend.
func (c *Backend) Nodes() []string { return append([]string(nil), c.ids...) }

func (c *Backend) node(id string) (*box, error) {
	b, ok := c.nodes[id]
	if !ok {
		return nil, fmt.Errorf("%w: %q", backend.ErrUnknownNode, id)
	}
	return b, nil
}

// state returns b's current incarnation: its exit channel, whether it is paused and its
// address. running is false before the first start and after the exit.
func (c *Backend) state(b *box) (exited chan struct{}, paused, running bool, addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	exited, paused, addr = b.exited, b.paused, b.addr
	if exited == nil {
		return nil, false, false, addr
	}
	select {
	case <-exited:
		return exited, false, false, addr
	default:
		return exited, paused, true, addr
	}
}

func (c *Backend) addr(b *box) string {
	_, _, _, addr := c.state(b)
	return addr
}

func (c *Backend) setPaused(b *box, p bool) {
	c.mu.Lock()
	b.paused = p
	c.mu.Unlock()
}

// running returns node id if its container runs (paused counts as running).
func (c *Backend) running(id string) (*box, error) {
	b, err := c.node(id)
	if err != nil {
		return nil, err
	}
	if _, _, ok, _ := c.state(b); !ok {
		return nil, fmt.Errorf("%w: %s", backend.ErrNotRunning, id)
	}
	return b, nil
}

// StartNode implements backend.Backend: it starts the node's container again (the same
// container: same name, same history file) and waits until its control endpoint answers.
func (c *Backend) StartNode(ctx context.Context, id string) error {
	b, err := c.node(id)
	if err != nil {
		return err
	}
	b.op.Lock()
	defer b.op.Unlock()
	if _, _, ok, _ := c.state(b); ok {
		return fmt.Errorf("%w: %s", backend.ErrRunning, id)
	}
	return c.start(ctx, b)
}

// StopNode implements backend.Backend: SIGTERM (a paused container is thawed so that it
// can release its lease), then SIGKILL if it has not exited within Config.StopGrace.
func (c *Backend) StopNode(ctx context.Context, id string) error {
	b, err := c.node(id)
	if err != nil {
		return err
	}
	b.op.Lock()
	defer b.op.Unlock()
	exited, paused, ok, _ := c.state(b)
	if !ok {
		return fmt.Errorf("%w: %s", backend.ErrNotRunning, id)
	}
	if err := c.kill(ctx, b, "TERM"); err != nil {
		return err
	}
	if paused {
		if _, err := c.cli.ContainerUnpause(ctx, b.id, client.ContainerUnpauseOptions{}); err != nil {
			c.log.Warn("container-unpause-failed", slog.String("container", id), slog.Any("error", err))
		}
		c.setPaused(b, false)
	}
	if waitClosed(ctx, exited, c.cfg.StopGrace) {
		return nil
	}
	_ = c.kill(context.WithoutCancel(ctx), b, "KILL")
	if !waitClosed(context.WithoutCancel(ctx), exited, 10*time.Second) {
		return fmt.Errorf("docker: %s did not exit after SIGKILL", id)
	}
	return fmt.Errorf("docker: %s did not exit within %v of SIGTERM; killed", id, c.cfg.StopGrace)
}

// KillNode implements backend.Backend: SIGKILL, which the engine delivers to a paused
// container by thawing it.
func (c *Backend) KillNode(ctx context.Context, id string) error {
	b, err := c.node(id)
	if err != nil {
		return err
	}
	b.op.Lock()
	defer b.op.Unlock()
	if _, _, ok, _ := c.state(b); !ok {
		return fmt.Errorf("%w: %s", backend.ErrNotRunning, id)
	}
	return c.killWait(ctx, b)
}

func (c *Backend) killWait(ctx context.Context, b *box) error {
	exited, _, _, _ := c.state(b)
	if err := c.kill(ctx, b, "KILL"); err != nil {
		return err
	}
	c.setPaused(b, false)
	if !waitClosed(ctx, exited, 10*time.Second) {
		return fmt.Errorf("docker: %s did not exit within 10s of SIGKILL", b.role)
	}
	return nil
}

func (c *Backend) kill(ctx context.Context, b *box, sig string) error {
	if _, err := c.cli.ContainerKill(ctx, b.id, client.ContainerKillOptions{Signal: sig}); err != nil {
		if _, _, ok, _ := c.state(b); !ok {
			return nil // it exited meanwhile
		}
		return fmt.Errorf("docker: kill -%s %s: %w", sig, b.role, err)
	}
	c.log.Info("container-signalled", slog.String("container", b.role), slog.String("signal", sig))
	return nil
}

// PauseNode implements backend.Backend with `docker pause`: the cgroup freezer. The node
// cannot observe it; connections to it are accepted by the kernel and then hang.
func (c *Backend) PauseNode(ctx context.Context, id string) error {
	return c.freeze(ctx, id, true)
}

// ResumeNode implements backend.Backend (`docker unpause`). Resuming a node that is not
// paused does nothing, as SIGCONT to a running process does nothing.
func (c *Backend) ResumeNode(ctx context.Context, id string) error {
	return c.freeze(ctx, id, false)
}

// freeze pauses (pause true) or unpauses node id's container; it does nothing when the
// container is already in that state.
func (c *Backend) freeze(ctx context.Context, id string, pause bool) error {
	b, err := c.running(id)
	if err != nil {
		return err
	}
	return c.freezeBox(ctx, b, pause)
}

// freezeBox pauses (pause true) or unpauses b's container; it does nothing when the
// container is already in that state.
func (c *Backend) freezeBox(ctx context.Context, b *box, pause bool) (err error) {
	id := b.role
	b.op.Lock()
	defer b.op.Unlock()
	if _, paused, ok, _ := c.state(b); !ok {
		return fmt.Errorf("%w: %s", backend.ErrNotRunning, id)
	} else if paused == pause {
		return nil
	}
	if pause {
		_, err = c.cli.ContainerPause(ctx, b.id, client.ContainerPauseOptions{})
	} else {
		_, err = c.cli.ContainerUnpause(ctx, b.id, client.ContainerUnpauseOptions{})
	}
	if err != nil {
		verb := map[bool]string{true: "pause", false: "unpause"}[pause]
		return fmt.Errorf("docker: %s %s: %w", verb, id, err)
	}
	c.setPaused(b, pause)
	return nil
}

// Running implements backend.Backend: the node's container runs (paused counts).
func (c *Backend) Running(id string) bool {
	_, err := c.running(id)
	return err == nil
}

// ControlAddr is node id's control endpoint as the runner reaches it (127.0.0.1:<port>).
// It changes when the node is restarted.
func (c *Backend) ControlAddr(id string) string {
	b, err := c.node(id)
	if err != nil {
		return ""
	}
	return c.addr(b)
}

// NodeStatus implements backend.Backend through the node's published control port.
func (c *Backend) NodeStatus(ctx context.Context, id string) (node.Status, error) {
	b, err := c.running(id)
	if err != nil {
		return node.Status{}, err
	}
	return backend.GetStatus(ctx, c.addr(b))
}

// SetClock implements backend.Backend through the node's published control port.
func (c *Backend) SetClock(ctx context.Context, id string, offset time.Duration, rate float64) error {
	b, err := c.running(id)
	if err != nil {
		return err
	}
	return backend.PostClock(ctx, c.addr(b), offset, rate)
}

// ArmFailpoint implements backend.Backend through the node's published control port.
func (c *Backend) ArmFailpoint(ctx context.Context, id, name, action string) error {
	b, err := c.running(id)
	if err != nil {
		return err
	}
	return backend.PutFailpoint(ctx, c.addr(b), name, action)
}

// DisarmFailpoints implements backend.Backend.
func (c *Backend) DisarmFailpoints(ctx context.Context, id string) error {
	b, err := c.running(id)
	if err != nil {
		return err
	}
	return backend.DeleteFailpoints(ctx, c.addr(b))
}

// FailpointHits reads the hit counts of a node's failpoints (cluster.FailpointHits).
func (c *Backend) FailpointHits(ctx context.Context, id string) (map[string]int64, error) {
	b, err := c.running(id)
	if err != nil {
		return nil, err
	}
	return backend.FailpointHits(ctx, c.addr(b))
}

// KillRedis implements backend.Backend: SIGKILL to the Redis container. Its append-only
// file stays in the container's writable layer.
func (c *Backend) KillRedis(ctx context.Context) error {
	if c.Set != nil {
		return fmt.Errorf("%w: %v", backend.ErrTopology, errNoSingleRedis)
	}
	b := c.redis
	b.op.Lock()
	defer b.op.Unlock()
	if _, _, ok, _ := c.state(b); !ok {
		return nil
	}
	return c.killWait(ctx, b)
}

// StartRedis implements backend.Backend: it starts the same Redis container again and
// waits until it answers PING (after loading its append-only file). Its published port
// may change: RedisAddr says where it is now.
func (c *Backend) StartRedis(ctx context.Context) error {
	if c.Set != nil {
		return c.Set.StartRedis(ctx)
	}
	b := c.redis
	b.op.Lock()
	defer b.op.Unlock()
	if _, _, ok, _ := c.state(b); ok {
		return nil
	}
	return c.start(ctx, b)
}

// RedisAddr implements backend.Backend: Redis's published port on 127.0.0.1, bypassing
// every proxy. It changes when Redis is restarted.
func (c *Backend) RedisAddr() string {
	if c.Set != nil {
		return c.Set.CurrentAddr()
	}
	return c.addr(c.redis)
}

// AddRedisToxic implements backend.Backend through the toxiproxy API's published port.
func (c *Backend) AddRedisToxic(ctx context.Context, id string, t backend.Toxic) error {
	ps, err := c.redisProxies(id)
	if err != nil {
		return err
	}
	for _, p := range ps {
		if err := c.links.AddToxic(ctx, p, t); err != nil {
			return err
		}
	}
	return nil
}

// RemoveRedisToxics implements backend.Backend.
func (c *Backend) RemoveRedisToxics(ctx context.Context, id string, names ...string) error {
	ps, err := c.redisProxies(id)
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range ps {
		errs = append(errs, c.links.RemoveToxics(ctx, p, names...))
	}
	return errors.Join(errs...)
}

// AddSourceToxic implements nemesis.SourceLinks.
func (c *Backend) AddSourceToxic(ctx context.Context, id string, t backend.Toxic) error {
	if _, err := c.node(id); err != nil {
		return err
	}
	return c.links.AddToxic(ctx, backend.SourceProxyName(id), t)
}

// RemoveSourceToxics implements nemesis.SourceLinks.
func (c *Backend) RemoveSourceToxics(ctx context.Context, id string, names ...string) error {
	if _, err := c.node(id); err != nil {
		return err
	}
	return c.links.RemoveToxics(ctx, backend.SourceProxyName(id), names...)
}

// ResetLinks implements backend.Backend.
func (c *Backend) ResetLinks(ctx context.Context) error {
	var err error
	if c.Set != nil {
		err = c.Set.ResetLinks(ctx)
	}
	return errors.Join(err, c.links.ResetLinks(ctx))
}

// Close implements backend.Backend: it kills every container of the run, lets the log
// followers write their last lines, and removes the containers and the network (found
// by the run's label, so also those of a start that failed half-way). The images are
// kept. Close runs even when ctx is already cancelled (an interrupted run must still
// clean up); it gives itself at most a minute. It is idempotent.
func (c *Backend) Close(ctx context.Context) error {
	c.closeOnce.Do(func() { c.closeErr = c.close(ctx) })
	return c.closeErr
}

func (c *Backend) close(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	serr := c.closeReplicas()
	all := c.boxes()
	for _, b := range all {
		if b.id != "" {
			if _, _, ok, _ := c.state(b); ok {
				_, _ = c.cli.ContainerKill(ctx, b.id, client.ContainerKillOptions{Signal: "KILL"})
			}
		}
	}
	for _, b := range all {
		if exited, _, _, _ := c.state(b); exited != nil {
			waitClosed(ctx, exited, 10*time.Second)
		}
		if b.log != nil {
			b.log.wait(5 * time.Second)
		}
	}
	_, err := docker.RemoveRun(ctx, c.cli, c.cfg.RunID)
	err = errors.Join(err, serr)
	c.cancel()
	c.wg.Wait()
	for _, b := range all {
		if b.log != nil {
			b.log.close()
		}
	}
	c.cli.Close()
	c.log.Info("cluster-removed", slog.String("run", c.cfg.RunID))
	return err
}

// checkImages fails with a hint when an image is missing: nothing can be pulled.
func checkImages(ctx context.Context, cli *client.Client, postgres, etcd bool) error {
	var missing []string
	imgs := slices.Clone(docker.Images)
	if postgres {
		imgs = append(imgs, docker.ImagePostgres)
	}
	if etcd {
		imgs = append(imgs, docker.ImageEtcd)
	}
	for _, img := range imgs {
		if _, err := cli.ImageInspect(ctx, img); err != nil {
			missing = append(missing, img)
		}
	}
	if len(missing) > 0 {
		hint := "make images"
		if postgres {
			hint += " STORE=postgres"
		}
		if etcd {
			hint += " ETCD=1"
		}
		return fmt.Errorf("%w: %s (build them with '%s'; nothing can be pulled)", ErrNoImages, strings.Join(missing, ", "), hint)
	}
	return nil
}

// ErrNoImages is returned by Start when an image is missing.
var ErrNoImages = errors.New("docker: images not built")

// waitClosed waits for ch to close, at most d or until ctx ends; it reports whether ch
// closed.
func waitClosed(ctx context.Context, ch <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// parallel runs the steps at once and returns their errors joined.
func parallel(steps ...func() error) error {
	errs := make([]error, len(steps))
	var wg sync.WaitGroup
	for i, s := range steps {
		wg.Go(func() { errs[i] = s() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func portNum(p string) string { n, _, _ := strings.Cut(p, "/"); return n }

// probeHTTP answers nil when GET path answers 200.
func probeHTTP(path string) func(context.Context, string) error {
	return func(ctx context.Context, addr string) error { return backend.ProbeHTTP(ctx, "http://"+addr+path) }
}

// tcLogger sends testcontainers-go's messages to our logger at debug level.
type tcLogger struct{ l *slog.Logger }

func (t tcLogger) Printf(format string, v ...any) {
	t.l.Debug("testcontainers", slog.String("msg", strings.TrimSpace(fmt.Sprintf(format, v...))))
}
