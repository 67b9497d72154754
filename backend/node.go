package backend

import (
	"cmp"
	"fmt"
	"strconv"
	"time"

	"github.com/fenceline/fenceline/election"
)

// Spec is what a cluster runs, whatever the backend.
type Spec struct {
	// Dir is the run directory: history/<node>.jsonl and logs/<node>.log are written
	// below it. Required.
	Dir string
	// Nodes is the number of nodes. Default 3.
	Nodes int
	// Node are the options every node is started with.
	Node NodeOptions
	// NoPersistence runs Redis without an append-only file. Default false (AOF on).
	NoPersistence bool
	// SourceRate is the event source's rate in events per second; 0 means unlimited.
	SourceRate float64
	// SourceBacklog is how many events the source has available at start (its
	// --backlog): the run's start cursor, so that the feed goes on from there.
	SourceBacklog int64
	// Redis is how Redis runs. Default: one server (TopologySingle).
	Redis RedisSpec
	// RedlockServers is how many more Redis servers, without persistence, the backend
	// runs beside the single Redis for nodes that lock on several (the zoo's
	// redlock-majority); each node reaches each through a proxy of its own
	// (RedlockProxyName) and gets their addresses as --redlock-servers. Default 0; the
	// local backend and the single topology only.
	RedlockServers int
	// EtcdMembers is the size of the etcd cluster the backend runs beside Redis: 0 (none),
	// 1 or 3; default 1 for a target that elects through etcd (targets.Target.Etcd).
	// Each node reaches each member through a proxy of its own (EtcdProxyName).
	EtcdMembers int
}

// Redis topologies.
const (
	TopologySingle   = "single"   // one redis-server
	TopologySentinel = "sentinel" // a primary, two replicas, three Sentinels
	TopologyCluster  = "cluster"  // a Redis Cluster: three primaries, one replica each
)

// Topologies lists the Redis topologies.
func Topologies() []string { return []string{TopologySingle, TopologySentinel, TopologyCluster} }

// RedisSpec is how Redis runs.
type RedisSpec struct {
	// Topology is TopologySingle (default), TopologySentinel or TopologyCluster.
	Topology string
	// MinReplicasToWrite and MinReplicasMaxLag (seconds) are the data nodes'
	// min-replicas-to-write and min-replicas-max-lag: a primary with fewer replicas
	// acknowledging within the lag refuses writes. Default 0 (off); with replicas only.
	MinReplicasToWrite, MinReplicasMaxLag int
}

// Replicated reports whether the topology has replicas (and so faults of its own).
func (r RedisSpec) Replicated() bool {
	return r.Topology == TopologySentinel || r.Topology == TopologyCluster
}

// Validate says what is wrong with r.
func (r RedisSpec) Validate() error {
	switch r.Topology {
	case "", TopologySingle:
		if r.MinReplicasToWrite != 0 {
			return fmt.Errorf("cluster: min-replicas-to-write needs replicas (topology %s)", TopologySentinel)
		}
	case TopologySentinel, TopologyCluster:
	default:
		return fmt.Errorf("cluster: unknown Redis topology %q (single, sentinel, cluster)", r.Topology)
	}
	replicas := sentinelReplicas
	if r.Topology == TopologyCluster {
		replicas = 1 // per primary
	}
	if r.MinReplicasToWrite < 0 || r.MinReplicasToWrite > replicas || r.MinReplicasMaxLag < 0 {
		return fmt.Errorf("cluster: min-replicas-to-write %d (0..%d with %s), max lag %ds", r.MinReplicasToWrite, replicas, r.Topology, r.MinReplicasMaxLag)
	}
	return nil
}

