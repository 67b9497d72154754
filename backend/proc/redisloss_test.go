package proc_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/backend/failovertest"
	"github.com/fenceline/fenceline/backend/proc"
	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/harness"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/reports"
	"github.com/fenceline/fenceline/source"
)

// TestFailoverReissuesToken forces the hole of asynchronous replication, step by step so
// that it happens every time: replication is cut off the primary (the nodes still reach
// it), the leader hands over gracefully so that the standby's INCR lands on the cut-off
// primary only, and the Sentinels promote a replica whose counter never saw it. The
// standby, deposed, acquires on the new primary and gets the same token again. The
// checker must flag the reissued token, and the report must blame Redis, not the election.
//
// On a Redis Cluster the same: the cut-off primary serves the standby's acquire for the
// node timeout it takes to find itself in the minority, its replica is promoted without
// the INCR.
func TestFailoverReissuesToken(t *testing.T) {
	t.Parallel()
	for _, topology := range []string{backend.TopologySentinel, backend.TopologyCluster} {
		t.Run(topology, func(t *testing.T) {
			t.Parallel()
			failoverReissuesToken(t, topology)
		})
	}
}

func failoverReissuesToken(t *testing.T, topology string) {
	ctx := context.Background()
	var c *proc.Backend
	if topology == backend.TopologySentinel {
		c = startSentinel(t, 2, backend.RedisSpec{}, backend.NodeOptions{})
	} else {
		c = proc.StartT(t, backend.Spec{Nodes: 2, SourceRate: 500,
			Redis: backend.RedisSpec{Topology: topology}, Node: backend.NodeOptions{LeaseTTL: lease, Batch: 20}})
	}
	dir := c.Dir()
	start := time.Now()
	fl, err := os.Create(filepath.Join(dir, history.FaultsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	flog := history.NewRecorder(fl)

	first, tok := waitLeader(t, c, 0)
	failovertest.FirstCommit(t, c, tok-1, 15*time.Second)

	flog.Record(history.Event{ID: "fault-1", Type: history.Invoke, Kind: history.KindFault, Node: "redis", Fault: faults.RedisIsolatePrimary})
	cut := time.Now()
	attrs := map[string]any{"timeout": 0}
	old, err := c.CutPrimary(ctx,
		backend.Toxic{Name: "up", Type: "timeout", Stream: "upstream", Attributes: attrs},
		backend.Toxic{Name: "down", Type: "timeout", Stream: "downstream", Attributes: attrs})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.StopNode(ctx, first); err != nil {
		t.Fatal(err)
	}
	second, tok2 := waitLeader(t, c, tok, first)
	p, err := c.WaitPromotion(ctx, cut, old)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.UncutPrimary(ctx, old, "up", "down"); err != nil {
		t.Fatal(err)
	}
	if err := c.StartRedis(ctx); err != nil {
		t.Fatal(err)
	}
	flog.Record(history.Event{ID: "fault-1", Type: history.OK, Kind: history.KindFault, Node: "redis", Fault: faults.RedisIsolatePrimary})
	t.Logf("%s took token %d on the cut-off %s; %s promoted %v after the cut", second, tok2, old, p.To, p.Time.Sub(cut))

	// The standby loses its term on the new primary and acquires there: token tok2 again.
	deadline := time.Now().Add(20 * time.Second)
	for freshAcquires(t, dir, tok2) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("token %d was not acquired a second time within 20s", tok2)
		}
		time.Sleep(50 * time.Millisecond)
	}
	heal := time.Now()
	if err := backend.StopAll(ctx, c); err != nil {
		t.Fatal(err)
	}
	addr, err := c.PrimaryAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st, err := harness.ReadStore(ctx, addr, "fenceline")
	if err != nil {
		t.Fatal(err)
	}
	if err := history.WriteStore(dir, st); err != nil {
		t.Fatal(err)
	}
	if err := history.WriteJSON(filepath.Join(dir, history.RunInfoFile), history.RunInfo{
		Nodes: c.Nodes(), Workload: "listener", Backend: "local", Nemeses: []string{faults.RedisIsolatePrimary},
		LeaseTTL: lease, Start: start.UnixNano(), HealTime: heal.UnixNano(), End: time.Now().UnixNano(),
		Persistence: true, Election: "fenceline",
	}); err != nil {
		t.Fatal(err)
	}
	run, err := history.LoadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	res, err := checker.Check(ctx, run, checker.Options{ExpectedBalances: source.Balances})
	if err != nil {
		t.Fatal(err)
	}
	if u := res.Check(checker.CheckUniqueTokens); u == nil || u.Verdict != checker.Invalid {
		t.Fatalf("unique-tokens: %+v, want invalid", u)
	}
	why, ok := reports.RedisLostWrites(run, res)
	if !ok || !strings.Contains(why, "acknowledged") {
		t.Fatalf("report does not blame Redis: %q %v", why, ok)
	}
	t.Logf("%s: %s", reports.RedisLossLabel, why)
}

// freshAcquires counts the fresh acquires (not adoptions) that obtained token tok.
func freshAcquires(t *testing.T, dir string, tok int64) int {
	t.Helper()
	n := 0
	for _, id := range []string{"n1", "n2"} {
		evs, _ := history.ReadFile(filepath.Join(dir, history.HistoryDir, id+".jsonl"))
		adopt := map[string]bool{}
		for _, e := range evs {
			if e.Kind == history.KindAcquire && e.Type == history.Invoke && e.Token != 0 {
				adopt[e.ID] = true
			}
			if e.Kind == history.KindAcquire && e.Type == history.OK && e.Token == tok && !adopt[e.ID] {
				n++
			}
		}
	}
	return n
}
