package container_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/backend/container"
	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/docker"
	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/harness"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/nemesis"
	"github.com/fenceline/fenceline/source"
	"github.com/fenceline/fenceline/workloads"
)

// These tests need a Docker engine. Without one they fail, saying so: CI has the engine,
// and a skipped backend would pass unnoticed.

const lease = time.Second

var (
	buildOnce sync.Once
	buildErr  error
)

// images builds the three images if they are missing or stale, through the same code as
// `make images`, once per test process.
func images(tb testing.TB) {
	tb.Helper()
	buildOnce.Do(func() {
		t0 := time.Now()
		var res []docker.ImageResult
		res, buildErr = docker.BuildImages(context.Background(), docker.BuildOptions{Postgres: true, Etcd: true})
		if buildErr != nil {
			return
		}
		for _, r := range res {
			tb.Logf("image %s built=%v in %v", r.Image, r.Built, r.Took.Round(time.Millisecond))
		}
		tb.Logf("images ready in %v", time.Since(t0).Round(time.Millisecond))
	})
	if buildErr != nil {
		tb.Fatalf("docker backend: %v", buildErr)
	}
}

var runSeq struct {
	sync.Mutex
	n int
}

// runID is a fresh run id for this test process.
func runID() string {
	runSeq.Lock()
	defer runSeq.Unlock()
	runSeq.n++
	return fmt.Sprintf("test-%d-%d", os.Getpid(), runSeq.n)
}

// start starts a docker cluster for a test and removes it when the test ends, checking
// that nothing of it is left.
func start(t testing.TB, spec backend.Spec) *container.Backend {
	t.Helper()
	images(t)
	if spec.Dir == "" {
		spec.Dir = t.TempDir()
	}
	spec.Node.Chaos = true
	id := runID()
	t0 := time.Now()
	c, err := container.Start(context.Background(), container.Config{Spec: spec, RunID: id})
	if err != nil {
		t.Fatalf("start docker cluster: %v", err)
	}
	t.Logf("cluster of %d nodes started in %v (run %s)", len(c.Nodes()), time.Since(t0).Round(time.Millisecond), id)
	t.Cleanup(func() {
		t0 := time.Now()
		if err := c.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
		t.Logf("cluster removed in %v", time.Since(t0).Round(time.Millisecond))
		assertNothingLeft(t, id)
	})
	return c
}

// assertNothingLeft checks that no container or network of run id is left and that the
// images are still there.
func assertNothingLeft(t testing.TB, id string) {
	t.Helper()
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx := context.Background()
	f := make(client.Filters).Add("label", docker.LabelRun+"="+id)
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs.Items {
		t.Errorf("container left behind: %s %v (%s)", c.ID[:12], c.Names, c.State)
	}
	ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range ns.Items {
		t.Errorf("network left behind: %s", n.Name)
	}
	for _, img := range docker.Images {
		if _, err := cli.ImageInspect(ctx, img); err != nil {
			t.Errorf("image %s removed: %v", img, err)
		}
	}
}

func waitLeader(t *testing.T, c backend.Backend, minToken int64, exclude ...string) (string, int64) {
	t.Helper()
	id, tok, err := backend.WaitLeader(context.Background(), c, minToken, 20*time.Second, exclude...)
	if err != nil {
		t.Fatal(err)
	}
	return id, tok
}

