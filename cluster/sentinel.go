package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/internal/redisserver"
)

// The sentinel topology: data nodes r1 (the first primary), r2, r3 and Sentinels s1..s3.
const (
	sentinelReplicas = 2
	sentinelCount    = 3
	// SentinelMaster is the name the Sentinels monitor the primary under.
	SentinelMaster = "fenceline"
	// downAfter is Sentinel's down-after-milliseconds: a primary silent this long is
	// subjectively down; with a quorum of 2 a failover starts.
	downAfter = time.Second
	// failoverTimeout is Sentinel's failover-timeout. It also spaces two failovers of
	// the same master (twice this), which the faults' schedule must allow for.
	failoverTimeout = 2 * time.Second
	// SettleTimeout bounds the wait for a promotion, for a demoted primary to follow the
	// new one, and for the topology to settle after a heal.
	SettleTimeout = 30 * time.Second
)

// ErrNoPromotion is wrapped when no replica was promoted within SettleTimeout, and
// ErrUnsettled when the topology did not settle (one primary, every other data node its
// replica): the run cannot go on as planned and ends unknown.
var (
	ErrNoPromotion = errors.New("cluster: no promotion")
	ErrUnsettled   = errors.New("cluster: Redis topology did not settle")
)

// PromotionsFile is where a replicated topology's promotions are written in the run
// directory when the cluster closes: a JSON array of Promotion.
const PromotionsFile = "redis/promotions.json"

// Promotion is a change of primary, as the Sentinels announced it (+switch-master).
type Promotion struct {
	Time time.Time `json:"time"`
	From string    `json:"from"` // data node names: "r1"
	To   string    `json:"to"`
}

// dataNode is one redis-server of a replicated topology. Sentinels and replicas know it
// by peer, the listen address of its peer proxy: Sentinel hands one address per server
// to everyone, so the replication and Sentinel traffic to it share that link, and a fault
// on it cuts both. Nodes reach it through proxies of their own (see sentinelSet.nodeArgs).
type dataNode struct {
	name string
	srv  *redisserver.Server
	peer string
}

// sentinelSet runs the sentinel topology for a Local cluster and watches its promotions.
type sentinelSet struct {
	links     *Links
	data      []*dataNode
	sentinels []*redisserver.Server

	mu         sync.Mutex
	primary    string // data node name, as the last +switch-master said
	promotions []Promotion

	cancel context.CancelFunc
	wg     sync.WaitGroup
	subs   []*redis.Client
}

// peerProxyName names data node name's proxy for Sentinels and replicas.
func peerProxyName(name string) string { return name + "-peers" }

// nodeProxyName names node id's proxy to a data node or a Sentinel.
func nodeProxyName(id, target string) string { return RedisProxyName(id) + "-" + target }

