package backend

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/internal/redisserver"
)

// The cluster topology: a Redis Cluster of three primaries, r1, r2 and r3, with one
// replica each, r4 of r1, r5 of r2 and r6 of r3 (a shard is a primary and its replica).
// Every key of an election shares its hash tag, so one shard holds all of them; the
// Redis faults act on that shard.
//
// Links. Each data node announces (cluster-announce-ip/port) the address of its peer
// proxy, a toxiproxy proxy like the sentinel topology's: the replica's replication link
// goes through it, and so does whatever a node is told in CLUSTER SLOTS and MOVED. A
// node of the election does not dial that address: its --redis-addr-map sends it to a
// proxy of its own to the same data node, as through a NAT. (Announcing each node's own
// proxy is not possible: a cluster node announces one address to all.) The cluster bus
// goes through a relay per data node (cluster-announce-bus-port), which can cut one
// sender alone: see busRelay for why that cannot be a toxiproxy proxy.
const (
	clusterShards = 3
	// clusterNodeTimeout is cluster-node-timeout: a primary that a majority of primaries
	// cannot reach for this long is failed, and its replica promotes itself about 0.5 to
	// 1 s later. It is Sentinel's down-after here, so that the rows compare.
	clusterNodeTimeout = time.Second
	// clusterPoll is how often the harness asks each data node for its role: a
	// promotion's time is known to within this.
	clusterPoll = 50 * time.Millisecond
	// clusterSlots is the number of hash slots of a Redis Cluster.
	clusterSlots = 16384
)

// ClusterNode is one data node of the cluster topology, as a backend started it.
type ClusterNode struct {
	Name string // "r1"...; r1..r3 are the first primaries, r4..r6 their replicas
	// Peer is the listen address of its peer proxy: what it announces, and how replicas
	// and clients (through their own proxies, by the address map) reach it.
	Peer string
	// Bus is its announced cluster bus address: a relay whose cuts BusCuts sets.
	Bus  string
	Proc RedisProcess
}

// BusCuts cuts the cluster bus one sender at a time (see busRelay for why toxiproxy
// cannot): each data node's bus is behind a relay.
type BusCuts interface {
	// Cut holds back (cut) or lets through again what data node from ("*": every
	// sender) sends to data node to's bus, on connections open now and later.
	Cut(ctx context.Context, to, from string, cut bool) error
	// UncutAll lets everything through on every relay.
	UncutAll(ctx context.Context) error
}

// clusterNode is one data node of a ClusterSet.
type clusterNode struct {
	name  string
	peer  string
	bus   string
	proc  RedisProcess
	shard int // 0..clusterShards-1
	// poll is the harness's own client, straight to the node (no proxy, dialled at the
	// process's address of the moment, which a container's restart changes): roles,
	// cluster state, the fault commands.
	poll *redis.Client
	// restarting is set while the node is being started again: the watcher leaves it
	// alone (a refused dial would only fill the runner's log with go-redis's lines).
	restarting atomic.Bool
}

