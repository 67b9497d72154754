package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/backend/proc"
	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/harness"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/internal/testbin"
	"github.com/fenceline/fenceline/workloads"
)

func TestMain(m *testing.M) { testbin.Main(m) }

func config(t *testing.T, bin string, d time.Duration, seed int64) harness.Config {
	wl, err := workloads.ByName("listener")
	if err != nil {
		t.Fatal(err)
	}
	return harness.Config{
		Dir: t.TempDir(), Seed: seed, Duration: d, Nodes: 3, Nemeses: faults.All(),
		Workload: wl, Backend: "local",
		Node: backend.NodeOptions{LeaseTTL: time.Second},
		Start: func(ctx context.Context, spec backend.Spec) (backend.Backend, error) {
			return proc.Start(ctx, proc.Config{Spec: spec, Binary: bin})
		},
	}
}

// TestChaosRunValid is the short chaos run of `make test`: every fault kind against the
// reference implementation, and the checker must find the run valid. The store starts
// 3 below 2^53, token counter and cursor, where a double no longer tells neighbouring
// integers apart: both cross it in the run.
func TestChaosRunValid(t *testing.T) {
	if testing.Short() {
		t.Skip("60-second chaos run")
	}
	cfg := config(t, testbin.Fenceline(t), 60*time.Second, 20261202)
	const start = 1<<53 - 3
	cfg.StartToken, cfg.StartCursor = start, start
	if err := harness.Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	run, err := history.LoadRun(cfg.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.Info.StartToken != start || run.Info.StartCursor != start {
		t.Errorf("run.json records the start %d/%d, want %d", run.Info.StartToken, run.Info.StartCursor, int64(start))
	}
	if st := run.Store; st == nil || st.Cursor <= 1<<53 || st.MaxToken <= 1<<53 {
		t.Errorf("the run did not cross 2^53 (cursor and highest token accepted above it): final store %v", st != nil)
		if st != nil {
			t.Logf("cursor %d, highest token %d, counter %d", st.Cursor, st.MaxToken, st.TokenCounter)
		}
	}
	res, err := checker.Check(context.Background(), run, workloads.CheckerOptions(run.Info, cfg.Dir))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Checks {
		t.Logf("%-20s %-8s %s", c.Name, c.Verdict, c.Message)
	}
	if res.Verdict != checker.Valid {
		t.Fatalf("verdict %s, want valid (run kept in %s)", res.Verdict, cfg.Dir)
	}
	kinds := map[string]bool{}
	for _, f := range run.Faults {
		kinds[f.Fault] = true
	}
	if len(kinds) < 5 {
		t.Errorf("only %d fault kinds injected in 60s: %v", len(kinds), kinds)
	}
	if res.LeaderChanges < 3 {
		t.Errorf("only %d leader changes", res.LeaderChanges)
	}
	assertNothingLeft(t, cfg.Dir)
}

func TestSameSeedSameSchedule(t *testing.T) {
	a, err := config(t, "", time.Minute, 5).Schedule()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := config(t, "", time.Minute, 5).Schedule()
	if len(a) == 0 || !reflect.DeepEqual(a, b) {
		t.Fatalf("same seed: %d and %d steps, equal %v", len(a), len(b), reflect.DeepEqual(a, b))
	}
}

// TestInterruptedRun: a run cancelled mid-chaos (Ctrl-C) heals, stops, still reads the
// store and writes what was recorded, reports itself incomplete, and leaves nothing behind.
func TestInterruptedRun(t *testing.T) {
	cfg := config(t, testbin.Fenceline(t), time.Minute, 9)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(6*time.Second, cancel)
	err := harness.Run(ctx, cfg)
	if !errors.Is(err, harness.ErrIncomplete) {
		t.Fatalf("err = %v, want ErrIncomplete", err)
	}
	run, err := history.LoadRun(cfg.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.Info.Interrupted == "" || run.Store == nil || run.Events.Len() == 0 {
		t.Fatalf("interrupted %q, store %v, %d events", run.Info.Interrupted, run.Store != nil, run.Events.Len())
	}
	assertNothingLeft(t, cfg.Dir)
}

// TestFailedStart: nodes that cannot start (a binary that is not fenceline) fail the run
// as incomplete, and Redis and toxiproxy are removed all the same.
func TestFailedStart(t *testing.T) {
	cfg := config(t, "/bin/false", time.Second, 1)
	err := harness.Run(context.Background(), cfg)
	if !errors.Is(err, harness.ErrIncomplete) {
		t.Fatalf("err = %v, want ErrIncomplete", err)
	}
	assertNothingLeft(t, cfg.Dir)
}

// TestNoProgress: a run whose nodes commit nothing in the warm-up is incomplete, and
// says so with ErrNoProgress (the mutation score counts it as a liveness failure). A
// warm-up of a nanosecond is one that no node meets.
func TestNoProgress(t *testing.T) {
	cfg := config(t, testbin.Fenceline(t), time.Second, 1)
	cfg.WarmupTimeout = time.Nanosecond
	err := harness.Run(context.Background(), cfg)
	if !errors.Is(err, harness.ErrIncomplete) || !errors.Is(err, harness.ErrNoProgress) {
		t.Fatalf("err = %v, want ErrIncomplete and ErrNoProgress", err)
	}
	assertNothingLeft(t, cfg.Dir)
}

// assertNothingLeft checks that no process of the run is alive and that Redis's port is
// closed.
func assertNothingLeft(t *testing.T, dir string) {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if strings.Contains(string(b), dir) {
			t.Errorf("process left behind: %s: %q", p, strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "addr", "source")); err == nil {
		if c, err := net.DialTimeout("tcp", strings.TrimSpace(string(b)), time.Second); err == nil {
			c.Close()
			t.Errorf("source still listening at %s", b)
		}
	}
}

// TestClusterNodeDoesNotStart: a Redis Cluster data node that cannot start (its
// nodes.conf is garbage) ends the run as incomplete, saying which node, and the other
// data nodes, toxiproxy and the relays are removed all the same.
func TestClusterNodeDoesNotStart(t *testing.T) {
	t.Parallel()
	cfg := config(t, testbin.Fenceline(t), time.Second, 1)
	cfg.Nemeses = nil
	cfg.Redis = backend.RedisSpec{Topology: backend.TopologyCluster}
	if err := os.MkdirAll(filepath.Join(cfg.Dir, "redis", "r5"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg.Dir, "redis", "r5", "nodes.conf"), []byte("not a cluster config\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := harness.Run(context.Background(), cfg)
	if !errors.Is(err, harness.ErrIncomplete) || !strings.Contains(err.Error(), "data node r5") {
		t.Fatalf("err = %v, want ErrIncomplete naming data node r5", err)
	}
	var info history.RunInfo
	b, _ := os.ReadFile(filepath.Join(cfg.Dir, history.RunInfoFile))
	if json.Unmarshal(b, &info) != nil || !strings.Contains(info.Interrupted, "data node r5") {
		t.Fatalf("run.json does not say why the run is incomplete: %s", b)
	}
	assertNothingLeft(t, cfg.Dir)
}
