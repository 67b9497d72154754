package election_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/internal/redisserver"
)

// An acquire that a Redis Cluster node answers with MOVED (its slot moved to another
// node, as after a failover) did not run: it is recorded as a failure, not as an unknown
// outcome that may have issued a token. Two real cluster nodes; the election's slot is
// the other node's, and the elector talks to the first one only.
func TestMovedAcquireIsAFailure(t *testing.T) {
	ctx := context.Background()
	a := redisserver.NewWith(t, redisserver.Options{Dir: t.TempDir(), Args: []string{"--cluster-enabled", "yes"}})
	b := redisserver.NewWith(t, redisserver.Options{Dir: t.TempDir(), Args: []string{"--cluster-enabled", "yes"}})
	ca, cb := newClient(t, a.Addr()), newClient(t, b.Addr())
	const name = "moved"
	slot, err := ca.ClusterKeySlot(ctx, election.LockKey(name)).Result()
	if err != nil {
		t.Fatal(err)
	}
	// Every slot is served (the cluster is up): the election's by b, the rest by a.
	if err := cb.ClusterAddSlots(ctx, int(slot)).Err(); err != nil {
		t.Fatal(err)
	}
	for _, r := range [][2]int{{0, int(slot) - 1}, {int(slot) + 1, 16383}} {
		if r[0] <= r[1] {
			if err := ca.ClusterAddSlotsRange(ctx, r[0], r[1]).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	host, port, _ := strings.Cut(b.Addr(), ":")
	if err := ca.ClusterMeet(ctx, host, port).Err(); err != nil {
		t.Fatal(err)
	}
	// Until a has learnt that b serves the slot, it answers CLUSTERDOWN: refused too.
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := ca.Get(ctx, election.LockKey(name)).Err()
		if err != nil && strings.HasPrefix(err.Error(), "MOVED ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a never answered MOVED for slot %d: %v", slot, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	n := startNode(t, ca, election.Config{InstanceID: "n1", Name: name, RetryInterval: 50 * time.Millisecond}, nil)
	if !n.rec.eventually("acquire/fail", 3, 10*time.Second) {
		t.Fatalf("MOVED acquires not recorded as failures: %v", n.rec.snapshot())
	}
	for _, s := range n.rec.snapshot() {
		if s == "acquire/unknown" || s == "acquire/ok" {
			t.Errorf("a MOVED acquire recorded as %s: %v", s, n.rec.snapshot())
		}
	}
	// Nothing ran on b either: no token was issued. b answers CLUSTERDOWN until the
	// gossip has told it that every slot is served, which on a loaded machine comes after
	// a has begun to answer MOVED.
	deadline = time.Now().Add(10 * time.Second)
	for {
		v, err := cb.Exists(ctx, election.TokenKey(name)).Result()
		if err != nil && strings.HasPrefix(err.Error(), "CLUSTERDOWN ") && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		if err != nil || v != 0 {
			t.Errorf("token key on b: %d, %v", v, err)
		}
		break
	}
}