// ClusterSet is a running cluster topology, whatever the backend: it watches the
// promotions of the election's shard and has the replicated topology's abilities that
// the Redis faults of package nemesis use. Its methods are safe for concurrent use.
type ClusterSet struct {
	links *Links
	cuts  BusCuts
	data  []*clusterNode
	slot  int // the election's hash slot
	shard int // the shard that serves it
	// watchOnly: the backend owns the processes (Close leaves them running).
	watchOnly bool
	// local are the local backend's bus relays, closed by Close.
	local *localBus

	mu         sync.Mutex
	primary    [clusterShards]string // data node name per shard, as last seen
	epoch      [clusterShards]int64  // its config epoch
	promotions promotionLog          // of the election's shard

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// slotRange is shard k's slots: an even split of the 16384.
func slotRange(k int) (lo, hi int) {
	return k * clusterSlots / clusterShards, (k+1)*clusterSlots/clusterShards - 1
}

// ClusterNodeArgs are a cluster data node's redis-server arguments: its bus on busPort,
// and what it announces (its peer proxy's address, its relay's port).
func ClusterNodeArgs(spec RedisSpec, busPort int, announceIP, announcePort, announceBusPort string) []string {
	args := []string{
		"--cluster-enabled", "yes",
		"--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", strconv.FormatInt(clusterNodeTimeout.Milliseconds(), 10),
		"--cluster-port", strconv.Itoa(busPort),
		"--cluster-announce-ip", announceIP,
		"--cluster-announce-port", announcePort,
		"--cluster-announce-bus-port", announceBusPort,
		// A replica may always take over, however long its link was down: the faults
		// decide what it has missed, not a data-age rule.
		"--cluster-replica-validity-factor", "0",
		// The shards stay as built: a replica never moves to another primary.
		"--cluster-allow-replica-migration", "no",
		"--repl-diskless-sync-delay", "0",
		"--repl-timeout", "10",
	}
	return append(args, spec.minReplicasArgs()...)
}

// ClusterDataNodes is the number of data nodes of the cluster topology.
const ClusterDataNodes = 2 * clusterShards

// ClusterBusPort is the port of a data node's cluster bus when it is not chosen for it
// (Redis's default: the client port plus 10000).
const ClusterBusPort = 16379

// localBus is the local backend's bus relays, one per data node, each of which tells
// senders apart by the address they send from (bind-source-addr).
type localBus struct {
	relays map[string]*busRelay // by data node
	src    map[string]string    // data node -> the address it sends from
}

func (b *localBus) Cut(_ context.Context, to, from string, cut bool) error {
	r := b.relays[to]
	if r == nil {
		return fmt.Errorf("%w: data node %q", ErrUnknownNode, to)
	}
	src := "*"
	if from != "*" {
		if src = b.src[from]; src == "" {
			return fmt.Errorf("%w: data node %q", ErrUnknownNode, from)
		}
	}
	r.setCut(src, cut)
	return nil
}

func (b *localBus) UncutAll(context.Context) error {
	for _, r := range b.relays {
		r.uncutAll()
	}
	return nil
}

func (b *localBus) close() {
	for _, r := range b.relays {
		r.close()
	}
}

// StartClusterSet starts the six data nodes under dir, makes them one cluster (slots,
// MEET, REPLICATE) and waits until it has settled. On error it closes what it started.
func StartClusterSet(ctx context.Context, dir string, links *Links, spec RedisSpec, election string) (_ *ClusterSet, err error) {
	bus := &localBus{relays: map[string]*busRelay{}, src: map[string]string{}}
	s := &ClusterSet{links: links, cuts: bus, local: bus}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	var nodes []ClusterNode
	for i := 1; i <= ClusterDataNodes; i++ {
		name := fmt.Sprintf("r%d", i)
		src := fmt.Sprintf("127.0.0.%d", 10+i)
		port, err := redisserver.FreePort()
		if err != nil {
			return nil, err
		}
		busPort, err := redisserver.FreePort()
		if err != nil {
			return nil, err
		}
		peer, err := links.CreateProxy(ctx, peerProxyName(name), "127.0.0.1:0", hostPort(port))
		if err != nil {
			return nil, err
		}
		relay, err := newBusRelay("127.0.0.1:0", hostPort(busPort))
		if err != nil {
			return nil, fmt.Errorf("cluster: bus relay of %s: %w", name, err)
		}
		bus.relays[name], bus.src[name] = relay, src
		_, peerPort, _ := net.SplitHostPort(peer)
		_, relayPort, _ := net.SplitHostPort(relay.Addr())
		args := append(ClusterNodeArgs(spec, busPort, "127.0.0.1", peerPort, relayPort), "--bind-source-addr", src)
		srv, err := redisserver.Start(ctx, redisserver.Options{Dir: filepath.Join(dir, name), Port: port, Args: args})
		if err != nil {
			return nil, fmt.Errorf("cluster: data node %s: %w", name, err)
		}
		nodes = append(nodes, ClusterNode{Name: name, Peer: peer, Bus: relay.Addr(), Proc: localRedis{srv}})
		// Kept as they start, so that a failed start closes them.
		s.data = append(s.data, s.newNode(nodes[len(nodes)-1], i-1))
	}
	if err := s.formAndWatch(ctx, election); err != nil {
		return nil, err
	}
	return s, nil
}

// WatchCluster forms a cluster of the data nodes a backend started (ClusterDataNodes of
// them, r1 first) and watches it until Close, which leaves the processes running. It
// waits until the cluster has settled (ErrUnsettled if it does not within
// SettleTimeout).
func WatchCluster(ctx context.Context, links *Links, cuts BusCuts, nodes []ClusterNode, election string) (*ClusterSet, error) {
	if len(nodes) != ClusterDataNodes {
		return nil, fmt.Errorf("cluster: a cluster of %d data nodes, not %d", ClusterDataNodes, len(nodes))
	}
	s := &ClusterSet{links: links, cuts: cuts, watchOnly: true}
	for i, n := range nodes {
		s.data = append(s.data, s.newNode(n, i))
	}
	if err := s.formAndWatch(ctx, election); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *ClusterSet) newNode(n ClusterNode, i int) *clusterNode {
	proc := n.Proc
	return &clusterNode{name: n.Name, peer: n.Peer, bus: n.Bus, proc: proc, shard: i % clusterShards,
		poll: redis.NewClient(&redis.Options{Addr: n.Peer, MaxRetries: -1, DialerRetries: 1, DialTimeout: 500 * time.Millisecond,
			ContextTimeoutEnabled: true, PoolSize: 2, Protocol: 2,
			Dialer: func(ctx context.Context, network, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, network, proc.Addr())
			}})}
}

