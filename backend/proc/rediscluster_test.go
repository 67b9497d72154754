package proc_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/backend/failovertest"
	"github.com/fenceline/fenceline/backend/proc"
	"github.com/fenceline/fenceline/election"
)

// Nodes elect and commit through a Redis Cluster (a ClusterClient behind per-node
// proxies, the announced addresses mapped to them), with both mitigations on (WAIT for
// the one replica, min-replicas-to-write): every script of the election and of the
// store runs on the cluster, so no key of an election lies outside its hash slot
// (a CROSSSLOT error would stop the node at its first acquire or commit). A graceful
// stop releases (the release script and its PUBLISH), and the final read, one
// MULTI/EXEC on the slot's primary, finds every acknowledged event once.
func TestClusterElects(t *testing.T) {
	t.Parallel()
	c := proc.StartT(t, backend.Spec{Nodes: 2, SourceRate: 500,
		Redis: backend.RedisSpec{Topology: backend.TopologyCluster, MinReplicasToWrite: 1, MinReplicasMaxLag: 5},
		Node:  backend.NodeOptions{LeaseTTL: lease, Batch: 20, RedisWait: 1}})
	id, tok := waitLeader(t, c, 0)
	failovertest.FirstCommit(t, c, tok-1, 15*time.Second)
	ctx := context.Background()
	if err := c.StopNode(ctx, id); err != nil {
		t.Fatal(err)
	}
	_, tok2 := waitLeader(t, c, tok, id)
	failovertest.FirstCommit(t, c, tok2-1, 15*time.Second)
	addr, err := c.PrimaryAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if addr != c.RedisAddr() {
		t.Fatalf("PrimaryAddr %s, RedisAddr %s", addr, c.RedisAddr())
	}
	verify(t, c)
	// Close leaves nothing: no data node (each runs with --dir under the run
	// directory), the primary's port closed.
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range cmdlines {
		if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), c.Dir()) {
			t.Errorf("a process of the cluster survived Close: %s %q", f, strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		conn.Close()
		t.Errorf("the primary %s still accepts connections", addr)
	}
}

// The election's scripts, run by go-redis's ClusterClient on a cluster whose slots are
// spread over three primaries: keys of one hash tag are served together; keys of two
// elections would not be (the test's counterexample, so that a green run means the
// cluster really checks).
func TestClusterScriptsOneSlot(t *testing.T) {
	t.Parallel()
	c := proc.StartT(t, backend.Spec{Nodes: 1, Redis: backend.RedisSpec{Topology: backend.TopologyCluster}})
	ctx := context.Background()
	rc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{c.RedisAddr()}, MaxRedirects: -1, Protocol: 2})
	defer rc.Close()
	// The nodes' announced addresses are the peer proxies: reachable from here too.
	for _, name := range []string{"a", "b", "c", "fenceline"} {
		if _, err := election.Leader(ctx, rc, name); err != nil {
			t.Fatalf("election %q: the info script on the cluster: %v", name, err)
		}
	}
	err := rc.Eval(ctx, "return redis.call('GET', KEYS[1])", []string{election.LockKey("a"), election.LockKey("fenceline")}).Err()
	if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Fatalf("a script over two elections' keys: %v, want CROSSSLOT", err)
	}
}