// NodeOptions are the settings every node of a cluster is started with. Zero values
// leave the node's own defaults in place.
type NodeOptions struct {
	// Election is the election name, the hash tag of every key. Default "fenceline".
	Election string
	// LeaseTTL, RenewInterval and RetryInterval configure the elector.
	LeaseTTL      time.Duration
	RenewInterval time.Duration
	RetryInterval time.Duration
	// TakeoverOnDisconnect is the node's --takeover-on-disconnect
	// (election.Config.TakeoverOnDisconnect).
	TakeoverOnDisconnect bool
	// Batch is the listener's batch size (events per commit).
	Batch int
	// Variant selects a deliberately broken design (see `fenceline node -h`); "" is the
	// reference.
	Variant string
	// Workload is "listener" (default) or "register".
	Workload string
	// Target is the election and store the node runs (package targets); "" is the
	// reference.
	Target string
	// Cmd, if set, is a program in any language run as each node instead of the
	// fenceline binary (docs/node-protocol.md): a shell command line, given its
	// settings in the environment (Env) rather than as flags.
	Cmd string
	// Chaos enables the node's fault hooks (the clock). The harness always sets it.
	Chaos bool
	// RedisWait is the node's --redis-wait (WAIT for this many replicas after every
	// script), RedisWaitTimeout its --redis-wait-timeout. Default 0: no WAIT.
	RedisWait        int
	RedisWaitTimeout time.Duration
	// Store is where the nodes keep the cursor: "" (Redis) or "postgres", in which case
	// the backend runs a PostgreSQL and gives each node its --postgres.
	Store string
	// StartToken and StartCursor, when not 0, are the nodes' --start-token and
	// --start-cursor: the first node to start seeds an empty store with them.
	StartToken, StartCursor int64
}

// Args are the `fenceline node` arguments for node id, reaching Redis and the source at
// the given addresses, serving its control endpoint on control, writing the address it
// bound to addrFile (when not empty) and its history to historyPath.
func (o NodeOptions) Args(id, redisAddr, sourceURL, control, addrFile, historyPath string) []string {
	a := []string{"node",
		"--id", id,
		"--redis", redisAddr,
		"--source", sourceURL,
		"--control", control,
		"--history", historyPath,
	}
	if addrFile != "" {
		a = append(a, "--addr-file", addrFile)
	}
	if o.Election != "" {
		a = append(a, "--election", o.Election)
	}
	if o.LeaseTTL > 0 {
		a = append(a, "--lease-ttl", o.LeaseTTL.String())
	}
	if o.RenewInterval > 0 {
		a = append(a, "--renew-interval", o.RenewInterval.String())
	}
	if o.RetryInterval > 0 {
		a = append(a, "--retry-interval", o.RetryInterval.String())
	}
	if o.TakeoverOnDisconnect {
		a = append(a, "--takeover-on-disconnect")
	}
	if o.Batch > 0 {
		a = append(a, "--batch", strconv.Itoa(o.Batch))
	}
	if o.Variant != "" {
		a = append(a, "--variant", o.Variant)
	}
	if o.Target != "" {
		a = append(a, "--target", o.Target)
	}
	if o.Workload != "" {
		a = append(a, "--workload", o.Workload)
	}
	if o.Chaos {
		a = append(a, "--chaos")
	}
	if o.RedisWait > 0 {
		a = append(a, "--redis-wait", strconv.Itoa(o.RedisWait))
	}
	if o.RedisWaitTimeout > 0 {
		a = append(a, "--redis-wait-timeout", o.RedisWaitTimeout.String())
	}
	if o.Store != "" {
		a = append(a, "--store", o.Store)
	}
	if o.StartToken != 0 {
		a = append(a, "--start-token", strconv.FormatInt(o.StartToken, 10))
	}
	if o.StartCursor != 0 {
		a = append(a, "--start-cursor", strconv.FormatInt(o.StartCursor, 10))
	}
	return a
}

// Env is the environment of a node run with Cmd: the node protocol's variables
// (docs/node-protocol.md), with the same meaning as Args's flags.
func (o NodeOptions) Env(id, redisAddr, sourceURL, control, addrFile, historyPath string) []string {
	lease := o.LeaseTTL
	if lease <= 0 {
		lease = election.DefaultLeaseTTL
	}
	env := []string{
		"FENCELINE_NODE_ID=" + id,
		"FENCELINE_REDIS=" + redisAddr,
		"FENCELINE_SOURCE=" + sourceURL,
		"FENCELINE_CONTROL=" + control,
		"FENCELINE_ADDR_FILE=" + addrFile,
		"FENCELINE_HISTORY=" + historyPath,
		"FENCELINE_LEASE_TTL_MS=" + strconv.FormatInt(lease.Milliseconds(), 10),
		"FENCELINE_ELECTION=" + cmp.Or(o.Election, "fenceline"),
	}
	if o.Batch > 0 {
		env = append(env, "FENCELINE_BATCH="+strconv.Itoa(o.Batch))
	}
	return env
}

// NodeIDs returns "n1".."nN".
func NodeIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("n%d", i+1)
	}
	return ids
}
