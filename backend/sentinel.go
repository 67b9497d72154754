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

// RedisProcess is one redis-server of a replicated topology, a data node or a Sentinel,
// as a backend runs it: a process (local) or a container (docker). Its methods block
// until done.
type RedisProcess interface {
	// Addr is where the runner reaches it now, bypassing every proxy.
	Addr() string
	// Kill kills it (SIGKILL) and waits until it is gone.
	Kill(ctx context.Context) error
	// Restart starts it again if it is not running, and waits until it answers.
	Restart(ctx context.Context) error
	// Running reports whether it runs (stopped by Pause counts).
	Running() bool
	// Pause stops it (SIGSTOP, the cgroup freezer); Resume continues it, and does
	// nothing to one that is not paused.
	Pause(ctx context.Context) error
	Resume(ctx context.Context) error
}

// DataNode is one redis-server of a replicated topology. Sentinels and replicas know it
// by Peer, the listen address of its peer proxy (PeerProxyName): Sentinel hands one
// address per server to everyone, so the replication and Sentinel traffic to it share
// that link, and a fault on it cuts both. Nodes reach it through proxies of their own,
// with Peer mapped to them (--redis-addr-map).
type DataNode struct {
	Name string // "r1", "r2"...; r1 is the first primary
	Proc RedisProcess
	Peer string
}

type dataNode = DataNode

// SentinelSet is a running sentinel topology, whatever the backend: it watches the
// Sentinels' promotions and has the replicated topology's abilities that the Redis
// faults of package nemesis use. Its methods are safe for concurrent use.
type SentinelSet struct {
	links     *Links
	data      []*dataNode
	sentinels []RedisProcess

	// watchOnly: the backend owns the processes (Close leaves them running).
	watchOnly bool

	mu         sync.Mutex
	primary    string // data node name, as the last +switch-master said
	promotions promotionLog

	cancel context.CancelFunc
	wg     sync.WaitGroup
	subs   []*redis.Client
}

// PeerProxyName names data node name's proxy for Sentinels and replicas.
func PeerProxyName(name string) string { return name + "-peers" }

// NodeProxyName names node id's proxy to a data node or a Sentinel ("r1", "s1").
func NodeProxyName(id, target string) string { return RedisProxyName(id) + "-" + target }

func peerProxyName(name string) string       { return PeerProxyName(name) }
func nodeProxyName(id, target string) string { return NodeProxyName(id, target) }

// The shape of the sentinel topology and the settings every backend gives it.
const (
	// SentinelReplicas and SentinelCount are its replicas and Sentinels.
	SentinelReplicas = sentinelReplicas
	SentinelCount    = sentinelCount
)

// SentinelConfig is the config file a Sentinel starts from (it rewrites it): it
// monitors the primary at peer (host:port, the first primary's peer address) with a
// quorum of 2.
func SentinelConfig(peer string) string {
	return fmt.Sprintf(`sentinel monitor %[1]s %[2]s 2
sentinel down-after-milliseconds %[1]s %[3]d
sentinel failover-timeout %[1]s %[4]d
sentinel parallel-syncs %[1]s %[5]d
`, SentinelMaster, strings.Replace(peer, ":", " ", 1), downAfter.Milliseconds(),
		failoverTimeout.Milliseconds(), sentinelReplicas)
}

// DataNodeArgs are a data node's redis-server arguments beyond persistence: it
// announces itself as announceIP:announcePort (its peer address), syncs a replica at
// once, and applies the topology's min-replicas settings.
func DataNodeArgs(spec RedisSpec, announceIP, announcePort string) []string {
	args := []string{
		"--replica-announce-ip", announceIP, "--replica-announce-port", announcePort,
		// A replica that (re)connects is synced at once, not after the default 5 s.
		"--repl-diskless-sync-delay", "0",
		"--repl-timeout", "10",
	}
	return append(args, spec.minReplicasArgs()...)
}

