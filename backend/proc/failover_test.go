package proc_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/backend/failovertest"
	"github.com/fenceline/fenceline/backend/proc"
	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/harness"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/internal/testbin"
	"github.com/fenceline/fenceline/nemesis"
	"github.com/fenceline/fenceline/source"
)

func TestMain(m *testing.M) { testbin.Main(m) }

// The failover drills that operators run by hand, automated over real node processes.
// Each asserts, from the store's own audit stream and the nodes' histories, that one
// token led at a time, that the failover took no longer than its bound, and that the
// cursor went on with no event lost or applied twice.

const lease = time.Second

// Bounds are generous: the machine is shared and small. The real numbers come from the
// benchmarks below.
var (
	gracefulBound = 3 * time.Second
	crashBound    = lease + 5*time.Second
)

func start(t testing.TB, nodes int) *proc.Backend {
	t.Helper()
	return proc.StartT(t, backend.Spec{
		Nodes: nodes, SourceRate: 500,
		Node: backend.NodeOptions{LeaseTTL: lease, Batch: 20},
	})
}

func waitLeader(t testing.TB, c backend.Backend, minToken int64, exclude ...string) (string, int64) {
	t.Helper()
	id, tok, err := backend.WaitLeader(context.Background(), c, minToken, 15*time.Second, exclude...)
	if err != nil {
		t.Fatal(err)
	}
	return id, tok
}

// committing waits for a leader with a token above minToken and for its first commit;
// it returns the leader and its token.
func committing(t testing.TB, c *proc.Backend, minToken int64, exclude ...string) (string, int64) {
	t.Helper()
	return failovertest.Committing(t, c, minToken, exclude...)
}

// failover applies fault and waits, up to timeout, for the first commit under a token
// above tok; it fails the test if that came later than bound after the fault. It
// returns how long it took and the commit.
func failover(t testing.TB, c *proc.Backend, tok int64, timeout, bound time.Duration, what string, fault func() error) (time.Duration, history.Event) {
	t.Helper()
	t0 := time.Now()
	if err := fault(); err != nil {
		t.Fatal(err)
	}
	ev := failovertest.FirstCommit(t, c, tok, timeout)
	d := time.Duration(ev.Time - t0.UnixNano())
	if d > bound {
		t.Fatalf("%s took %v, bound %v", what, d, bound)
	}
	return d, ev
}

// wantFollower waits three leases and checks that id, back after a fault (what), is a
// follower.
func wantFollower(t testing.TB, c *proc.Backend, id, what string) {
	t.Helper()
	time.Sleep(3 * lease)
	if st, err := c.NodeStatus(context.Background(), id); err != nil || st.Role != "follower" {
		t.Fatalf("%s %s: %+v %v, want follower", what, id, st, err)
	}
}

// verify stops every node and checks the store: accepted tokens never decrease in the
// store's order (one leader at a time), the sink is exactly 1..cursor and the balances
// are what those events imply.
func verify(t testing.TB, c *proc.Backend) *history.Store {
	t.Helper()
	ctx := context.Background()
	if err := backend.StopAll(ctx, c); err != nil {
		t.Fatal(err)
	}
	st, err := harness.ReadStore(ctx, c.RedisAddr(), "")
	if err != nil {
		t.Fatal(err)
	}
	var last int64
	var terms []int64
	for _, a := range st.Audit {
		if a.Result != "ok" {
			continue
		}
		if a.Token < last {
			t.Fatalf("store accepted token %d after token %d (entry %s)", a.Token, last, a.StreamID)
		}
		if a.Token != last {
			terms = append(terms, a.Token)
		}
		last = a.Token
	}
	if st.Cursor == 0 {
		t.Fatal("nothing was ever committed")
	}
	if int64(len(st.Sink)) != st.Cursor {
		t.Fatalf("sink holds %d events, cursor is %d", len(st.Sink), st.Cursor)
	}
	for i, id := range st.Sink {
		if id != int64(i+1) {
			t.Fatalf("sink[%d] = %d: an event was lost or applied twice", i, id)
		}
	}
	want := source.Balances(st.Cursor)
	for acct, bal := range want {
		if st.Balances[acct] != bal {
			t.Fatalf("balance of %s = %d, want %d", acct, st.Balances[acct], bal)
		}
	}
	t.Logf("cursor %d, terms that committed: %v", st.Cursor, terms)
	return st
}

