package faults

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Fault kinds.
const (
	Kill                 = "kill"                   // SIGKILL, restart at heal
	Stop                 = "stop"                   // SIGTERM (graceful release), restart at heal
	Pause                = "pause"                  // SIGSTOP longer than the lease, SIGCONT at heal
	PartitionReset       = "partition-reset"        // node's Redis link refused/reset
	PartitionBlackhole   = "partition-blackhole"    // node's Redis link silently drops data
	Delay                = "delay"                  // latency longer than the lease on the node's Redis link
	Clock                = "clock"                  // node's injected clock jumped or slowed
	RedisRestart         = "redis-restart"          // Redis killed and restarted (append-only file on)
	RedisRestartVolatile = "redis-restart-volatile" // the same without persistence: tokens repeat
	PostgresRestart      = "postgres-restart"       // PostgreSQL crashed (immediate shutdown) and restarted
	PartitionPostgres    = "partition-postgres"     // node's PostgreSQL link silently drops data

	// The faults of a run with etcd (--etcd-members): a member's process, or a node's
	// links to every member. See docs/faults.md for what each does with one member.
	EtcdKill      = "etcd-kill"      // SIGKILL of an etcd member (the raft leader of three), restarted at heal
	EtcdPause     = "etcd-pause"     // SIGSTOP of that member, longer than the lease; SIGCONT at heal
	EtcdRestart   = "etcd-restart"   // an etcd member killed and restarted at once
	PartitionEtcd = "partition-etcd" // node's links to every etcd member silently drop data

	// Failpoint faults (a failpoints build): each arms failpoints on the leader, or on
	// whoever leads next, at a moment that matters. `failpoint` in a list names them all.
	FPLateCommit     = "fp-late-commit"      // the leader's next commit and renewal held back 1.5 leases
	FPLateRenew      = "fp-late-renew"       // the leader's next renewal held back 1.5 leases
	FPLateRelease    = "fp-late-release"     // the leader stopped; its release held back 1.25 leases
	FPReleaseRace    = "fp-release-race"     // the leader stopped; a two-step release stalled between its steps
	FPStallNewLeader = "fp-stall-new-leader" // the leader killed; its successor stalls 1.5 leases just after winning
	FPLoadRace       = "fp-load-race"        // the leader's commit delayed past the lease; its successor stalls between its load and its first commit
	FPTakeoverRace   = "fp-takeover-race"    // the leader killed; every standby stalls between seeing it gone and taking over (takeover on disconnect)
	FPReleaseLost    = "fp-release-lost"     // the leader stopped; its release fails before it is sent

	// The fault of a run whose nodes take over on disconnect: the node's presence
	// channel denied to subscribers (an ACL on Redis's channels) while the node lives and
	// reaches Redis on its other connections; a standby takes its lease over, and its next
	// renewal is refused.
	PresenceLoss = "presence-loss"
	// Its companion: the leader's presence denied until every standby has seen it gone
	// and stalls before its takeover, then given back and kept; a takeover script run
	// after that must find the holder present and leave its lock alone.
	PresenceFlap = "presence-flap"

	// The fault of the event source, the environment rather than the system under test:
	// the node's link to the source resets every connection, so that each fetch fails,
	// as when the ledger's API is down. The term must go on, and its work retry.
	SourceOutage = "source-outage"

	// The fault of a run whose nodes lock on several Redis servers of their own
	// (variants.RedlockMajority): the leader cut off from one server until its lock there
	// runs out, then its links slowed and another server restarted without persistence.
	RedlockRestart = "redlock-restart"

	// The faults of a replicated Redis topology (sentinel, cluster): they act on its data
	// nodes; in a cluster, on the shard of the election's hash slot.
	RedisFailover       = "redis-failover"        // SIGKILL of the primary; Sentinel promotes a replica, or the replica itself
	RedisSwitchover     = "redis-switchover"      // a planned SENTINEL FAILOVER, or CLUSTER FAILOVER on the replica
	RedisIsolatePrimary = "redis-isolate-primary" // primary cut off from replicas and Sentinels (the cluster bus), not from the nodes
	ReplicationDelay    = "replication-delay"     // replicas fall behind, then the primary dies: the promotion loses the lag
)

// Failpoints returns the failpoint fault kinds. The slice is new at each call.
func Failpoints() []string {
	return []string{FPLateCommit, FPLateRenew, FPLateRelease, FPReleaseRace, FPStallNewLeader, FPLoadRace, FPTakeoverRace, FPReleaseLost}
}

// Replicated returns the fault kinds that need a topology with replicas. The slice is
// new at each call.
func Replicated() []string {
	return []string{RedisFailover, RedisSwitchover, RedisIsolatePrimary, ReplicationDelay}
}

// singleOnly are the kinds that restart "the" Redis: a topology with several has none.
var singleOnly = []string{RedisRestart, RedisRestartVolatile}