// waitCommits waits until the cluster's nodes together report more commits than base.
func waitCommits(t *testing.T, c backend.Backend, base int64) int64 {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var n int64
		for _, id := range c.Nodes() {
			if st, err := c.NodeStatus(context.Background(), id); err == nil {
				n += st.Commits
			}
		}
		if n > base {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("no commit beyond %d within 20s", base)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitRole waits until node id reports role.
func waitRole(t *testing.T, c backend.Backend, id, role string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		st, err := c.NodeStatus(context.Background(), id)
		if err == nil && st.Role == role {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %+v %v, want %s", id, st, err, role)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func fault(t *testing.T, kind string) nemesis.Fault {
	t.Helper()
	f, err := nemesis.ByKind(kind)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func tokenCounter(t *testing.T, c backend.Backend) int64 {
	t.Helper()
	st, err := harness.ReadStore(context.Background(), c.RedisAddr(), "")
	if err != nil {
		t.Fatal(err)
	}
	return st.TokenCounter
}

// TestFaults drives the nemesis faults through the docker backend: each takes effect
// (another node leads, or Redis comes back with its counter) and heals.
func TestFaults(t *testing.T) {
	c := start(t, backend.Spec{Nodes: 3, SourceRate: 200, Node: backend.NodeOptions{LeaseTTL: lease, Batch: 20}})
	ctx := context.Background()
	p := nemesis.Params{LeaseTTL: lease, Magnitude: 0.5}

	leader, tok := waitLeader(t, c, 0)
	commits := waitCommits(t, c, 0)
	starts := map[string]int{} // incarnations of each node, to check its log
	for _, id := range c.Nodes() {
		starts[id] = 1
	}

	for _, kind := range []string{faults.Kill, faults.Stop, faults.Pause, faults.PartitionBlackhole, faults.PartitionReset} {
		t.Run(kind, func(t *testing.T) {
			f := fault(t, kind)
			t0 := time.Now()
			if _, err := f.Inject(ctx, c, leader, p); err != nil {
				t.Fatal(err)
			}
			if (kind == faults.Kill || kind == faults.Stop) == c.Running(leader) {
				t.Fatalf("after %s, running(%s) = %v", kind, leader, c.Running(leader))
			}
			next, ntok := waitLeader(t, c, tok, leader)
			t.Logf("%s of leader %s (token %d): %s leads with token %d after %v", kind, leader, tok, next, ntok, time.Since(t0).Round(time.Millisecond))
			if _, err := f.Heal(ctx, c, leader); err != nil {
				t.Fatal(err)
			}
			if kind == faults.Kill || kind == faults.Stop {
				starts[leader]++
			}
			if !c.Running(leader) {
				t.Fatalf("%s not running after heal", leader)
			}
			waitRole(t, c, leader, "follower")
			commits = waitCommits(t, c, commits)
			leader, tok = next, ntok
		})
	}

	t.Run(faults.Clock, func(t *testing.T) {
		f := fault(t, faults.Clock)
		for v := range 3 {
			p.Variant = v
			if _, err := f.Inject(ctx, c, leader, p); err != nil {
				t.Fatal(err)
			}
			if _, err := f.Heal(ctx, c, leader); err != nil {
				t.Fatal(err)
			}
		}
		leader, tok = waitLeader(t, c, 0)
		commits = waitCommits(t, c, commits)
	})

	t.Run(faults.RedisRestart, func(t *testing.T) {
		before := tokenCounter(t, c)
		addr := c.RedisAddr()
		f := fault(t, faults.RedisRestart)
		if _, err := f.Inject(ctx, c, nemesis.AimRedis, p); err != nil {
			t.Fatal(err)
		}
		if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			conn.Close()
			t.Fatalf("Redis's port %s still open after the kill", addr)
		}
		if _, err := f.Heal(ctx, c, nemesis.AimRedis); err != nil {
			t.Fatal(err)
		}
		after := tokenCounter(t, c)
		t.Logf("token counter %d before the kill, %d after the restart (Redis %s -> %s)", before, after, addr, c.RedisAddr())
		if after < before {
			t.Fatalf("token counter went back from %d to %d: the append-only file was lost", before, after)
		}
		commits = waitCommits(t, c, commits)
	})

	if err := nemesis.HealAll(ctx, c); err != nil {
		t.Fatal(err)
	}
	verify(t, c)
	checkLogs(t, c, starts, 2)
}

// checkLogs checks that each node's log holds each of its incarnations once (the log is
// followed anew after every restart, and no line may be written twice) and that Redis's
// log shows redisStarts starts.
func checkLogs(t *testing.T, c *container.Backend, starts map[string]int, redisStarts int) {
	t.Helper()
	count := func(name, what string) int {
		b, err := os.ReadFile(filepath.Join(c.Dir(), history.LogsDir, name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if seen[l] {
				t.Errorf("%s.log: line written twice: %s", name, l)
			}
			seen[l] = true
		}
		return strings.Count(string(b), what)
	}
	for id, n := range starts {
		if got := count(id, `"msg":"node-started"`); got != n {
			t.Errorf("%s.log: %d node-started lines, want %d", id, got, n)
		}
	}
	if got := count("redis", "Ready to accept connections"); got != redisStarts {
		t.Errorf("redis.log: %d starts, want %d", got, redisStarts)
	}
}

// verify stops the nodes and checks the store: tokens accepted in order, the sink is
// exactly 1..cursor, and every node wrote its history and its log into the run directory.
func verify(t *testing.T, c *container.Backend) {
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
	for _, a := range st.Audit {
		if a.Result != "ok" {
			continue
		}
		if a.Token < last {
			t.Fatalf("store accepted token %d after %d", a.Token, last)
		}
		last = a.Token
	}
	if st.Cursor == 0 || int64(len(st.Sink)) != st.Cursor {
		t.Fatalf("cursor %d, sink of %d events", st.Cursor, len(st.Sink))
	}
	for i, e := range st.Sink {
		if e != int64(i+1) {
			t.Fatalf("sink[%d] = %d", i, e)
		}
	}
	for _, id := range c.Nodes() {
		evs, err := history.ReadFile(filepath.Join(c.Dir(), history.HistoryDir, id+".jsonl"))
		if err != nil || len(evs) == 0 {
			t.Fatalf("history of %s: %d events, %v", id, len(evs), err)
		}
		b, err := os.ReadFile(filepath.Join(c.Dir(), history.LogsDir, id+".log"))
		if err != nil || !strings.Contains(string(b), "node-started") {
			t.Fatalf("log of %s: %v, %d bytes without node-started", id, err, len(b))
		}
	}
	t.Logf("cursor %d, highest token %d", st.Cursor, st.MaxToken)
}

func harnessConfig(t *testing.T, d time.Duration, seed int64, ids *[]string) harness.Config {
	wl, err := workloads.ByName("listener")
	if err != nil {
		t.Fatal(err)
	}
	return harness.Config{
		Dir: t.TempDir(), Seed: seed, Duration: d, Nodes: 3, Nemeses: faults.All(),
		Workload: wl, Backend: "docker",
		Node: backend.NodeOptions{LeaseTTL: lease},
		Start: func(ctx context.Context, spec backend.Spec) (backend.Backend, error) {
			id := runID()
			*ids = append(*ids, id)
			c, err := container.Start(ctx, container.Config{Spec: spec, RunID: id})
			if err != nil {
				return nil, err
			}
			return c, nil
		},
	}
}

// TestChaosRunValid is a short harness run over the docker backend with every fault
// kind: the checker must find it valid.
func TestChaosRunValid(t *testing.T) {
	images(t)
	var ids []string
	cfg := harnessConfig(t, 40*time.Second, 20261203, &ids)
	if err := harness.Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		assertNothingLeft(t, id)
	}
	run, err := history.LoadRun(cfg.Dir)
	if err != nil {
		t.Fatal(err)
	}
	res, err := checker.Check(context.Background(), run, checker.Options{ExpectedBalances: source.Balances, OutDir: cfg.Dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Checks {
		t.Logf("%-20s %-8s %s", c.Name, c.Verdict, c.Message)
		for _, o := range c.Offending {
			t.Logf("    %s", o)
		}
	}
	kinds := map[string]bool{}
	for _, f := range run.Faults {
		kinds[f.Fault] = true
	}
	t.Logf("fault kinds injected: %d, leader changes: %d", len(kinds), res.LeaderChanges)
	if res.Verdict != checker.Valid {
		t.Fatalf("verdict %s, want valid", res.Verdict)
	}
	logs, _ := filepath.Glob(filepath.Join(cfg.Dir, history.LogsDir, "*.log"))
	if len(logs) < 6 {
		t.Errorf("logs: %v, want one per node plus redis, toxiproxy and source", logs)
	}
}

// TestInterruptedRun: a run cancelled mid-chaos still heals, stops, reads the store,
// reports itself incomplete, and leaves no container or network behind.
func TestInterruptedRun(t *testing.T) {
	images(t)
	var ids []string
	cfg := harnessConfig(t, time.Minute, 9, &ids)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(12*time.Second, cancel)
	err := harness.Run(ctx, cfg)
	if !errors.Is(err, harness.ErrIncomplete) {
		t.Fatalf("err = %v, want ErrIncomplete", err)
	}
	for _, id := range ids {
		assertNothingLeft(t, id)
	}
	run, err := history.LoadRun(cfg.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.Info.Interrupted == "" || run.Store == nil || run.Events.Len() == 0 {
		t.Fatalf("interrupted %q, store %v, %d events", run.Info.Interrupted, run.Store != nil, run.Events.Len())
	}
}

// TestFailedStart: nodes that exit at once (an unknown variant) fail the start with their
// last log lines, and Redis, toxiproxy, the source and the network are removed all the
// same.
func TestFailedStart(t *testing.T) {
	images(t)
	id := runID()
	_, err := container.Start(context.Background(), container.Config{RunID: id, Spec: backend.Spec{
		Dir: t.TempDir(), Nodes: 2, Node: backend.NodeOptions{Variant: "no-such-variant"},
	}})
	if err == nil || !strings.Contains(err.Error(), "exited at start") {
		t.Fatalf("err = %v, want a node that exited at start", err)
	}
	t.Log(err)
	assertNothingLeft(t, id)
}

// TestCancelledStart: a start interrupted half-way removes what it had created.
func TestCancelledStart(t *testing.T) {
	images(t)
	for _, after := range []time.Duration{100 * time.Millisecond, 700 * time.Millisecond} {
		id := runID()
		ctx, cancel := context.WithTimeout(context.Background(), after)
		c, err := container.Start(ctx, container.Config{RunID: id, Spec: backend.Spec{Dir: t.TempDir(), Nodes: 3}})
		cancel()
		if err == nil {
			_ = c.Close(context.Background())
			t.Logf("start finished within %v", after)
		} else {
			t.Logf("cancelled after %v: %v", after, err)
		}
		assertNothingLeft(t, id)
	}
}

// TestRedisVolatile: without the append-only file a Redis restart empties the store and
// the token counter starts again: what the AOF check above would catch.
func TestRedisVolatile(t *testing.T) {
	c := start(t, backend.Spec{Nodes: 1, NoPersistence: true, Node: backend.NodeOptions{LeaseTTL: lease}})
	ctx := context.Background()
	id, _ := waitLeader(t, c, 0)
	if n := tokenCounter(t, c); n == 0 {
		t.Fatal("token counter 0 while a node leads")
	}
	// Stop the node first: a running one takes the lock again as soon as Redis answers,
	// and the counter read after the restart would race with its acquire.
	if err := c.StopNode(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := c.KillRedis(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.StartRedis(ctx); err != nil {
		t.Fatal(err)
	}
	if n := tokenCounter(t, c); n != 0 {
		t.Fatalf("token counter %d after a restart without persistence, want 0", n)
	}
}

// BenchmarkStart measures the start-up of a 3-node cluster, images built, and its removal.
func BenchmarkStart(b *testing.B) {
	images(b)
	b.ResetTimer()
	var up, down time.Duration
	for range b.N {
		t0 := time.Now()
		c, err := container.Start(context.Background(), container.Config{Spec: backend.Spec{Dir: b.TempDir(), Nodes: 3}})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := c.Close(context.Background()); err != nil {
			b.Fatal(err)
		}
		up, down = up+t1.Sub(t0), down+time.Since(t1)
	}
	b.ReportMetric(up.Seconds()/float64(b.N), "start-s")
	b.ReportMetric(down.Seconds()/float64(b.N), "close-s")
}

// TestNoEngine: without an engine the error says so (and the other tests fail with it).
func TestNoEngine(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	_, err := container.Start(context.Background(), container.Config{Spec: backend.Spec{Dir: t.TempDir()}})
	if !errors.Is(err, docker.ErrNoEngine) || !strings.Contains(err.Error(), "no Docker engine answers at unix:///nonexistent/docker.sock") {
		t.Fatalf("err = %v, want docker.ErrNoEngine naming the address", err)
	}
	if _, err := docker.BuildImages(context.Background(), docker.BuildOptions{}); !errors.Is(err, docker.ErrNoEngine) {
		t.Fatalf("docker.BuildImages: err = %v, want docker.ErrNoEngine", err)
	}
}
