package container_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/backend/container"
	"github.com/fenceline/fenceline/docker"
	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/harness"
	"github.com/fenceline/fenceline/nemesis"
)

// The docker cluster has every ability the faults look for by type assertion: a fault
// that finds none would report an error on docker only.
var (
	_ nemesis.Replicated      = (*container.Backend)(nil)
	_ nemesis.PostgresProcess = (*container.Backend)(nil)
	_ nemesis.PostgresLinks   = (*container.Backend)(nil)
)

// TestSentinelFailover: the sentinel topology (a primary, two replicas, three Sentinels,
// each a container, every link through toxiproxy) starts on docker and a node elects
// through it; redis-failover kills the primary's container, the Sentinels promote a
// replica, the old primary comes back as its replica, and the nodes commit again
// through the new primary. Close records the promotion and leaves nothing behind.
func TestSentinelFailover(t *testing.T) {
	c, commits := startReplicated(t, backend.TopologySentinel)
	ctx := context.Background()
	if r, _, _, err := c.RedisRole(ctx, "r1"); err != nil || r != "master" {
		t.Fatalf("r1: role %q, %v; want master", r, err)
	}
	redisFault(t, c, faults.RedisFailover)
	// The first promotion is away from r1. Sentinel may fail over once more before the
	// heal settles (seen in CI: r1 to r3, then r3 to r2 2.2 s later); r1 must follow
	// whichever data node is primary at the end.
	ps := c.Promotions()
	if len(ps) == 0 || ps[0].From != "r1" || ps[0].To == "r1" {
		t.Fatalf("promotions %+v, want the first away from r1", ps)
	}
	primary := ps[len(ps)-1].To
	if r, of, up, err := c.RedisRole(ctx, "r1"); err != nil || r != "slave" || of != primary || !up {
		t.Fatalf("old primary r1: role %q of %q (link up %v), %v; want a replica of %s", r, of, up, err, primary)
	}
	commits = waitCommits(t, c, commits)
	// A partition cuts a node off from every data node and Sentinel: it loses the lease.
	leader, tok := waitLeader(t, c, 0)
	p := fault(t, faults.PartitionBlackhole)
	if _, err := p.Inject(ctx, c, leader, nemesis.Params{LeaseTTL: lease}); err != nil {
		t.Fatal(err)
	}
	waitLeader(t, c, tok, leader)
	if _, err := p.Heal(ctx, c, leader); err != nil {
		t.Fatal(err)
	}
	waitCommits(t, c, commits)
	if b, err := closePromotions(t, c); err != nil || !strings.Contains(string(b), `"from": "r1"`) {
		t.Fatalf("%s: %s %v", backend.PromotionsFile, b, err)
	}
}

// startReplicated starts two nodes over the Redis topology on docker, waits for a
// leader and its commits, and returns the backend and the commits counted.
func startReplicated(t *testing.T, topology string) (*container.Backend, int64) {
	t.Helper()
	c := start(t, backend.Spec{Nodes: 2, SourceRate: 200,
		Node: backend.NodeOptions{LeaseTTL: lease, Batch: 20}, Redis: backend.RedisSpec{Topology: topology}})
	waitLeader(t, c, 0)
	return c, waitCommits(t, c, 0)
}

// redisFault injects the Redis fault kind and heals it, and logs what each did.
func redisFault(t *testing.T, c *container.Backend, kind string) {
	t.Helper()
	ctx := context.Background()
	f := fault(t, kind)
	what, err := f.Inject(ctx, c, nemesis.AimRedis, nemesis.Params{LeaseTTL: lease})
	if err != nil {
		t.Fatalf("%s: %v", kind, err)
	}
	t.Log(what)
	if what, err = f.Heal(ctx, c, nemesis.AimRedis); err != nil {
		t.Fatalf("%s: heal: %v", kind, err)
	}
	t.Log(what)
}

// closePromotions closes c and reads the promotions it recorded.
func closePromotions(t *testing.T, c *container.Backend) ([]byte, error) {
	t.Helper()
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return os.ReadFile(filepath.Join(c.Dir(), backend.PromotionsFile))
}

// TestSentinelDoesNotComeUp, TestClusterDoesNotComeUp: data nodes (and Sentinels) that
// exit at start (an image that is no Redis) end the run incomplete — `fenceline chaos`
// says unknown, exit 3 — with the reason, and every container (the cluster's relay
// included) and the network are removed.
func TestSentinelDoesNotComeUp(t *testing.T) { replicasDoNotComeUp(t, backend.TopologySentinel) }

func TestClusterDoesNotComeUp(t *testing.T) { replicasDoNotComeUp(t, backend.TopologyCluster) }

func replicasDoNotComeUp(t *testing.T, topology string) {
	images(t)
	var ids []string
	cfg := harnessConfig(t, 5*time.Second, 3, &ids)
	cfg.Nodes, cfg.Nemeses = 2, nil
	cfg.Redis = backend.RedisSpec{Topology: topology}
	cfg.Start = func(ctx context.Context, spec backend.Spec) (backend.Backend, error) {
		id := runID()
		ids = append(ids, id)
		c, err := container.Start(ctx, container.Config{Spec: spec, RunID: id, RedisImage: docker.ImageFenceline})
		if err != nil {
			return nil, err
		}
		return c, nil
	}
	err := harness.Run(context.Background(), cfg)
	if !errors.Is(err, harness.ErrIncomplete) || !strings.Contains(err.Error(), "exited at start") {
		t.Fatalf("err = %v, want an incomplete run because Redis exited at start", err)
	}
	t.Log(strings.SplitN(err.Error(), "\n", 2)[0])
	for _, id := range ids {
		assertNothingLeft(t, id)
	}
}