func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	c := start(t, 3)
	old, tok := committing(t, c, 0)
	d, ev := failover(t, c, tok, 10*time.Second, gracefulBound, "graceful handoff", func() error {
		return c.StopNode(context.Background(), old)
	})
	if ev.Node == old {
		t.Fatalf("stopped node %s committed", old)
	}
	t.Logf("graceful handoff %s -> %s: %v", old, ev.Node, d)
	verify(t, c)
}

func TestKillLeader(t *testing.T) {
	t.Parallel()
	c := start(t, 3)
	old, tok := committing(t, c, 0)
	d, ev := failover(t, c, tok, crashBound+5*time.Second, crashBound, "crash failover", func() error {
		return c.KillNode(context.Background(), old)
	})
	t.Logf("crash failover %s -> %s: %v", old, ev.Node, d)
	// The old leader rejoins and stays a follower while the new one holds the lease.
	if err := c.StartNode(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	wantFollower(t, c, old, "rejoined")
	verify(t, c)
}

// TestCascade stops three leaders in a row out of four instances; the last one leads.
func TestCascade(t *testing.T) {
	t.Parallel()
	c := start(t, 4)
	var stopped []string
	tok := int64(0)
	for range 3 {
		var id string
		id, tok = committing(t, c, tok, stopped...)
		if err := c.StopNode(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		stopped = append(stopped, id)
	}
	last, _ := committing(t, c, tok, stopped...)
	if slices.Contains(stopped, last) {
		t.Fatalf("stopped node %s leads", last)
	}
	verify(t, c)
}

// TestPartitionedLeader: the leader loses Redis, a standby takes over; after the heal the
// old leader is a follower.
func TestPartitionedLeader(t *testing.T) {
	t.Parallel()
	c := start(t, 3)
	old, tok := committing(t, c, 0)
	f, _ := nemesis.ByKind(faults.PartitionBlackhole)
	_, ev := failover(t, c, tok, crashBound+5*time.Second, crashBound, "failover after partition", func() error {
		_, err := f.Inject(context.Background(), c, old, nemesis.Params{})
		return err
	})
	if ev.Node == old {
		t.Fatalf("partitioned %s committed under a new token", old)
	}
	if _, err := f.Heal(context.Background(), c, old); err != nil {
		t.Fatal(err)
	}
	wantFollower(t, c, old, "healed")
	verify(t, c)
}

// TestTwoOfThreeKilled: two nodes killed at once (the leader among them); the last one
// becomes leader and resumes from the right cursor.
func TestTwoOfThreeKilled(t *testing.T) {
	t.Parallel()
	c := start(t, 3)
	old, tok := committing(t, c, 0)
	var killed []string
	killed = append(killed, old)
	for _, id := range c.Nodes() {
		if id != old {
			killed = append(killed, id)
			break
		}
	}
	for _, id := range killed {
		if err := c.KillNode(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	survivor, _ := waitLeader(t, c, tok, killed...)
	failovertest.FirstCommit(t, c, tok, crashBound)
	t.Logf("killed %v, %s leads", killed, survivor)
	verify(t, c)
}

// TestKillMidIngestion is the kill switch: the leader is killed while it ingests a
// backlog; the standby resumes from the store's cursor, not from zero and not past it.
func TestKillMidIngestion(t *testing.T) {
	t.Parallel()
	c := proc.StartT(t, backend.Spec{
		Nodes: 2, SourceRate: 0, // everything available: the leader is always mid-batch
		Node: backend.NodeOptions{LeaseTTL: lease, Batch: 50},
	})
	dir := c.Dir()
	old, tok := committing(t, c, 0)
	time.Sleep(200 * time.Millisecond)
	_, ev := failover(t, c, tok, crashBound+5*time.Second, crashBound, "takeover", func() error {
		return c.KillNode(context.Background(), old)
	})
	// The new term's first commit starts where the old term's last accepted one ended.
	evs, err := history.ReadFile(filepath.Join(dir, history.HistoryDir, old+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var lastTo int64
	for _, e := range evs {
		if e.Kind == history.KindCommit && e.Type == history.OK && e.To > lastTo {
			lastTo = e.To
		}
	}
	if ev.From < lastTo {
		t.Fatalf("new leader's first commit starts at %d, before the old term's last accepted cursor %d", ev.From, lastTo)
	}
	verify(t, c)
}

// Benchmarks: the failover windows over real node processes. Run with
// `go test -run ^$ -bench 'GracefulHandoff|CrashFailover|PartitionFailover' -benchtime 1x
// ./backend/proc/` (make bench). Each hands over 30 times, from the fault to the first
// commit accepted under the new token, and prints p50/p90/p99/max (with 30 samples, p99
// is the largest) and where the time went, step by step. BenchmarkCrashFailover's
// sub-benchmarks are the lease lengths with takeover on disconnect off and on
// (election.Config.TakeoverOnDisconnect); BenchmarkGracefulHandoff uses a 1s lease;
// BenchmarkPartitionFailover partitions the leader from Redis (reset: connections
// refused and reset; blackhole: open and silent) at a 1s lease, the option off and on.

const failoverSamples = 30

func BenchmarkGracefulHandoff(b *testing.B) {
	c := benchCluster(b, lease, false)
	samples := failovertest.Measure(b, c, max(b.N, failoverSamples), 10*time.Second, failovertest.Fault{
		Inject: c.StopNode, Heal: c.StartNode})
	failovertest.Report(b, os.Stderr, "SIGTERM, lease 1s", samples)
}

func BenchmarkCrashFailover(b *testing.B) {
	for _, ttl := range []time.Duration{time.Second, 2 * time.Second, 10 * time.Second} {
		for _, on := range []bool{false, true} {
			b.Run(fmt.Sprintf("lease=%v/takeover=%s", ttl, onOff(on)), func(b *testing.B) {
				c := benchCluster(b, ttl, on)
				samples := failovertest.Measure(b, c, max(b.N, failoverSamples), 2*ttl+20*time.Second, failovertest.Fault{
					Inject: c.KillNode, Heal: c.StartNode})
				failovertest.Report(b, os.Stderr, fmt.Sprintf("SIGKILL, lease %v, takeover on disconnect %s", ttl, onOff(on)), samples)
			})
		}
	}
}

func BenchmarkPartitionFailover(b *testing.B) {
	for _, kind := range []string{faults.PartitionReset, faults.PartitionBlackhole} {
		for _, on := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/takeover=%s", kind, onOff(on)), func(b *testing.B) {
				c := benchCluster(b, lease, on)
				f, err := nemesis.ByKind(kind)
				if err != nil {
					b.Fatal(err)
				}
				samples := failovertest.Measure(b, c, max(b.N, failoverSamples), 2*lease+20*time.Second, failovertest.Fault{
					Inject: func(ctx context.Context, id string) error {
						_, err := f.Inject(ctx, c, id, nemesis.Params{LeaseTTL: lease})
						return err
					},
					Heal: func(ctx context.Context, id string) error {
						_, err := f.Heal(ctx, c, id)
						return err
					}})
				failovertest.Report(b, os.Stderr, fmt.Sprintf("%s, lease %v, takeover on disconnect %s", kind, lease, onOff(on)), samples)
			})
		}
	}
}

// benchCluster is three nodes with everything available at the source (every fetch
// returns a whole batch at once).
func benchCluster(b *testing.B, ttl time.Duration, takeover bool) *proc.Backend {
	return proc.StartT(b, backend.Spec{
		Nodes: 3, SourceRate: 0, Node: backend.NodeOptions{LeaseTTL: ttl, Batch: 20, TakeoverOnDisconnect: takeover},
	})
}

func onOff(on bool) string { return map[bool]string{false: "off", true: "on"}[on] }