// formAndWatch makes the data nodes one cluster, starts the watchers and waits until it
// has settled.
func (s *ClusterSet) formAndWatch(ctx context.Context, election string) error {
	if err := s.form(ctx); err != nil {
		return fmt.Errorf("%w: %v", ErrUnsettled, err)
	}
	slot, err := s.data[0].poll.Do(ctx, "CLUSTER", "KEYSLOT", "{"+election+"}:lock").Int()
	if err != nil {
		return fmt.Errorf("cluster: CLUSTER KEYSLOT: %w", err)
	}
	s.slot = slot
	for k := range clusterShards {
		if lo, hi := slotRange(k); slot >= lo && slot <= hi {
			s.shard = k
		}
		s.primary[k], s.epoch[k] = s.data[k].name, int64(k+1)
	}
	wctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	for _, n := range s.data {
		s.wg.Add(1)
		go s.watch(wctx, n)
	}
	return s.waitSettled(ctx, SettleTimeout)
}

func hostPort(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// form makes the six servers one cluster: distinct config epochs, each primary its
// slots, every node met through its announced addresses, each replica following its
// primary. What `redis-cli --cluster create` does, without its one-second sleeps.
func (s *ClusterSet) form(ctx context.Context) error {
	call := func(n *clusterNode, args ...any) error {
		if err := n.poll.Do(ctx, args...).Err(); err != nil {
			return fmt.Errorf("%s: %v: %w", n.name, args, err)
		}
		return nil
	}
	ids := map[string]string{}
	for i, n := range s.data {
		if err := call(n, "CLUSTER", "SET-CONFIG-EPOCH", i+1); err != nil {
			return err
		}
		if i < clusterShards {
			lo, hi := slotRange(i)
			if err := call(n, "CLUSTER", "ADDSLOTSRANGE", lo, hi); err != nil {
				return err
			}
		}
		id, err := n.poll.Do(ctx, "CLUSTER", "MYID").Text()
		if err != nil {
			return fmt.Errorf("%s: CLUSTER MYID: %w", n.name, err)
		}
		ids[n.name] = id
	}
	for _, n := range s.data[1:] {
		host, port, _ := net.SplitHostPort(n.peer)
		_, bus, _ := net.SplitHostPort(n.bus)
		if err := call(s.data[0], "CLUSTER", "MEET", host, port, bus); err != nil {
			return err
		}
	}
	// A replica can follow its primary once the handshake has told it of the primary.
	done := map[string]bool{}
	return WaitReady(ctx, "the cluster's replicas", SettleTimeout, nil, func(ctx context.Context) error {
		for _, n := range s.data[clusterShards:] {
			if done[n.name] {
				continue
			}
			if err := call(n, "CLUSTER", "REPLICATE", ids[s.data[n.shard].name]); err != nil {
				return err
			}
			done[n.name] = true
		}
		return nil
	})
}

// watch polls data node n's own view of itself every clusterPoll until ctx ends, and
// records a promotion when it says it is a primary that serves slots with a config
// epoch above its shard's primary's. (A restarted old primary says it is a primary for
// a moment too, with its old epoch: not a promotion.)
func (s *ClusterSet) watch(ctx context.Context, n *clusterNode) {
	defer s.wg.Done()
	t := time.NewTicker(clusterPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n.restarting.Load() || !n.proc.Running() {
			continue // killed or starting: dialling it would only fill the runner's log
		}
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		v, err := n.poll.Do(pctx, "CLUSTER", "NODES").Text()
		cancel()
		if err != nil {
			continue
		}
		if me, ok := parseClusterNodes(v).self(); ok {
			s.observe(n, me, time.Now())
		}
	}
}

func (s *ClusterSet) observe(n *clusterNode, me clusterView, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := n.shard
	switch {
	case !me.master || len(me.slots) == 0 || me.epoch <= s.epoch[k]:
	case n.name == s.primary[k]:
		s.epoch[k] = me.epoch
	default:
		if k == s.shard {
			s.promotions.add(Promotion{Time: at, From: s.primary[k], To: n.name})
		}
		s.primary[k], s.epoch[k] = n.name, me.epoch
	}
}

// clusterView is one line of CLUSTER NODES: a node as one node sees it.
type clusterView struct {
	id, addr string // addr: the announced host:port
	flags    []string
	master   bool
	masterID string // of a replica
	epoch    int64
	slots    [][2]int
}

type clusterViews []clusterView

// parseClusterNodes parses the reply of CLUSTER NODES; lines it cannot read are left
// out (the settled check then finds a node missing).
func parseClusterNodes(s string) clusterViews {
	var out clusterViews
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		v := clusterView{id: f[0], addr: f[1], flags: strings.Split(f[2], ","), masterID: f[3]}
		if i := strings.IndexAny(v.addr, "@,"); i >= 0 {
			v.addr = v.addr[:i]
		}
		v.epoch, _ = strconv.ParseInt(f[6], 10, 64)
		for _, fl := range v.flags {
			v.master = v.master || fl == "master"
		}
		for _, r := range f[8:] {
			if strings.HasPrefix(r, "[") { // a slot being migrated
				continue
			}
			lo, hi, found := strings.Cut(r, "-")
			if !found {
				hi = lo
			}
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if err1 == nil && err2 == nil {
				v.slots = append(v.slots, [2]int{a, b})
			}
		}
		out = append(out, v)
	}
	return out
}

