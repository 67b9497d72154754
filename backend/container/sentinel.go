package container

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/moby/moby/client"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/history"
)

// The sentinel topology on docker: data nodes r1 (the first primary), r2, r3 and
// Sentinels s1..s3, each a container of docker.ImageRedis. Every link a fault may cut goes
// through the toxiproxy container:
//
//   - data node k's peer proxy listens on peerProxyBase+k and is the address everyone
//     else knows it by: its replicas replicate through it, the Sentinels monitor it
//     there, and it announces it (replica-announce-ip is the toxiproxy container's
//     address on the run's network), so a fault on it cuts the primary off from its
//     replicas and the Sentinels together;
//   - node i (0-based) has proxies of its own to every data node and Sentinel, on
//     nodeRedisProxyBase + 8i + j (j 0..2 the data nodes, 3..5 the Sentinels), and its
//     --redis-addr-map maps each peer address (and each Sentinel's own address, which
//     the Sentinels tell each other and go-redis discovers) to them, so that a fault on
//     a node's links leaves everyone else's alone.
//
// Sentinels talk to each other directly, on their container addresses, as they do on
// 127.0.0.1 locally.
const (
	sentinelPort       = "26379/tcp"
	peerProxyBase      = 13000
	nodeRedisProxyBase = 20000
)

// sentinelDir is the run directory's subdirectory of the data nodes' and Sentinels'
// files: each gets <name>/ mounted at /conf, its config file (which Sentinel rewrites)
// and, for a data node, its append-only file.
const sentinelDir = "redis"

func dataName(k int) string     { return fmt.Sprintf("r%d", k) }
func sentinelName(k int) string { return fmt.Sprintf("s%d", k) }

// newSentinelBoxes adds the boxes of the sentinel topology.
func (c *Backend) newSentinelBoxes() {
	for k := 1; k <= 1+backend.SentinelReplicas; k++ {
		c.data = append(c.data, c.newBox(dataName(k), redisPort, backend.PingRedis))
	}
	for k := 1; k <= backend.SentinelCount; k++ {
		c.sentinels = append(c.sentinels, c.newBox(sentinelName(k), sentinelPort, backend.PingRedis))
	}
}

// startSentinels starts the sentinel topology once toxiproxy runs: the peer proxies,
// the data nodes, the Sentinels; then it watches the Sentinels until the topology has
// settled.
func (c *Backend) startSentinels(ctx context.Context) error {
	toxiIP, err := c.containerIP(ctx, c.toxiproxy)
	if err != nil {
		return err
	}
	c.toxiIP = toxiIP
	peers := make([]string, len(c.data))
	for k, b := range c.data {
		port := strconv.Itoa(peerProxyBase + k + 1)
		if _, err := c.links.CreateProxy(ctx, backend.PeerProxyName(b.role), "0.0.0.0:"+port, b.role+":"+portNum(redisPort)); err != nil {
			return fmt.Errorf("docker: %w", err)
		}
		peers[k] = net.JoinHostPort(toxiIP, port)
	}
	var steps []func() error
	for k, b := range c.data {
		conf := ""
		if k > 0 {
			conf = backend.ReplicaConfig(peers[0])
		}
		bind, err := c.confDir(b.role, "redis.conf", conf)
		if err != nil {
			return err
		}
		_, port, _ := net.SplitHostPort(peers[k])
		cmd := append([]string{"/conf/redis.conf", "--protected-mode", "no", "--save", "",
			"--appendonly", "yes", "--appendfsync", "always", "--dir", "/conf"},
			backend.DataNodeArgs(c.cfg.Redis, toxiIP, port)...)
		steps = append(steps, func() error { return c.createAndStart(ctx, b, c.cfg.RedisImage, cmd, []string{bind}) })
	}
	// The data nodes first: a Sentinel learns of the replicas from the primary's INFO,
	// every 10 s, so the replicas must be there at its first.
	if err := parallel(steps...); err != nil {
		return err
	}
	if err := c.waitReplicas(ctx); err != nil {
		return err
	}
	steps = steps[:0]
	for _, b := range c.sentinels {
		bind, err := c.confDir(b.role, "sentinel.conf", backend.SentinelConfig(peers[0]))
		if err != nil {
			return err
		}
		cmd := []string{"/conf/sentinel.conf", "--sentinel", "--protected-mode", "no"}
		steps = append(steps, func() error { return c.createAndStart(ctx, b, c.cfg.RedisImage, cmd, []string{bind}) })
	}
	if err := parallel(steps...); err != nil {
		return err
	}
	data := make([]backend.DataNode, len(c.data))
	for k, b := range c.data {
		data[k] = backend.DataNode{Name: b.role, Proc: redisBox{c, b}, Peer: peers[k]}
	}
	var sens []backend.RedisProcess
	for _, b := range c.sentinels {
		sens = append(sens, redisBox{c, b})
	}
	set, err := backend.WatchSentinels(ctx, &c.links, data, sens)
	if err != nil {
		return fmt.Errorf("docker: %w", err)
	}
	c.Set = set
	return nil
}

