package container

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/internal/etcdserver"
)

// The etcd members of a run: containers of docker.ImageEtcd with the aliases etcd-e1,
// etcd-e2..., their client port published on 127.0.0.1. Node i (0-based) reaches member
// k (1-based) through its proxy on etcdProxyBase + 4i + k in the toxiproxy container.
const (
	etcdClientPort = "2379/tcp"
	etcdPeerPort   = "2380"
	etcdProxyBase  = 30000
)

var errNoEtcd = errors.New("docker: no etcd in this cluster (--etcd-members)")

func etcdRole(m string) string { return "etcd-" + m }

// newEtcdBoxes adds the boxes of the etcd members.
func (c *Backend) newEtcdBoxes() {
	for _, m := range backend.EtcdMemberNames(c.cfg.EtcdMembers) {
		c.etcd = append(c.etcd, c.newBox(etcdRole(m), etcdClientPort, func(ctx context.Context, addr string) error {
			return etcdserver.Health(ctx, addr)
		}))
	}
}

// etcdCmd is member m's command line: it serves on its alias, and a restart of the same
// container finds its data directory (the initial cluster is then ignored).
func (c *Backend) etcdCmd(m string) []string {
	var initial []string
	for _, o := range backend.EtcdMemberNames(len(c.etcd)) {
		initial = append(initial, o+"=http://"+etcdRole(o)+":"+etcdPeerPort)
	}
	self := "http://" + etcdRole(m)
	return []string{
		"--name", m,
		"--data-dir", "/data/" + m,
		"--listen-client-urls", "http://0.0.0.0:" + portNum(etcdClientPort),
		"--advertise-client-urls", self + ":" + portNum(etcdClientPort),
		"--listen-peer-urls", "http://0.0.0.0:" + etcdPeerPort,
		"--initial-advertise-peer-urls", self + ":" + etcdPeerPort,
		"--initial-cluster", strings.Join(initial, ","),
		"--initial-cluster-token", "fenceline",
		"--initial-cluster-state", "new",
		"--logger", "zap", "--log-outputs", "stderr",
	}
}

// startEtcdSteps are the steps that create and start every member: they run in
// parallel, as each member waits for a leader, which needs a quorum of them.
func (c *Backend) startEtcdSteps(ctx context.Context) []func() error {
	var steps []func() error
	for k, b := range c.etcd {
		m := c.EtcdMembers()[k]
		steps = append(steps, func() error { return c.createAndStart(ctx, b, c.cfg.EtcdImage, c.etcdCmd(m), nil) })
	}
	return steps
}

func etcdProxyPort(i, k int) int { return etcdProxyBase + 4*i + k + 1 }

// createEtcdProxies creates each node's proxy to each member.
func (c *Backend) createEtcdProxies(ctx context.Context) error {
	for i, id := range c.ids {
		for k, m := range c.EtcdMembers() {
			if _, err := c.links.CreateProxy(ctx, backend.EtcdProxyName(id, m),
				"0.0.0.0:"+strconv.Itoa(etcdProxyPort(i, k)), etcdRole(m)+":"+portNum(etcdClientPort)); err != nil {
				return fmt.Errorf("docker: %w", err)
			}
		}
	}
	return nil
}

// etcdProxies are node i's (0-based) proxies to the members, as it reaches them.
func (c *Backend) etcdProxies(i int) []string {
	var out []string
	for k := range c.etcd {
		out = append(out, net.JoinHostPort("toxiproxy", strconv.Itoa(etcdProxyPort(i, k))))
	}
	return out
}

// EtcdMembers lists the etcd members' names (e1, e2...); none when the cluster runs no etcd.
func (c *Backend) EtcdMembers() []string { return backend.EtcdMemberNames(len(c.etcd)) }

func (c *Backend) etcdBox(m string) (*box, error) {
	if len(c.etcd) == 0 {
		return nil, errNoEtcd
	}
	for _, b := range c.etcd {
		if b.role == etcdRole(m) {
			return b, nil
		}
	}
	return nil, fmt.Errorf("docker: no etcd member %q", m)
}

