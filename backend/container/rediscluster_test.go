package container_test

import (
	"context"
	"strings"
	"testing"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/faults"
)

// TestClusterFaults: the cluster topology (three primaries with a replica each, every
// data node a container, replication through toxiproxy, the bus through the relay
// container) starts on docker and a node elects through it. redis-isolate-primary cuts
// the election's primary off from its replica and every other data node's bus (the
// relay holds back what that one container sends): its replica is promoted, and after
// the heal the old primary is its connected replica. redis-failover then kills the new
// primary's container with the same outcome. The nodes commit again after each; Close
// records the promotions and leaves nothing behind.
func TestClusterFaults(t *testing.T) {
	c, commits := startReplicated(t, backend.TopologyCluster)
	ctx := context.Background()
	for _, kind := range []string{faults.RedisIsolatePrimary, faults.RedisFailover} {
		before := len(c.Promotions())
		redisFault(t, c, kind)
		ps := c.Promotions()
		if len(ps) <= before {
			t.Fatalf("%s: no promotion (%+v)", kind, ps)
		}
		first, primary := ps[before], ps[len(ps)-1].To
		if r, of, up, err := c.RedisRole(ctx, first.From); err != nil || r != "slave" || of != primary || !up {
			t.Fatalf("%s: old primary %s: role %q of %q (link up %v), %v; want a replica of %s",
				kind, first.From, r, of, up, err, primary)
		}
		commits = waitCommits(t, c, commits)
	}
	if b, err := closePromotions(t, c); err != nil || strings.Count(string(b), `"from"`) < 2 {
		t.Fatalf("%s: %s %v", backend.PromotionsFile, b, err)
	}
}