// startSentinelSet starts the data nodes and the Sentinels under dir and waits until the
// Sentinels see the replicas. On error it closes what it started.
func startSentinelSet(ctx context.Context, dir string, links *Links, spec RedisSpec) (_ *sentinelSet, err error) {
	s := &sentinelSet{links: links, primary: "r1"}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	// Every peer address first: a replica announces its own and follows the first's.
	var ports []int
	for i := 1; i <= 1+sentinelReplicas; i++ {
		name := fmt.Sprintf("r%d", i)
		port, err := redisserver.FreePort()
		if err != nil {
			return nil, err
		}
		peer, err := links.CreateProxy(ctx, peerProxyName(name), "127.0.0.1:0", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			return nil, err
		}
		s.data = append(s.data, &dataNode{name: name, peer: peer})
		ports = append(ports, port)
	}
	for i, d := range s.data {
		_, peerPort, _ := net.SplitHostPort(d.peer)
		conf := ""
		if i > 0 {
			// In the config file, not on the command line: Sentinel rewrites the role there.
			conf = "replicaof " + strings.Replace(s.data[0].peer, ":", " ", 1) + "\n"
		}
		args := []string{
			"--replica-announce-ip", "127.0.0.1", "--replica-announce-port", peerPort,
			// A replica that (re)connects is synced at once, not after the default 5 s.
			"--repl-diskless-sync-delay", "0",
			"--repl-timeout", "10",
		}
		if spec.MinReplicasToWrite > 0 {
			args = append(args, "--min-replicas-to-write", strconv.Itoa(spec.MinReplicasToWrite),
				"--min-replicas-max-lag", strconv.Itoa(max(spec.MinReplicasMaxLag, 1)))
		}
		d.srv, err = redisserver.Start(ctx, redisserver.Options{
			Dir: filepath.Join(dir, d.name), Port: ports[i], Config: conf, Args: args,
		})
		if err != nil {
			return nil, fmt.Errorf("cluster: data node %s: %w", d.name, err)
		}
	}
	for i := 1; i <= sentinelCount; i++ {
		conf := fmt.Sprintf(`sentinel monitor %[1]s %[2]s 2
sentinel down-after-milliseconds %[1]s %[3]d
sentinel failover-timeout %[1]s %[4]d
sentinel parallel-syncs %[1]s %[5]d
sentinel announce-ip 127.0.0.1
`, SentinelMaster, strings.Replace(s.data[0].peer, ":", " ", 1), downAfter.Milliseconds(),
			failoverTimeout.Milliseconds(), sentinelReplicas)
		srv, err := redisserver.Start(ctx, redisserver.Options{
			Dir: filepath.Join(dir, fmt.Sprintf("s%d", i)), Sentinel: true, Config: conf,
		})
		if err != nil {
			return nil, fmt.Errorf("cluster: sentinel s%d: %w", i, err)
		}
		s.sentinels = append(s.sentinels, srv)
	}
	wctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	for _, sen := range s.sentinels {
		c := redis.NewClient(&redis.Options{Addr: sen.Addr(), DialTimeout: time.Second})
		s.subs = append(s.subs, c)
		ps := c.Subscribe(wctx, "+switch-master")
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer ps.Close()
			for {
				select {
				case <-wctx.Done():
					return
				case m, ok := <-ps.Channel():
					if !ok {
						return
					}
					s.switched(m.Payload)
				}
			}
		}()
	}
	if err := s.waitSettled(ctx, SettleTimeout); err != nil {
		return nil, err
	}
	return s, nil
}

// switched records a +switch-master message: "<master> <old ip> <old port> <new ip>
// <new port>". Every Sentinel announces the same switch: the first one counts.
func (s *sentinelSet) switched(payload string) {
	f := strings.Fields(payload)
	if len(f) != 5 || f[0] != SentinelMaster {
		return
	}
	from, to := s.byPeer(net.JoinHostPort(f[1], f[2])), s.byPeer(net.JoinHostPort(f[3], f[4]))
	if to == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if to.name == s.primary {
		return
	}
	p := Promotion{Time: time.Now(), To: to.name}
	if from != nil {
		p.From = from.name
	}
	s.primary = to.name
	s.promotions = append(s.promotions, p)
}

func (s *sentinelSet) byPeer(addr string) *dataNode {
	for _, d := range s.data {
		if d.peer == addr {
			return d
		}
	}
	return nil
}

func (s *sentinelSet) byName(name string) *dataNode {
	for _, d := range s.data {
		if d.name == name {
			return d
		}
	}
	return nil
}

// current is the primary as the last +switch-master said.
func (s *sentinelSet) current() *dataNode {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byName(s.primary)
}

// promotionSince returns the first promotion at or after since, away from from.
func (s *sentinelSet) promotionSince(since time.Time, from string) (Promotion, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.promotions {
		if !p.Time.Before(since) && p.From == from {
			return p, true
		}
	}
	return Promotion{}, false
}