// waitReplicas waits until the primary r1 lists every replica as online.
func (c *Backend) waitReplicas(ctx context.Context) error {
	want := len(c.data) - 1
	err := backend.WaitReady(ctx, "the replicas of r1", c.cfg.StartTimeout, nil, func(ctx context.Context) error {
		n, err := backend.ConnectedReplicas(ctx, c.addr(c.data[0]))
		if err != nil {
			return err
		}
		if n < want {
			return fmt.Errorf("%d of %d replicas connected", n, want)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("docker: %w", err)
	}
	return nil
}

// confDir writes name with body into the run directory's directory of server role and
// returns its bind mount at /conf.
func (c *Backend) confDir(role, name, body string) (string, error) {
	dir := filepath.Join(c.dir, sentinelDir, role)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("docker: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		return "", fmt.Errorf("docker: %w", err)
	}
	return dir + ":/conf", nil
}

// containerIP is b's address on the run's network.
func (c *Backend) containerIP(ctx context.Context, b *box) (string, error) {
	ins, err := c.cli.ContainerInspect(ctx, b.id, client.ContainerInspectOptions{})
	if err != nil {
		return "", fmt.Errorf("docker: inspect %s: %w", b.role, err)
	}
	if ns := ins.Container.NetworkSettings; ns != nil {
		if ep := ns.Networks[c.network]; ep != nil && ep.IPAddress.IsValid() {
			return ep.IPAddress.String(), nil
		}
	}
	return "", fmt.Errorf("docker: %s has no address on network %s", b.role, c.network)
}

// sentinelNodeArgs creates node i's (0-based) proxies to every data node and Sentinel
// and returns its arguments that use them.
func (c *Backend) sentinelNodeArgs(ctx context.Context, i int, id string) ([]string, error) {
	var sens, amap []string
	j := 0
	proxy := func(b *box, port string) (string, error) {
		listen := strconv.Itoa(nodeRedisProxyBase + 8*i + j)
		j++
		if _, err := c.links.CreateProxy(ctx, backend.NodeProxyName(id, b.role), "0.0.0.0:"+listen, b.role+":"+portNum(port)); err != nil {
			return "", fmt.Errorf("docker: %w", err)
		}
		return net.JoinHostPort("toxiproxy", listen), nil
	}
	for k, b := range c.data {
		a, err := proxy(b, redisPort)
		if err != nil {
			return nil, err
		}
		amap = append(amap, net.JoinHostPort(c.toxiIP, strconv.Itoa(peerProxyBase+k+1))+"="+a)
	}
	for _, b := range c.sentinels {
		a, err := proxy(b, sentinelPort)
		if err != nil {
			return nil, err
		}
		sens = append(sens, a)
		ip, err := c.containerIP(ctx, b)
		if err != nil {
			return nil, err
		}
		amap = append(amap, net.JoinHostPort(ip, portNum(sentinelPort))+"="+a)
	}
	return []string{"--redis-sentinels", strings.Join(sens, ","), "--redis-master", backend.SentinelMaster,
		"--redis-addr-map", strings.Join(amap, ",")}, nil
}

// redisProxies are node id's proxies to Redis: one, or (sentinel, cluster) one to each
// data node and Sentinel, so that a partition cuts the node off from all of them.
func (c *Backend) redisProxies(id string) ([]string, error) {
	if _, err := c.node(id); err != nil {
		return nil, err
	}
	if c.Set == nil {
		return []string{backend.RedisProxyName(id)}, nil
	}
	var ps []string
	for _, b := range append(append([]*box(nil), c.data...), c.sentinels...) {
		ps = append(ps, backend.NodeProxyName(id, b.role))
	}
	return ps, nil
}

// closeReplicas stops the watchers and records the promotions the run saw, as the local
// backend does (the topology table reads them).
func (c *Backend) closeReplicas() error {
	if c.Set == nil {
		return nil
	}
	c.Set.Close()
	return history.WriteJSON(filepath.Join(c.dir, backend.PromotionsFile), c.Set.Promotions())
}

// redisBox is a data node's or a Sentinel's container as a cluster.RedisProcess.
type redisBox struct {
	c *Backend
	b *box
}

func (r redisBox) Addr() string { return r.c.addr(r.b) }

func (r redisBox) Running() bool {
	_, _, ok, _ := r.c.state(r.b)
	return ok
}

// Kill is SIGKILL to the container; its files stay in the run directory.
func (r redisBox) Kill(ctx context.Context) error {
	r.b.op.Lock()
	defer r.b.op.Unlock()
	if !r.Running() {
		return nil
	}
	return r.c.killWait(ctx, r.b)
}

// Restart starts the same container again and waits until it answers PING.
func (r redisBox) Restart(ctx context.Context) error {
	r.b.op.Lock()
	defer r.b.op.Unlock()
	if r.Running() {
		return nil
	}
	return r.c.start(ctx, r.b)
}

// Pause is `docker pause`, the cgroup freezer.
func (r redisBox) Pause(ctx context.Context) error { return r.c.freezeBox(ctx, r.b, true) }

// Resume is `docker unpause`; it does nothing to a container that is not paused.
func (r redisBox) Resume(ctx context.Context) error { return r.c.freezeBox(ctx, r.b, false) }

// PrimaryAddr returns the primary's published address once the topology has settled
// (sentinel), or Redis's: the final read reads from it.
func (c *Backend) PrimaryAddr(ctx context.Context) (string, error) {
	if c.Set == nil {
		return c.addr(c.redis), nil
	}
	return c.Set.PrimaryAddr(ctx)
}

var errNoSingleRedis = errors.New("kill Redis (sentinel: use the replicated faults)")