// minReplicasArgs are a data node's min-replicas settings (none unless
// MinReplicasToWrite is set; the lag at least 1 s).
func (spec RedisSpec) minReplicasArgs() []string {
	if spec.MinReplicasToWrite <= 0 {
		return nil
	}
	return []string{"--min-replicas-to-write", strconv.Itoa(spec.MinReplicasToWrite),
		"--min-replicas-max-lag", strconv.Itoa(max(spec.MinReplicasMaxLag, 1))}
}

// localRedis is a redisserver.Server as a RedisProcess.
type localRedis struct{ *redisserver.Server }

func (r localRedis) Kill(context.Context) error { r.Server.Kill(); return nil }
func (r localRedis) Running() bool              { return r.PID() != 0 }
func (r localRedis) Pause(context.Context) error {
	return r.Server.Pause()
}
func (r localRedis) Resume(context.Context) error { return r.Server.Resume() }
func (r localRedis) Restart(ctx context.Context) error {
	if r.PID() != 0 {
		return nil
	}
	return r.Server.Restart(ctx)
}

// StartSentinelSet starts the data nodes and the Sentinels under dir and waits until the
// Sentinels see the replicas. On error it closes what it started.
func StartSentinelSet(ctx context.Context, dir string, links *Links, spec RedisSpec) (_ *SentinelSet, err error) {
	s := &SentinelSet{links: links, primary: "r1"}
	defer func() {
		if err != nil {
			s.Close()
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
		s.data = append(s.data, &dataNode{Name: name, Peer: peer})
		ports = append(ports, port)
	}
	for i, d := range s.data {
		_, peerPort, _ := net.SplitHostPort(d.Peer)
		conf := ""
		if i > 0 {
			conf = ReplicaConfig(s.data[0].Peer)
		}
		srv, err := redisserver.Start(ctx, redisserver.Options{
			Dir: filepath.Join(dir, d.Name), Port: ports[i], Config: conf, Args: DataNodeArgs(spec, "127.0.0.1", peerPort),
		})
		if err != nil {
			return nil, fmt.Errorf("cluster: data node %s: %w", d.Name, err)
		}
		d.Proc = localRedis{srv}
	}
	for i := 1; i <= sentinelCount; i++ {
		srv, err := redisserver.Start(ctx, redisserver.Options{
			Dir: filepath.Join(dir, fmt.Sprintf("s%d", i)), Sentinel: true,
			Config: SentinelConfig(s.data[0].Peer) + "sentinel announce-ip 127.0.0.1\n",
		})
		if err != nil {
			return nil, fmt.Errorf("cluster: sentinel s%d: %w", i, err)
		}
		s.sentinels = append(s.sentinels, localRedis{srv})
	}
	if err := s.watch(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// ReplicaConfig is the config file a replica of the data node at peer starts from: the
// role is in the file, not on the command line, because Sentinel rewrites it there.
func ReplicaConfig(peer string) string {
	return "replicaof " + strings.Replace(peer, ":", " ", 1) + "\n"
}

// WatchSentinels watches a sentinel topology that a backend started: data (r1, the
// first primary, first) and its Sentinels. It subscribes to every Sentinel's
// promotions and waits until the topology has settled (ErrUnsettled if it does not
// within SettleTimeout; the caller then removes what it started). Close stops the
// watchers; the backend stops the processes.
func WatchSentinels(ctx context.Context, links *Links, data []DataNode, sentinels []RedisProcess) (*SentinelSet, error) {
	s := &SentinelSet{links: links, primary: data[0].Name, sentinels: sentinels, watchOnly: true}
	for i := range data {
		s.data = append(s.data, &data[i])
	}
	if err := s.watch(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// watch subscribes to the Sentinels' promotions and waits until the topology settles.
func (s *SentinelSet) watch(ctx context.Context) error {
	wctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	for _, sen := range s.sentinels {
		// Dial the Sentinel where it is at each (re)connection: a container's port
		// changes when it is restarted.
		c := redis.NewClient(&redis.Options{DialTimeout: time.Second,
			Dialer: func(ctx context.Context, network, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, network, sen.Addr())
			}})
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
	return s.waitSettled(ctx, SettleTimeout)
}

// switched records a +switch-master message: "<master> <old ip> <old port> <new ip>
// <new port>". Every Sentinel announces the same switch: the first one counts.
func (s *SentinelSet) switched(payload string) {
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
	if to.Name == s.primary {
		return
	}
	p := Promotion{Time: time.Now(), To: to.Name}
	if from != nil {
		p.From = from.Name
	}
	s.primary = to.Name
	s.promotions.add(p)
}

func (s *SentinelSet) byPeer(addr string) *dataNode {
	return find(s.data, func(d *dataNode) bool { return d.Peer == addr })
}

func (s *SentinelSet) byName(name string) *dataNode {
	return find(s.data, func(d *dataNode) bool { return d.Name == name })
}

// current is the primary as the last +switch-master said.
func (s *SentinelSet) current() *dataNode {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byName(s.primary)
}

// sentinelPrimary asks every Sentinel for the primary's address and returns the data
// node a majority names.
func (s *SentinelSet) sentinelPrimary(ctx context.Context) (*dataNode, error) {
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
	v, err := redisCall(ctx, d.Proc.Addr(), "ROLE")
	if err != nil {
		return "", "", false, err
	}
	a, ok := v.([]any)
	if !ok || len(a) == 0 {
		return "", "", false, fmt.Errorf("cluster: ROLE of %s: %v", d.Name, v)
	}
	r = fmt.Sprint(a[0])
	if r == "slave" && len(a) >= 4 {
		master = net.JoinHostPort(fmt.Sprint(a[1]), fmt.Sprint(a[2]))
		linkUp = fmt.Sprint(a[3]) == "connected"
	}
	return r, master, linkUp, nil
}

// settled checks the topology once: a majority of Sentinels names a primary that says it
// is one, and every other running data node replicates it over a link that is up. With
// repair, a replica that follows another replica (a chain) is pointed at the primary.
func (s *SentinelSet) settled(ctx context.Context, repair bool) (*dataNode, error) {
	p, err := s.sentinelPrimary(ctx)
	if err != nil {
		return nil, err
	}
	roles := map[string]string{} // peer address -> role
	for _, d := range s.data {
		if r, _, _, err := role(ctx, d); err == nil {
			roles[d.Peer] = r
		}
	}
	for _, d := range s.data {
		r, m, up, err := role(ctx, d)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.Name, err)
		}
		switch {
		case d == p && r != "master":
			return nil, fmt.Errorf("the Sentinels' primary %s says it is a %s", d.Name, r)
		case d != p && r == "slave" && roles[m] == "slave" && repair:
			return nil, s.repoint(ctx, d, p)
		case d != p && (r != "slave" || m != p.Peer || !up):
			return nil, fmt.Errorf("%s is not a connected replica of %s (role %s of %s)", d.Name, p.Name, r, m)
		}
	}
	if err := s.sentinelsReady(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// repoint makes replica d follow primary p (REPLICAOF, kept in its config file) and
// returns why the topology is not settled yet.
func (s *SentinelSet) repoint(ctx context.Context, d, p *dataNode) error {
	host, port, err := net.SplitHostPort(p.Peer)
	if err != nil {
		return err
	}
	if _, err := redisCall(ctx, d.Proc.Addr(), "REPLICAOF", host, port); err != nil {
		return fmt.Errorf("%s: REPLICAOF %s: %w", d.Name, p.Name, err)
	}
	_, _ = redisCall(ctx, d.Proc.Addr(), "CONFIG", "REWRITE")
	return fmt.Errorf("%s followed a replica; pointed it at %s", d.Name, p.Name)
}

// sentinelsReady checks that every Sentinel knows the others and sees every replica up:
// until then a failover can find no Sentinel majority to authorize it, or no replica to
// promote ("-failover-abort-no-good-slave"). A Sentinel learns of the replicas from the
// primary's INFO (every 10 s) and of the other Sentinels from their hello messages
// (every 2 s).
func (s *SentinelSet) sentinelsReady(ctx context.Context) error {
	for i, sen := range s.sentinels {
		v, err := redisCall(ctx, sen.Addr(), "SENTINEL", "SENTINELS", SentinelMaster)
		if err != nil {
			return fmt.Errorf("s%d: %w", i+1, err)
		}
		if a, _ := v.([]any); len(a) < len(s.sentinels)-1 {
			return fmt.Errorf("s%d knows %d other Sentinels, not %d", i+1, len(a), len(s.sentinels)-1)
		}
		if v, err = redisCall(ctx, sen.Addr(), "SENTINEL", "REPLICAS", SentinelMaster); err != nil {
			return fmt.Errorf("s%d: %w", i+1, err)
		}
		a, _ := v.([]any)
		up := 0
		for _, r := range a {
			if f := field(r, "flags"); f != "" && !strings.Contains(f, "down") && !strings.Contains(f, "disconnected") {
				up++
			}
		}
		if up < len(s.data)-1 {
			return fmt.Errorf("s%d sees %d replicas up, not %d", i+1, up, len(s.data)-1)
		}
	}
	return nil
}

// field returns key's value in a Sentinel's flat key-value reply.
func field(v any, key string) string {
	a, _ := v.([]any)
	for i := 0; i+1 < len(a); i += 2 {
		if fmt.Sprint(a[i]) == key {
			return fmt.Sprint(a[i+1])
		}
	}
	return ""
}

// strayGrace is how long a replica may follow another replica before waitSettled points
// it at the primary, as an operator would. Sentinel learns of replicas only from the
// primary's INFO, so one chained behind a demoted primary (seen after a switchover that
// Sentinel aborted and was asked for again) is invisible to it and never reconfigured.
const strayGrace = 10 * time.Second

// waitSettled waits until the topology is settled, for at most timeout.
func (s *SentinelSet) waitSettled(ctx context.Context, timeout time.Duration) error {
	var p *dataNode
	start := time.Now()
	err := WaitReady(ctx, "the sentinel topology", timeout, nil, func(ctx context.Context) (err error) {
		p, err = s.settled(ctx, time.Since(start) > strayGrace)
		return err
	})
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnsettled, err)
	}
	s.mu.Lock()
	s.primary = p.Name
	s.mu.Unlock()
	return nil
}

// resumeAll continues every data node that runs: one a fault stopped must not stay so.
// It is best effort, as SIGCONT to every process is: a node that died meanwhile is
// restarted by restartDead.
func (s *SentinelSet) resumeAll(ctx context.Context) error {
	for _, d := range s.data {
		if d.Proc.Running() {
			_ = d.Proc.Resume(ctx)
		}
	}
	return nil
}

// restartDead continues every data node and starts every data node and Sentinel that
// is not running.
func (s *SentinelSet) restartDead(ctx context.Context) error {
	errs := []error{s.resumeAll(ctx)}
	for _, d := range s.data {
		if !d.Proc.Running() {
			errs = append(errs, d.Proc.Restart(ctx))
		}
	}
	for _, sen := range s.sentinels {
		if !sen.Running() {
			errs = append(errs, sen.Restart(ctx))
		}
	}
	return errors.Join(errs...)
}

// NodeArgs creates node id's proxies to every data node and Sentinel and returns the
// node's arguments that use them: the Sentinels through its proxies, and every data
// node's peer address and every Sentinel's own address mapped to its own proxy, so that a fault on the node's links
// leaves everyone else's alone.
func (s *SentinelSet) NodeArgs(ctx context.Context, id string) ([]string, error) {
	var sens, amap []string
	for _, d := range s.data {
		a, err := s.links.CreateProxy(ctx, nodeProxyName(id, d.Name), "127.0.0.1:0", d.Proc.Addr())
		if err != nil {
			return nil, err
		}
		amap = append(amap, d.Peer+"="+a)
	}
	for i, sen := range s.sentinels {
		a, err := s.links.CreateProxy(ctx, nodeProxyName(id, fmt.Sprintf("s%d", i+1)), "127.0.0.1:0", sen.Addr())
		if err != nil {
			return nil, err
		}
		sens = append(sens, a)
		// The client learns the other Sentinels' own addresses from them (SENTINEL
		// SENTINELS) and would dial those around a partition: they map to the proxies too.
		amap = append(amap, sen.Addr()+"="+a)
	}
	return []string{"--redis-sentinels", strings.Join(sens, ","), "--redis-master", SentinelMaster,
		"--redis-addr-map", strings.Join(amap, ",")}, nil
}

// NodeProxies names node id's proxies (to every data node and Sentinel).
func (s *SentinelSet) NodeProxies(id string) []string {
	var ps []string
	for _, d := range s.data {
		ps = append(ps, nodeProxyName(id, d.Name))
	}
	for i := range s.sentinels {
		ps = append(ps, nodeProxyName(id, fmt.Sprintf("s%d", i+1)))
	}
	return ps
}

// Close stops the watchers and, for a topology started by the local backend, kills
// every process. It is idempotent.
func (s *SentinelSet) Close() {
	if s.cancel != nil {
		s.cancel()
	}
	for _, c := range s.subs {
		_ = c.Close()
	}
	s.wg.Wait()
	s.subs = nil
	if s.watchOnly {
		return
	}
	for _, sen := range s.sentinels {
		_ = sen.Kill(context.Background())
	}
	for _, d := range s.data {
		if d.Proc != nil {
			_ = d.Proc.Kill(context.Background())
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
// (which find them by type assertion on a backend's cluster, which delegates to its
// SentinelSet). Each of Local's returns an error wrapping ErrTopology on a cluster
// without replicas.

// ReplicaFaults gives a backend the replicated topology's abilities by forwarding them
// to its Replicas: a backend embeds it and sets it once its topology runs. Each method
// returns an error wrapping ErrTopology when there are no replicas.
type ReplicaFaults struct {
	Set      Replicas // nil: the single topology
	Topology string   // the topology's name, for the error
}

func (f *ReplicaFaults) replicated() (Replicas, error) {
	if f.Set == nil {
		return nil, fmt.Errorf("%w: no replicas (topology %s)", ErrTopology, f.Topology)
	}
	return f.Set, nil
}

// Replicas is a running replicated topology, SentinelSet or ClusterSet, whatever the
// backend: what the Redis faults act on and the final read asks for its primary.
type Replicas interface {
	KillPrimary(ctx context.Context) (string, error)
	Switchover(ctx context.Context) (string, error)
	CutPrimary(ctx context.Context, toxics ...Toxic) (string, error)
	UncutPrimary(ctx context.Context, name string, toxics ...string) error
	PauseReplicas(ctx context.Context) error
	ResumeReplicas(ctx context.Context) error
	WaitPromotion(ctx context.Context, since time.Time, from string) (Promotion, error)
	Promotions() []Promotion
	RedisRole(ctx context.Context, name string) (r, of string, linkUp bool, err error)
	StartRedis(ctx context.Context) error
	PrimaryAddr(ctx context.Context) (string, error)
	CurrentAddr() string
	// ResetLinks lifts what the topology cuts besides toxiproxy's toxics.
	ResetLinks(ctx context.Context) error
	Close()
}

var (
	_ LocalReplicas = (*SentinelSet)(nil)
	_ LocalReplicas = (*ClusterSet)(nil)
)

// LocalReplicas is Replicas with what the local backend asks of a topology it started.
type LocalReplicas interface {
	Replicas
	NodeArgs(ctx context.Context, id string) ([]string, error)
	NodeProxies(id string) []string
}

// ResetLinks does nothing: every link of the sentinel topology is toxiproxy's.
func (s *SentinelSet) ResetLinks(context.Context) error { return nil }

// KillPrimary kills the current primary (SIGKILL) and returns its name.
func (s *SentinelSet) KillPrimary(ctx context.Context) (string, error) {
	p := s.current()
	return p.Name, p.Proc.Kill(ctx)
}

// Switchover asks a Sentinel for a planned failover (SENTINEL FAILOVER) and returns the
// name of the primary it replaces.
func (s *SentinelSet) Switchover(ctx context.Context) (string, error) {
	p := s.current()
	if _, err := redisCall(ctx, s.sentinels[0].Addr(), "SENTINEL", "FAILOVER", SentinelMaster); err != nil {
		return p.Name, fmt.Errorf("cluster: SENTINEL FAILOVER: %w", err)
	}
	return p.Name, nil
}

// CutPrimary adds toxics to the current primary's peer link (its replicas and the
// Sentinels; the nodes reach it through links of their own) and returns its name.
func (s *SentinelSet) CutPrimary(ctx context.Context, toxics ...Toxic) (string, error) {
	p := s.current()
	for _, t := range toxics {
		if err := s.links.AddToxic(ctx, peerProxyName(p.Name), t); err != nil {
			return p.Name, err
		}
	}
	return p.Name, nil
}

// UncutPrimary removes the named toxics from data node name's peer link.
func (s *SentinelSet) UncutPrimary(ctx context.Context, name string, toxics ...string) error {
	return s.links.RemoveToxics(ctx, peerProxyName(name), toxics...)
}

// PauseReplicas stops every replica (SIGSTOP, or the cgroup freezer): the primary goes
// on accepting writes they do not receive. ResumeReplicas continues them.
func (s *SentinelSet) PauseReplicas(ctx context.Context) error {
	p := s.current()
	var errs []error
	for _, d := range s.data {
		if d != p {
			errs = append(errs, d.Proc.Pause(ctx))
		}
	}
	return errors.Join(errs...)
}

// ResumeReplicas continues every data node that PauseReplicas stopped.
func (s *SentinelSet) ResumeReplicas(ctx context.Context) error { return s.resumeAll(ctx) }

// WaitPromotion waits until the Sentinels have announced a promotion away from data node
// from at or after since, for at most SettleTimeout (an error wrapping ErrNoPromotion).
func (s *SentinelSet) WaitPromotion(ctx context.Context, since time.Time, from string) (Promotion, error) {
	return s.promotions.wait(ctx, since, from)
}

// Promotions returns every promotion the Sentinels announced so far, in order.
func (s *SentinelSet) Promotions() []Promotion { return s.promotions.all() }

// RedisRole returns data node name's role as it says itself ("master", "slave"), and for
// a replica the name of the data node it replicates (whose link is up or not).
func (s *SentinelSet) RedisRole(ctx context.Context, name string) (r, of string, linkUp bool, err error) {
	d := s.byName(name)
	if d == nil {
		return "", "", false, fmt.Errorf("%w: data node %q", ErrUnknownNode, name)
	}
	r, m, up, err := role(ctx, d)
	if p := s.byPeer(m); p != nil {
		of = p.Name
	}
	return r, of, up, err
}

// StartRedis continues every data node, starts every data node and Sentinel that is
// down and waits until the topology settles (ErrUnsettled if it does not within
// SettleTimeout).
func (s *SentinelSet) StartRedis(ctx context.Context) error {
	if err := s.restartDead(ctx); err != nil {
		return err
	}
	return s.waitSettled(ctx, SettleTimeout)
}

// PrimaryAddr returns the address of the primary, bypassing every proxy, once the
// topology has settled (an error wrapping ErrUnsettled if it does not within
// SettleTimeout).
func (s *SentinelSet) PrimaryAddr(ctx context.Context) (string, error) {
	if err := s.waitSettled(ctx, SettleTimeout); err != nil {
		return "", err
	}
	return s.current().Proc.Addr(), nil
}

// CurrentAddr is the address of the primary the Sentinels last announced.
func (s *SentinelSet) CurrentAddr() string { return s.current().Proc.Addr() }

// KillPrimary kills the current primary (SIGKILL) and returns its name.
func (f *ReplicaFaults) KillPrimary(ctx context.Context) (string, error) {
	s, err := f.replicated()
	if err != nil {
		return "", err
	}
	return s.KillPrimary(ctx)
}

// Switchover asks for a planned failover (SENTINEL FAILOVER, CLUSTER FAILOVER) and
// returns the name of the primary it replaces.
func (f *ReplicaFaults) Switchover(ctx context.Context) (string, error) {
	s, err := f.replicated()
	if err != nil {
		return "", err
	}
	return s.Switchover(ctx)
}

// CutPrimary adds toxics to the current primary's peer link (and, in a cluster, cuts
// its bus) and returns its name.
func (f *ReplicaFaults) CutPrimary(ctx context.Context, toxics ...Toxic) (string, error) {
	s, err := f.replicated()
	if err != nil {
		return "", err
	}
	return s.CutPrimary(ctx, toxics...)
}

// UncutPrimary undoes CutPrimary for data node name.
func (f *ReplicaFaults) UncutPrimary(ctx context.Context, name string, toxics ...string) error {
	s, err := f.replicated()
	if err != nil {
		return err
	}
	return s.UncutPrimary(ctx, name, toxics...)
}

// PauseReplicas stops every replica (SIGSTOP). In the cluster topology the election
// primary's stream to its replica is dropped instead (see ClusterSet.PauseReplicas).
func (f *ReplicaFaults) PauseReplicas(ctx context.Context) error {
	s, err := f.replicated()
	if err != nil {
		return err
	}
	return s.PauseReplicas(ctx)
}

// ResumeReplicas undoes PauseReplicas.
func (f *ReplicaFaults) ResumeReplicas(ctx context.Context) error {
	s, err := f.replicated()
	if err != nil {
		return err
	}
	return s.ResumeReplicas(ctx)
}

// WaitPromotion waits for a promotion away from from (see SentinelSet.WaitPromotion).
func (f *ReplicaFaults) WaitPromotion(ctx context.Context, since time.Time, from string) (Promotion, error) {
	s, err := f.replicated()
	if err != nil {
		return Promotion{}, err
	}
	return s.WaitPromotion(ctx, since, from)
}

// Promotions returns every promotion seen so far, in order.
func (f *ReplicaFaults) Promotions() []Promotion {
	if f.Set == nil {
		return nil
	}
	return f.Set.Promotions()
}

// RedisRole returns data node name's role (see SentinelSet.RedisRole).
func (f *ReplicaFaults) RedisRole(ctx context.Context, name string) (r, of string, linkUp bool, err error) {
	s, err := f.replicated()
	if err != nil {
		return "", "", false, err
	}
	return s.RedisRole(ctx, name)
}

// ConnectedReplicas asks the Redis at addr how many replicas are connected to it
// (INFO replication, connected_slaves), bypassing every proxy.
func ConnectedReplicas(ctx context.Context, addr string) (int, error) {
	v, err := redisCall(ctx, addr, "INFO", "replication")
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(fmt.Sprint(v), "\n") {
		if n, ok := strings.CutPrefix(strings.TrimSpace(l), "connected_slaves:"); ok {
			return strconv.Atoi(n)
		}
	}
	return 0, fmt.Errorf("cluster: INFO replication of %s has no connected_slaves", addr)
}