func (vs clusterViews) self() (clusterView, bool) {
	for _, v := range vs {
		if v.has("myself") {
			return v, true
		}
	}
	return clusterView{}, false
}

// owner is the address of the node that serves slot, in this view.
func (vs clusterViews) owner(slot int) string {
	for _, v := range vs {
		for _, r := range v.slots {
			if slot >= r[0] && slot <= r[1] {
				return v.addr
			}
		}
	}
	return ""
}

func (v clusterView) has(flag string) bool {
	for _, f := range v.flags {
		if f == flag {
			return true
		}
	}
	return false
}

// settled checks the cluster once: every data node answers, says the cluster is ok,
// sees all six nodes with no failure flag, and places the election's slot on the same
// primary; each shard has one primary (by its own word) and a replica connected to it.
// It returns each shard's primary.
func (s *ClusterSet) settled(ctx context.Context) ([clusterShards]*clusterNode, error) {
	var prim [clusterShards]*clusterNode
	owners := map[string]int{}
	for _, n := range s.data {
		if !n.proc.Running() {
			return prim, fmt.Errorf("%s is not running", n.name)
		}
		info, err := n.poll.Do(ctx, "CLUSTER", "INFO").Text()
		if err != nil {
			return prim, fmt.Errorf("%s: CLUSTER INFO: %w", n.name, err)
		}
		if !strings.Contains(info, "cluster_state:ok") {
			return prim, fmt.Errorf("%s: cluster state not ok", n.name)
		}
		text, err := n.poll.Do(ctx, "CLUSTER", "NODES").Text()
		if err != nil {
			return prim, fmt.Errorf("%s: CLUSTER NODES: %w", n.name, err)
		}
		views := parseClusterNodes(text)
		if len(views) != len(s.data) {
			return prim, fmt.Errorf("%s sees %d nodes", n.name, len(views))
		}
		for _, v := range views {
			for _, bad := range []string{"fail", "fail?", "handshake", "noaddr"} {
				if v.has(bad) {
					return prim, fmt.Errorf("%s sees %s as %s", n.name, v.addr, bad)
				}
			}
		}
		owners[views.owner(s.slot)]++
		if me, ok := views.self(); ok && me.master {
			if prim[n.shard] != nil {
				return prim, fmt.Errorf("shard of %s has two primaries (%s and %s)", n.name, prim[n.shard].name, n.name)
			}
			prim[n.shard] = n
		}
	}
	for k, p := range prim {
		if p == nil {
			return prim, fmt.Errorf("shard %d has no primary", k+1)
		}
	}
	if len(owners) != 1 {
		return prim, fmt.Errorf("the nodes disagree on who serves slot %d: %v", s.slot, owners)
	}
	if o := prim[s.shard].peer; owners[o] == 0 {
		return prim, fmt.Errorf("slot %d is served by %v, not by the primary %s", s.slot, owners, prim[s.shard].name)
	}
	for _, n := range s.data {
		if n == prim[n.shard] {
			continue
		}
		r, m, up, err := role(ctx, n.asDataNode())
		if err != nil {
			return prim, fmt.Errorf("%s: %w", n.name, err)
		}
		if r != "slave" || m != prim[n.shard].peer || !up {
			return prim, fmt.Errorf("%s is not a connected replica of %s (role %s of %s)", n.name, prim[n.shard].name, r, m)
		}
	}
	return prim, nil
}