// sentinelPrimary asks every Sentinel for the primary's address and returns the data
// node a majority names.
func (s *sentinelSet) sentinelPrimary(ctx context.Context) (*dataNode, error) {
	votes := map[string]int{}
	var errs []error
	for _, sen := range s.sentinels {
		v, err := redisCall(ctx, sen.Addr(), "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SentinelMaster)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if a, ok := v.([]any); ok && len(a) == 2 {
			votes[net.JoinHostPort(fmt.Sprint(a[0]), fmt.Sprint(a[1]))]++
		}
	}
	for addr, n := range votes {
		if n > len(s.sentinels)/2 {
			if d := s.byPeer(addr); d != nil {
				return d, nil
			}
			return nil, fmt.Errorf("cluster: Sentinels name an unknown primary %s", addr)
		}
	}
	return nil, fmt.Errorf("cluster: no majority of Sentinels agrees on a primary (%v %v)", votes, errors.Join(errs...))
}

// role returns a data node's role ("master", "slave") and, for a replica, the address
// of its primary and whether its link to it is up. It asks the node directly.
func role(ctx context.Context, d *dataNode) (r, master string, linkUp bool, err error) {
	v, err := redisCall(ctx, d.srv.Addr(), "ROLE")
	if err != nil {
		return "", "", false, err
	}
	a, ok := v.([]any)
	if !ok || len(a) == 0 {
		return "", "", false, fmt.Errorf("cluster: ROLE of %s: %v", d.name, v)
	}
	r = fmt.Sprint(a[0])
	if r == "slave" && len(a) >= 4 {
		master = net.JoinHostPort(fmt.Sprint(a[1]), fmt.Sprint(a[2]))
		linkUp = fmt.Sprint(a[3]) == "connected"
	}
	return r, master, linkUp, nil
}

// settled checks the topology once: a majority of Sentinels names a primary that says it
// is one, and every other running data node replicates it over a link that is up.
func (s *sentinelSet) settled(ctx context.Context) (*dataNode, error) {
	p, err := s.sentinelPrimary(ctx)
	if err != nil {
		return nil, err
	}
	for _, d := range s.data {
		r, m, up, err := role(ctx, d)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.name, err)
		}
		switch {
		case d == p && r != "master":
			return nil, fmt.Errorf("the Sentinels' primary %s says it is a %s", d.name, r)
		case d != p && (r != "slave" || m != p.peer || !up):
			return nil, fmt.Errorf("%s is not a connected replica of %s (role %s of %s)", d.name, p.name, r, m)
		}
	}
	return p, nil
}

