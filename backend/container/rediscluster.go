package container

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/docker"
)

// The cluster topology on docker: data nodes r1..r6 (r1..r3 the first primaries, r4..r6
// their replicas), each a container of docker.ImageRedis, and a relay container (docker.ImageFenceline
// running `fenceline bus-relay`, alias bus-relay) through which every data node is known
// to the others:
//
//   - a data node announces the relay's address, with port peerProxyBase+k for clients
//     and replication, which the relay forwards to data node k's peer proxy in the
//     toxiproxy container (so a toxic there cuts its replication as in the sentinel
//     topology), and port clusterBusBase+k for the cluster bus, which the relay forwards
//     to the node's bus and can hold back per sender: a sender is known by its
//     container's address on the run's network (see cluster.busRelay for why toxiproxy
//     cannot do this);
//   - node i (0-based) has proxies of its own to every data node, on
//     nodeRedisProxyBase + 8i + j (j 0..5), and its --redis-addr-map maps each announced
//     address to them, as locally.
//
// One announced address serves both the client and the bus port (cluster-announce-ip
// is one for both), which is why the relay, not toxiproxy, is the address the data
// nodes announce.
const (
	clusterBusBase   = 14000
	relayControlPort = "7000/tcp"
)

// newClusterBoxes adds the boxes of the cluster topology.
func (c *Backend) newClusterBoxes() {
	for k := 1; k <= backend.ClusterDataNodes; k++ {
		c.data = append(c.data, c.newBox(dataName(k), redisPort, backend.PingRedis))
	}
	c.relay = c.newBox("bus-relay", relayControlPort, probeHTTP("/health"))
}

// startCluster starts the cluster topology once toxiproxy runs: the peer proxies, the
// relay, the data nodes; then it forms the cluster and watches it until it has settled.
func (c *Backend) startCluster(ctx context.Context) error {
	toxiIP, err := c.containerIP(ctx, c.toxiproxy)
	if err != nil {
		return err
	}
	c.toxiIP = toxiIP
	relayCmd := []string{"bus-relay", "--control", "0.0.0.0:" + portNum(relayControlPort)}
	for k, b := range c.data {
		peer := strconv.Itoa(peerProxyBase + k + 1)
		if _, err := c.links.CreateProxy(ctx, backend.PeerProxyName(b.role), "0.0.0.0:"+peer, b.role+":"+portNum(redisPort)); err != nil {
			return fmt.Errorf("docker: %w", err)
		}
		bus := strconv.Itoa(clusterBusBase + k + 1)
		relayCmd = append(relayCmd,
			"--relay", "peer-"+b.role+"=0.0.0.0:"+peer+">toxiproxy:"+peer,
			"--relay", b.role+"=0.0.0.0:"+bus+">"+net.JoinHostPort(b.role, strconv.Itoa(backend.ClusterBusPort)))
	}
	if err := c.createAndStart(ctx, c.relay, docker.ImageFenceline, relayCmd, nil); err != nil {
		return err
	}
	relayIP, err := c.containerIP(ctx, c.relay)
	if err != nil {
		return err
	}
	var steps []func() error
	nodes := make([]backend.ClusterNode, len(c.data))
	for k, b := range c.data {
		peer, bus := strconv.Itoa(peerProxyBase+k+1), strconv.Itoa(clusterBusBase+k+1)
		nodes[k] = backend.ClusterNode{Name: b.role, Peer: net.JoinHostPort(relayIP, peer),
			Bus: net.JoinHostPort(relayIP, bus), Proc: redisBox{c, b}}
		bind, err := c.confDir(b.role, "redis.conf", "")
		if err != nil {
			return err
		}
		cmd := append([]string{"/conf/redis.conf", "--protected-mode", "no", "--save", "",
			"--appendonly", "yes", "--appendfsync", "always", "--dir", "/conf"},
			backend.ClusterNodeArgs(c.cfg.Redis, backend.ClusterBusPort, relayIP, peer, bus)...)
		steps = append(steps, func() error { return c.createAndStart(ctx, b, c.cfg.RedisImage, cmd, []string{bind}) })
	}
	if err := parallel(steps...); err != nil {
		return err
	}
	set, err := backend.WatchCluster(ctx, &c.links, backend.RemoteRelays{URL: "http://" + c.addr(c.relay)}, nodes,
		cmp.Or(c.cfg.Node.Election, "fenceline"))
	if err != nil {
		return fmt.Errorf("docker: %w", err)
	}
	c.Set = set
	return nil
}

// clusterNodeArgs creates node i's (0-based) proxies to every data node and returns its
// arguments that use them.
func (c *Backend) clusterNodeArgs(ctx context.Context, i int, id string) ([]string, error) {
	relayIP, err := c.containerIP(ctx, c.relay)
	if err != nil {
		return nil, err
	}
	var seeds, amap []string
	for k, b := range c.data {
		listen := strconv.Itoa(nodeRedisProxyBase + 8*i + k)
		if _, err := c.links.CreateProxy(ctx, backend.NodeProxyName(id, b.role), "0.0.0.0:"+listen, b.role+":"+portNum(redisPort)); err != nil {
			return nil, fmt.Errorf("docker: %w", err)
		}
		announced := net.JoinHostPort(relayIP, strconv.Itoa(peerProxyBase+k+1))
		seeds = append(seeds, announced)
		amap = append(amap, announced+"="+net.JoinHostPort("toxiproxy", listen))
	}
	return backend.ClusterNodeFlags(seeds, amap), nil
}
