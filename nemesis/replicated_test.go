package nemesis_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/backend/proc"
	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/nemesis"
)

// TestReplicatedFaults: on one sentinel cluster, each Redis fault in turn takes effect
// (the Sentinels promote a replica away from the primary it hit) and heals (the old
// primary is a connected replica of the new one), and the nodes elect and commit again.
func TestReplicatedFaults(t *testing.T) {
	t.Parallel()
	replicatedFaults(t, backend.TopologySentinel)
}

// TestClusterFaults: the same on a Redis Cluster, where each fault hits the shard of
// the election's slot: the replica promotes itself (after cluster-node-timeout, or at
// once on CLUSTER FAILOVER), and after the heal the old primary is its connected
// replica, the isolated one included.
func TestClusterFaults(t *testing.T) {
	t.Parallel()
	replicatedFaults(t, backend.TopologyCluster)
}

func replicatedFaults(t *testing.T, topology string) {
	c := proc.StartT(t, backend.Spec{
		Nodes: 2, SourceRate: 200, Redis: backend.RedisSpec{Topology: topology},
		Node: backend.NodeOptions{LeaseTTL: lease, Batch: 10},
	})
	ctx := context.Background()
	_, tok := leader(t, c, 0)
	kinds := faults.Replicated()
	if topology == backend.TopologyCluster {
		// CLUSTER FAILOVER last. Seen twice in seven runs with it second: the isolated
		// primary's replica, just demoted by CLUSTER FAILOVER after it had won an
		// election of its own before, logged "Failover election won" without taking a
		// new config epoch; the other primaries kept the slot with the isolated one and
		// nobody served it until the heal (the watcher, rightly, saw no promotion).
		kinds = []string{faults.RedisFailover, faults.RedisIsolatePrimary, faults.ReplicationDelay, faults.RedisSwitchover}
	}
	for _, kind := range kinds {
		before := c.Promotions()
		primary := c.RedisAddr()
		f := inject(t, c, kind, nemesis.AimRedis, nemesis.Params{Magnitude: 0.5})
		what, err := f.Heal(ctx, c, nemesis.AimRedis)
		if err != nil {
			logTails(t, c.Dir())
			t.Fatalf("%s: heal: %v", kind, err)
		}
		// A loaded machine may add a promotion of its own (a Sentinel that waited
		// longer than down-after for a PING): the first one must leave the old primary.
		after := c.Promotions()
		if len(after) <= len(before) {
			t.Fatalf("%s: no promotion", kind)
		}
		first, cur := after[len(before)], after[len(after)-1].To
		if c.RedisAddr() == primary {
			t.Fatalf("%s: the primary is still %s", kind, primary)
		}
		r, of, up, err := c.RedisRole(ctx, first.From)
		if err != nil || r != "slave" || of != cur || !up {
			t.Fatalf("%s: after the heal the old primary %s is %s of %q (link up %v, %v), want a replica of %s",
				kind, first.From, r, of, up, err, cur)
		}
		t.Logf("%s: %s", kind, what)
		// Some node leads again, with any token: the faults that lose acknowledged writes
		// (docs/topologies.md) can lose the counter's INCR too, so the new term may be
		// issued the old term's token again. Seen on a Redis Cluster: n1 led with token 3
		// after redis-isolate-primary, and n2 with token 3 after replication-delay's heal;
		// a wait for a greater token then failed (in CI too) though the nodes had elected.
		id, got, err := backend.WaitLeader(ctx, c, 0, electTimeout)
		if err != nil {
			for _, n := range c.Nodes() {
				st, serr := c.NodeStatus(ctx, n)
				t.Logf("%s: %+v %v", n, st, serr)
			}
			logTails(t, c.Dir())
			t.Fatalf("%s: %v", kind, err)
		}
		if got <= tok {
			t.Logf("%s: %s leads with token %d, not above %d: Redis lost the counter's increment, or the term went on", kind, id, got, tok)
		} else {
			t.Logf("%s: %s leads with token %d", kind, id, got)
		}
		tok = max(tok, got)
		commitsAgain(t, c)
	}
}

// logTails logs the last lines of every data node's log, to say why a heal failed.
func logTails(t *testing.T, dir string) {
	logs, _ := filepath.Glob(filepath.Join(dir, "redis", "*", "redis.log"))
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		t.Logf("%s:\n%s", filepath.Base(filepath.Dir(l)), strings.Join(lines[max(len(lines)-25, 0):], "\n"))
	}
}

// commitsAgain waits until the nodes report two more commits than now.
func commitsAgain(t *testing.T, c backend.Backend) {
	t.Helper()
	sum := func() (n int64) {
		for _, id := range c.Nodes() {
			if st, err := c.NodeStatus(context.Background(), id); err == nil {
				n += st.Commits
			}
		}
		return n
	}
	base, deadline := sum(), time.Now().Add(electTimeout)
	for sum() < base+2 {
		if time.Now().After(deadline) {
			t.Fatalf("no commit within %v", electTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A replicated fault on a cluster without replicas fails at once and says why.
func TestReplicatedFaultNeedsReplicas(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 1, false)
	f, err := nemesis.ByKind(faults.RedisFailover)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Inject(context.Background(), c, nemesis.AimRedis, nemesis.Params{LeaseTTL: time.Second}); !errors.Is(err, backend.ErrTopology) && !errors.Is(err, faults.ErrTopology) {
		t.Fatalf("inject redis-failover on a single Redis: %v, want a topology error", err)
	}
}