// waitSettled waits until the topology is settled, for at most timeout.
func (s *sentinelSet) waitSettled(ctx context.Context, timeout time.Duration) error {
	var p *dataNode
	err := WaitReady(ctx, "the sentinel topology", timeout, nil, func(ctx context.Context) (err error) {
		p, err = s.settled(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnsettled, err)
	}
	s.mu.Lock()
	s.primary = p.name
	s.mu.Unlock()
	return nil
}

// resumeAll continues every data node (SIGCONT): one a fault stopped must not stay so.
func (s *sentinelSet) resumeAll() {
	for _, d := range s.data {
		_ = d.srv.Resume()
	}
}

// restartDead continues every data node and starts every data node and Sentinel that
// is not running.
func (s *sentinelSet) restartDead(ctx context.Context) error {
	s.resumeAll()
	var errs []error
	for _, d := range s.data {
		if d.srv.PID() == 0 {
			errs = append(errs, d.srv.Restart(ctx))
		}
	}
	for _, sen := range s.sentinels {
		if sen.PID() == 0 {
			errs = append(errs, sen.Restart(ctx))
		}
	}
	return errors.Join(errs...)
}

// nodeArgs creates node id's proxies to every data node and Sentinel and returns the
// node's arguments that use them: the Sentinels through its proxies, and every data
// node's peer address mapped to its own proxy, so that a fault on the node's links
// leaves everyone else's alone.
func (s *sentinelSet) nodeArgs(ctx context.Context, id string) ([]string, error) {
	var sens, amap []string
	for _, d := range s.data {
		a, err := s.links.CreateProxy(ctx, nodeProxyName(id, d.name), "127.0.0.1:0", d.srv.Addr())
		if err != nil {
			return nil, err
		}
		amap = append(amap, d.peer+"="+a)
	}
	for i, sen := range s.sentinels {
		a, err := s.links.CreateProxy(ctx, nodeProxyName(id, fmt.Sprintf("s%d", i+1)), "127.0.0.1:0", sen.Addr())
		if err != nil {
			return nil, err
		}
		sens = append(sens, a)
	}
	return []string{"--redis-sentinels", strings.Join(sens, ","), "--redis-master", SentinelMaster,
		"--redis-addr-map", strings.Join(amap, ",")}, nil
}

// nodeProxies names node id's proxies (to every data node and Sentinel).
func (s *sentinelSet) nodeProxies(id string) []string {
	var ps []string
	for _, d := range s.data {
		ps = append(ps, nodeProxyName(id, d.name))
	}
	for i := range s.sentinels {
		ps = append(ps, nodeProxyName(id, fmt.Sprintf("s%d", i+1)))
	}
	return ps
}

// close kills every process and stops the watchers. It is idempotent.
func (s *sentinelSet) close() {
	if s.cancel != nil {
		s.cancel()
	}
	for _, c := range s.subs {
		_ = c.Close()
	}
	s.wg.Wait()
	s.subs = nil
	for _, sen := range s.sentinels {
		sen.Kill()
	}
	for _, d := range s.data {
		if d.srv != nil {
			d.srv.Kill()
		}
	}
}

// redisCall sends one command to addr with a fresh connection and returns its reply.
// The harness's own probes use it: no pool, no retries, a short deadline.
func redisCall(ctx context.Context, addr string, args ...any) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second,
		ContextTimeoutEnabled: true, PoolSize: 1, Protocol: 2})
	defer c.Close()
	return c.Do(ctx, args...).Result()
}

// The replicated topology's abilities, used by the Redis faults of package nemesis
// (which find them by type assertion). Each returns an error wrapping ErrTopology on a
// cluster without replicas.

func (l *Local) replicated() (*sentinelSet, error) {
	if l.sentinel == nil {
		return nil, fmt.Errorf("%w: no replicas (topology %s)", ErrTopology, l.cfg.Redis.Topology)
	}
	return l.sentinel, nil
}

// KillPrimary kills the current primary (SIGKILL) and returns its name. In the
// cluster topology: the primary of the election's slot.
func (l *Local) KillPrimary(ctx context.Context) (string, error) {
	if l.rcluster != nil {
		return l.rcluster.killPrimary(), nil
	}
	s, err := l.replicated()
	if err != nil {
		return "", err
	}
	p := s.current()
	p.srv.Kill()
	return p.name, nil
}

// Switchover asks a Sentinel for a planned failover (SENTINEL FAILOVER) and returns the
// name of the primary it replaces.
func (l *Local) Switchover(ctx context.Context) (string, error) {
	if l.rcluster != nil {
		return l.rcluster.switchover(ctx)
	}
	s, err := l.replicated()
	if err != nil {
		return "", err
	}
	p := s.current()
	if _, err := redisCall(ctx, s.sentinels[0].Addr(), "SENTINEL", "FAILOVER", SentinelMaster); err != nil {
		return p.name, fmt.Errorf("cluster: SENTINEL FAILOVER: %w", err)
	}
	return p.name, nil
}

// CutPrimary adds toxics to the current primary's peer link (its replicas and the
// Sentinels; the nodes reach it through links of their own) and returns its name.
func (l *Local) CutPrimary(ctx context.Context, toxics ...Toxic) (string, error) {
	if l.rcluster != nil {
		return l.rcluster.cutPrimary(ctx, toxics...)
	}
	s, err := l.replicated()
	if err != nil {
		return "", err
	}
	p := s.current()
	for _, t := range toxics {
		if err := l.links.AddToxic(ctx, peerProxyName(p.name), t); err != nil {
			return p.name, err
		}
	}
	return p.name, nil
}