// waitSettled waits until the cluster is settled, for at most timeout (ErrUnsettled).
func (s *ClusterSet) waitSettled(ctx context.Context, timeout time.Duration) error {
	var prim [clusterShards]*clusterNode
	err := WaitReady(ctx, "the Redis cluster", timeout, nil, func(ctx context.Context) (err error) {
		prim, err = s.settled(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnsettled, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, p := range prim {
		// The watcher sees a promotion within clusterPoll; a settled cluster whose
		// primary it has not seen yet is taken as it is.
		if p.name != s.primary[k] {
			s.primary[k] = p.name
		}
	}
	return nil
}

func (s *ClusterSet) byName(name string) *clusterNode {
	return find(s.data, func(n *clusterNode) bool { return n.name == name })
}

func (s *ClusterSet) byPeer(addr string) *clusterNode {
	return find(s.data, func(n *clusterNode) bool { return n.peer == addr })
}

// current is the primary of the election's shard, as last seen.
func (s *ClusterSet) current() *clusterNode {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byName(s.primary[s.shard])
}

// replica is the other data node of the election's shard.
func (s *ClusterSet) replica() *clusterNode {
	p := s.current()
	for _, n := range s.data {
		if n.shard == p.shard && n != p {
			return n
		}
	}
	return nil
}

// Promotions returns every promotion of the election's shard seen so far, in order.
func (s *ClusterSet) Promotions() []Promotion { return s.promotions.all() }

// WaitPromotion waits until the watcher has seen a promotion away from data node from
// at or after since, for at most SettleTimeout (an error wrapping ErrNoPromotion).
func (s *ClusterSet) WaitPromotion(ctx context.Context, since time.Time, from string) (Promotion, error) {
	return s.promotions.wait(ctx, since, from)
}

// KillPrimary kills the election's primary (SIGKILL) and returns its name.
func (s *ClusterSet) KillPrimary(ctx context.Context) (string, error) {
	p := s.current()
	return p.name, p.proc.Kill(ctx)
}

// Switchover sends CLUSTER FAILOVER to the election shard's replica and returns the
// name of the primary it replaces.
func (s *ClusterSet) Switchover(ctx context.Context) (string, error) {
	p, r := s.current(), s.replica()
	if err := r.poll.Do(ctx, "CLUSTER", "FAILOVER").Err(); err != nil {
		return p.name, fmt.Errorf("cluster: CLUSTER FAILOVER on %s: %w", r.name, err)
	}
	return p.name, nil
}

// CutPrimary adds toxics to the election primary's peer link (its replica's
// replication; the nodes of the election reach it through links of their own) and cuts
// its cluster bus both ways: its own relay drops every sender, every other relay drops
// what it sends. It returns its name.
func (s *ClusterSet) CutPrimary(ctx context.Context, toxics ...Toxic) (string, error) {
	p := s.current()
	if err := s.cutBus(ctx, p, true); err != nil {
		return p.name, err
	}
	for _, t := range toxics {
		if err := s.links.AddToxic(ctx, peerProxyName(p.name), t); err != nil {
			return p.name, err
		}
	}
	return p.name, nil
}

// UncutPrimary undoes CutPrimary for data node name.
func (s *ClusterSet) UncutPrimary(ctx context.Context, name string, toxics ...string) error {
	p := s.byName(name)
	if p == nil {
		return fmt.Errorf("%w: data node %q", ErrUnknownNode, name)
	}
	return errors.Join(s.cutBus(ctx, p, false), s.links.RemoveToxics(ctx, peerProxyName(name), toxics...))
}

// cutBus cuts (or uncuts) data node p's cluster bus both ways.
func (s *ClusterSet) cutBus(ctx context.Context, p *clusterNode, cut bool) error {
	errs := []error{s.cuts.Cut(ctx, p.name, "*", cut)}
	for _, n := range s.data {
		if n != p {
			errs = append(errs, s.cuts.Cut(ctx, n.name, p.name, cut))
		}
	}
	return errors.Join(errs...)
}

// ResetLinks lets every bus relay through everything (the peer links are toxiproxy's,
// which the backend resets).
func (s *ClusterSet) ResetLinks(ctx context.Context) error { return s.cuts.UncutAll(ctx) }

// toxicReplicationCut is the blackhole PauseReplicas puts on the primary's peer link.
const toxicReplicationCut = "fenceline-replication-cut"

// PauseReplicas makes the election shard's replica fall behind: the stream its primary
// sends it is dropped (a blackhole on the primary's peer link, which in a cluster
// carries nothing else). Stopping the replica (SIGSTOP) would not do: the kernel goes on
// receiving the stream into its socket, and the replica applies all of it when it
// continues (measured: 2000 writes sent while it was stopped, the primary killed, none
// lost).
func (s *ClusterSet) PauseReplicas(ctx context.Context) error {
	return s.links.AddToxic(ctx, peerProxyName(s.current().name), Toxic{Name: toxicReplicationCut,
		Type: "timeout", Stream: "downstream", Toxicity: 1, Attributes: map[string]any{"timeout": 0}})
}

// ResumeReplicas removes what PauseReplicas put on any data node's peer link.
func (s *ClusterSet) ResumeReplicas(ctx context.Context) error {
	var errs []error
	for _, n := range s.data {
		errs = append(errs, s.links.RemoveToxics(ctx, peerProxyName(n.name), toxicReplicationCut))
	}
	s.resumeAll(ctx)
	return errors.Join(errs...)
}

// resumeAll continues every data node.
func (s *ClusterSet) resumeAll(ctx context.Context) {
	for _, n := range s.data {
		if n.proc.Running() {
			_ = n.proc.Resume(ctx)
		}
	}
}

// StartRedis continues every data node, starts every one that is not running and
// waits until the cluster settles (ErrUnsettled if it does not within SettleTimeout).
func (s *ClusterSet) StartRedis(ctx context.Context) error {
	s.resumeAll(ctx)
	var errs []error
	for _, n := range s.data {
		if !n.proc.Running() {
			n.restarting.Store(true)
			errs = append(errs, n.proc.Restart(ctx))
			n.restarting.Store(false)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return s.waitSettled(ctx, SettleTimeout)
}

// RedisRole returns data node name's role as it says itself ("master", "slave"), and for
// a replica the name of the data node it replicates (whose link is up or not).
func (s *ClusterSet) RedisRole(ctx context.Context, name string) (r, of string, linkUp bool, err error) {
	d := s.byName(name)
	if d == nil {
		return "", "", false, fmt.Errorf("%w: data node %q", ErrUnknownNode, name)
	}
	r, m, up, err := role(ctx, d.asDataNode())
	if p := s.byPeer(m); p != nil {
		of = p.name
	}
	return r, of, up, err
}

// PrimaryAddr returns the address of the election shard's primary, bypassing every
// proxy, once the cluster has settled (an error wrapping ErrUnsettled if it does not
// within SettleTimeout). Every key of the election is in one slot: its primary holds the
// whole store.
func (s *ClusterSet) PrimaryAddr(ctx context.Context) (string, error) {
	if err := s.waitSettled(ctx, SettleTimeout); err != nil {
		return "", err
	}
	return s.current().proc.Addr(), nil
}

// CurrentAddr is the address of the election shard's primary as last seen.
func (s *ClusterSet) CurrentAddr() string { return s.current().proc.Addr() }

// NodeArgs creates node id's proxies to every data node and returns the node's
// arguments that use them: every data node as a seed, by its announced address, and
// each announced address mapped to the node's own proxy.
func (s *ClusterSet) NodeArgs(ctx context.Context, id string) ([]string, error) {
	var seeds, amap []string
	for _, n := range s.data {
		a, err := s.links.CreateProxy(ctx, nodeProxyName(id, n.name), "127.0.0.1:0", n.proc.Addr())
		if err != nil {
			return nil, err
		}
		seeds = append(seeds, n.peer)
		amap = append(amap, n.peer+"="+a)
	}
	return ClusterNodeFlags(seeds, amap), nil
}

// ClusterNodeFlags are a node's arguments for the cluster topology: the seeds (announced
// addresses) and the address map to the node's own proxies.
func ClusterNodeFlags(seeds, addrMap []string) []string {
	return []string{"--redis-cluster", strings.Join(seeds, ","), "--redis-addr-map", strings.Join(addrMap, ",")}
}

// NodeProxies names node id's proxies (to every data node).
func (s *ClusterSet) NodeProxies(id string) []string {
	var ps []string
	for _, n := range s.data {
		ps = append(ps, nodeProxyName(id, n.name))
	}
	return ps
}

// Close stops the watchers and, for a topology started by the local backend, kills
// every data node and closes the relays. It is idempotent.
func (s *ClusterSet) Close() {
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
	for _, n := range s.data {
		if !s.watchOnly {
			_ = n.proc.Kill(context.Background())
		}
		_ = n.poll.Close()
	}
	if s.local != nil {
		s.local.close()
	}
}

// asDataNode is n as the sentinel topology's helpers (role) take a data node.
func (n *clusterNode) asDataNode() *dataNode {
	return &dataNode{Name: n.name, Proc: n.proc, Peer: n.peer}
}