// ErrTopology is returned (wrapped) for a fault the Redis topology cannot have.
var ErrTopology = errors.New("fault not available in this Redis topology")

// AllFor returns what `--nemesis all` means for a topology: All, or, with replicas,
// the node faults and the replicated faults (not the restart of a single Redis).
func AllFor(replicated bool) []string {
	if !replicated {
		return All()
	}
	var out []string
	for _, k := range All() {
		if !slices.Contains(singleOnly, k) {
			out = append(out, k)
		}
	}
	return append(out, Replicated()...)
}

// CheckTopology returns an error wrapping ErrTopology for the first kind the topology
// cannot have: a replicated fault without replicas, a restart of the single Redis with them.
func CheckTopology(kinds []string, replicated bool) error {
	for _, k := range kinds {
		switch {
		case !replicated && slices.Contains(Replicated(), k):
			return fmt.Errorf("%w: %s needs replicas (--redis-topology sentinel or cluster)", ErrTopology, k)
		case replicated && slices.Contains(singleOnly, k):
			return fmt.Errorf("%w: %s restarts the single Redis (--redis-topology single); with replicas use %s",
				ErrTopology, k, strings.Join(Replicated(), ", "))
		}
	}
	return nil
}

// All returns every fault kind that the reference implementation must survive:
// `--nemesis all`. RedisRestartVolatile is not in it: without persistence tokens repeat
// by design. The slice is new at each call.
func All() []string {
	return []string{Kill, Stop, Pause, PartitionReset, PartitionBlackhole, Delay, Clock, RedisRestart}
}

// Postgres returns the fault kinds of a run whose store is PostgreSQL, which `--nemesis
// all` adds there. The slice is new at each call.
func Postgres() []string { return []string{PostgresRestart, PartitionPostgres} }

// Etcd returns the fault kinds of a run with etcd, which `--nemesis all` adds there.
// The slice is new at each call.
func Etcd() []string { return []string{EtcdKill, EtcdPause, EtcdRestart, PartitionEtcd} }

// ErrNoEtcd is returned (wrapped) for an etcd fault in a run without etcd.
var ErrNoEtcd = errors.New("fault needs etcd")

// CheckEtcd returns an error wrapping ErrNoEtcd for the first etcd fault of kinds when
// the run has no etcd.
func CheckEtcd(kinds []string, etcd bool) error {
	if etcd {
		return nil
	}
	for _, k := range kinds {
		if slices.Contains(Etcd(), k) {
			return fmt.Errorf("%w: %s acts on etcd, which only a target that elects through it runs (--target etcd or etcd-fenced)", ErrNoEtcd, k)
		}
	}
	return nil
}

// Known returns every fault kind. The slice is new at each call. The failpoint faults
// are not in All: `--nemesis all` draws the schedules it always drew; name them (or
// `failpoint`) to add them. Nor are the replicated faults (see AllFor), nor
// RedlockRestart, which only a run of variants.RedlockMajority can have, nor
// PresenceLoss and PresenceFlap, which only a run with takeover on disconnect can tell
// from nothing, nor SourceOutage, a fault of the environment that `--nemesis all` never
// drew.
func Known() []string {
	return append(append(append(append(append(All(), RedisRestartVolatile, RedlockRestart, PresenceLoss, PresenceFlap, SourceOutage), Failpoints()...), Replicated()...), Postgres()...), Etcd()...)
}

// IsKnown reports whether kind is a fault kind.
func IsKnown(kind string) bool { return slices.Contains(Known(), kind) }

// ErrUnknown is returned for a fault name that is not known.
var ErrUnknown = errors.New("unknown fault")

// ParseList parses a comma-separated list of fault kinds: "all", "none", "partition"
// (both partition flavours) and "failpoint" (every failpoint fault) are accepted. The result is sorted and without duplicates.
// An unknown name is an error wrapping ErrUnknown that lists the known ones.
func ParseList(s string) ([]string, error) { return ParseListFor(s, false) }

// ParseListFor is ParseList for a topology: "all" is AllFor(replicated), and a kind the
// topology cannot have is an error wrapping ErrTopology.
func ParseListFor(s string, replicated bool) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		switch f = strings.TrimSpace(f); f {
		case "":
		case "none":
		case "all":
			out = append(out, AllFor(replicated)...)
		case "partition":
			out = append(out, PartitionReset, PartitionBlackhole)
		case "failpoint":
			out = append(out, Failpoints()...)
		default:
			if !IsKnown(f) {
				return nil, fmt.Errorf("%w: %q (known: %s, all, none)", ErrUnknown, f, strings.Join(Known(), ", "))
			}
			out = append(out, f)
		}
	}
	sort.Strings(out)
	out = slices.Compact(out)
	if replicated {
		// Without replicas the check is the caller's (ParseList parses only).
		if err := CheckTopology(out, true); err != nil {
			return nil, err
		}
	}
	return out, nil
}