// UncutPrimary removes the named toxics from data node name's peer link.
func (l *Local) UncutPrimary(ctx context.Context, name string, toxics ...string) error {
	if l.rcluster != nil {
		return l.rcluster.uncutPrimary(ctx, name, toxics...)
	}
	if _, err := l.replicated(); err != nil {
		return err
	}
	return l.links.RemoveToxics(ctx, peerProxyName(name), toxics...)
}

// PauseReplicas stops every replica (SIGSTOP): the primary goes on accepting writes
// they do not receive. ResumeReplicas continues them. In the cluster topology the
// election primary's stream to its replica is dropped instead (see
// clusterSet.pauseReplica).
func (l *Local) PauseReplicas(ctx context.Context) error {
	if l.rcluster != nil {
		return l.rcluster.pauseReplica(ctx)
	}
	s, err := l.replicated()
	if err != nil {
		return err
	}
	p := s.current()
	var errs []error
	for _, d := range s.data {
		if d != p {
			errs = append(errs, d.srv.Pause())
		}
	}
	return errors.Join(errs...)
}

// ResumeReplicas continues every data node that PauseReplicas stopped.
func (l *Local) ResumeReplicas(ctx context.Context) error {
	if l.rcluster != nil {
		return l.rcluster.resumeReplicas(ctx)
	}
	s, err := l.replicated()
	if err != nil {
		return err
	}
	s.resumeAll()
	return nil
}

// WaitPromotion waits until the Sentinels have announced (or, in the cluster topology,
// the watcher has seen) a promotion away from data node from at or after since, for at most SettleTimeout (an error wrapping ErrNoPromotion).
func (l *Local) WaitPromotion(ctx context.Context, since time.Time, from string) (Promotion, error) {
	var promotionSince func(since time.Time, from string) (Promotion, bool)
	if l.rcluster != nil {
		promotionSince = l.rcluster.promotionSince
	} else {
		s, err := l.replicated()
		if err != nil {
			return Promotion{}, err
		}
		promotionSince = s.promotionSince
	}
	var p Promotion
	err := WaitReady(ctx, "a promotion away from "+from, SettleTimeout, nil, func(context.Context) error {
		var ok bool
		if p, ok = promotionSince(since, from); !ok {
			return errors.New("none announced yet")
		}
		return nil
	})
	if err != nil {
		return Promotion{}, fmt.Errorf("%w: %v", ErrNoPromotion, err)
	}
	return p, nil
}

// Promotions returns every promotion the Sentinels announced so far, in order.
func (l *Local) Promotions() []Promotion {
	if l.rcluster != nil {
		return l.rcluster.promotionList()
	}
	if l.sentinel == nil {
		return nil
	}
	l.sentinel.mu.Lock()
	defer l.sentinel.mu.Unlock()
	return append([]Promotion(nil), l.sentinel.promotions...)
}

// RedisRole returns data node name's role as it says itself ("master", "slave"), and for
// a replica the name of the data node it replicates (whose link is up or not).
func (l *Local) RedisRole(ctx context.Context, name string) (r, of string, linkUp bool, err error) {
	if c := l.rcluster; c != nil {
		d := c.byName(name)
		if d == nil {
			return "", "", false, fmt.Errorf("%w: data node %q", ErrUnknownNode, name)
		}
		r, m, up, err := role(ctx, &d.dataNode)
		if p := c.byPeer(m); p != nil {
			of = p.name
		}
		return r, of, up, err
	}
	s, err := l.replicated()
	if err != nil {
		return "", "", false, err
	}
	d := s.byName(name)
	if d == nil {
		return "", "", false, fmt.Errorf("%w: data node %q", ErrUnknownNode, name)
	}
	r, m, up, err := role(ctx, d)
	if p := s.byPeer(m); p != nil {
		of = p.name
	}
	return r, of, up, err
}
