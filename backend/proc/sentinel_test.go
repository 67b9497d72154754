package proc_test

import (
	"context"
	"testing"
	"time"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/backend/failovertest"
	"github.com/fenceline/fenceline/backend/proc"
)

func startSentinel(t testing.TB, nodes int, redis backend.RedisSpec, node backend.NodeOptions) *proc.Backend {
	t.Helper()
	redis.Topology = backend.TopologySentinel
	if node.LeaseTTL == 0 {
		node.LeaseTTL = lease
	}
	node.Batch = 20
	return proc.StartT(t, backend.Spec{Nodes: nodes, SourceRate: 500, Redis: redis, Node: node})
}

// Nodes elect and commit through Sentinel (a FailoverClient behind per-node proxies),
// with both mitigations on (WAIT for both replicas, min-replicas-to-write), and the final
// read finds the primary: every acknowledged event is there once.
func TestSentinelElects(t *testing.T) {
	t.Parallel()
	c := startSentinel(t, 2, backend.RedisSpec{MinReplicasToWrite: 1, MinReplicasMaxLag: 5},
		backend.NodeOptions{RedisWait: 2})
	_, tok := waitLeader(t, c, 0)
	failovertest.FirstCommit(t, c, tok-1, 15*time.Second)
	addr, err := c.PrimaryAddr(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if addr != c.RedisAddr() {
		t.Fatalf("PrimaryAddr %s, RedisAddr %s", addr, c.RedisAddr())
	}
	verify(t, c)
}