// EtcdAddr is member m's client address as the runner reaches it (its published port on
// 127.0.0.1), bypassing every proxy. It changes when the member is restarted.
func (c *Backend) EtcdAddr(m string) string {
	if b, err := c.etcdBox(m); err == nil {
		return c.addr(b)
	}
	return ""
}

// EtcdProxyAddr is node id's proxy to member m as the runner reaches it: the toxiproxy
// container's address on the run's network (a Linux host routes to its bridge), for the
// tests that check a partition from the node's side.
func (c *Backend) EtcdProxyAddr(id, m string) string {
	i := -1
	for j, o := range c.ids {
		if o == id {
			i = j
		}
	}
	k := -1
	for j, o := range c.EtcdMembers() {
		if o == m {
			k = j
		}
	}
	if i < 0 || k < 0 || c.toxiproxy.id == "" {
		return ""
	}
	ip, err := c.containerIP(c.ctx, c.toxiproxy)
	if err != nil {
		return ""
	}
	return net.JoinHostPort(ip, strconv.Itoa(etcdProxyPort(i, k)))
}

// EtcdLeader names the member that is the raft leader now, by the members' own status.
func (c *Backend) EtcdLeader(ctx context.Context) (string, error) {
	if len(c.etcd) == 0 {
		return "", errNoEtcd
	}
	var addrs []string
	for _, b := range c.etcd {
		addrs = append(addrs, c.addr(b))
	}
	i, err := etcdserver.Leader(ctx, addrs)
	if err != nil {
		return "", err
	}
	return c.EtcdMembers()[i], nil
}

// KillEtcd kills member m's container (SIGKILL); its data stays in the writable layer.
func (c *Backend) KillEtcd(ctx context.Context, m string) error {
	b, err := c.etcdBox(m)
	if err != nil {
		return err
	}
	b.op.Lock()
	defer b.op.Unlock()
	if _, _, ok, _ := c.state(b); !ok {
		return nil
	}
	return c.killWait(ctx, b)
}

// PauseEtcd freezes member m's container (`docker pause`); StartEtcd thaws it.
func (c *Backend) PauseEtcd(ctx context.Context, m string) error {
	b, err := c.etcdBox(m)
	if err != nil {
		return err
	}
	return c.freezeBox(ctx, b, true)
}

// StartEtcd thaws every paused member and starts the container of every member that is
// down, waiting until each is healthy (which needs a quorum of the cluster). It does
// nothing when the cluster runs no etcd.
func (c *Backend) StartEtcd(ctx context.Context) error {
	var errs []error
	for _, b := range c.etcd {
		if _, paused, ok, _ := c.state(b); ok {
			if paused {
				errs = append(errs, c.freezeBox(ctx, b, false))
			}
			continue
		}
		b.op.Lock()
		if _, _, ok, _ := c.state(b); !ok {
			errs = append(errs, c.start(ctx, b))
		}
		b.op.Unlock()
	}
	return errors.Join(errs...)
}

// AddEtcdToxic adds t to node id's links to every etcd member.
func (c *Backend) AddEtcdToxic(ctx context.Context, id string, t backend.Toxic) error {
	if len(c.etcd) == 0 {
		return errNoEtcd
	}
	if _, err := c.node(id); err != nil {
		return err
	}
	for _, m := range c.EtcdMembers() {
		if err := c.links.AddToxic(ctx, backend.EtcdProxyName(id, m), t); err != nil {
			return err
		}
	}
	return nil
}

// RemoveEtcdToxics removes the named toxics from node id's links to every etcd member.
func (c *Backend) RemoveEtcdToxics(ctx context.Context, id string, names ...string) error {
	if len(c.etcd) == 0 {
		return nil
	}
	if _, err := c.node(id); err != nil {
		return err
	}
	var errs []error
	for _, m := range c.EtcdMembers() {
		errs = append(errs, c.links.RemoveToxics(ctx, backend.EtcdProxyName(id, m), names...))
	}
	return errors.Join(errs...)
}
