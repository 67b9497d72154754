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
	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/docker"
	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/harness"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/nemesis"
	"github.com/fenceline/fenceline/source"
)

// postgresRun is a harness run over the docker backend with the cursor in the run's
// PostgreSQL container, the faults given as its schedule.
func postgresRun(t *testing.T, d time.Duration, steps []nemesis.Step, ids *[]string, image string) harness.Config {
	cfg := harnessConfig(t, d, 7, ids)
	cfg.Nodes, cfg.Nemeses, cfg.Steps = 2, nil, steps
	cfg.Node.Store = backend.StorePostgres
	cfg.Start = func(ctx context.Context, spec backend.Spec) (backend.Backend, error) {
		id := runID()
		*ids = append(*ids, id)
		c, err := container.Start(ctx, container.Config{Spec: spec, RunID: id, PostgresImage: image, StartTimeout: 20 * time.Second})
		if err != nil {
			return nil, err
		}
		return c, nil
	}
	return cfg
}

// TestPostgresChaosRun: the nodes elect and commit through PostgreSQL in a container;
// a crash of PostgreSQL (postgres-restart: the server restarts and replays its
// write-ahead log) and a partition of the leader's link to it take effect and heal; the
// judge's own read of the tables finds the run valid; run.json records the store; and
// nothing of the run is left.
func TestPostgresChaosRun(t *testing.T) {
	images(t)
	var ids []string
	p := nemesis.Params{Hold: 2 * time.Second, LeaseTTL: lease}
	cfg := postgresRun(t, 14*time.Second, []nemesis.Step{
		{At: 2 * time.Second, Kind: faults.PostgresRestart, Params: p},
		{At: 8 * time.Second, Kind: faults.PartitionPostgres, Aim: nemesis.Aim{Leader: true}, Params: p},
	}, &ids, "")
	t0 := time.Now()
	if err := harness.Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	t.Logf("run took %v", time.Since(t0).Round(time.Millisecond))
	for _, id := range ids {
		assertNothingLeft(t, id)
	}
	run, err := history.LoadRun(cfg.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.Info.Store != backend.StorePostgres || run.Info.Redis == nil || run.Info.Redis.Topology != backend.TopologySingle {
		t.Errorf("run.json: store %q, redis %+v; want postgres on one Redis", run.Info.Store, run.Info.Redis)
	}
	healed := map[string]bool{}
	for _, f := range run.Faults {
		if f.Type == history.OK {
			healed[f.Fault] = true
			t.Logf("%s healed: %s", f.Fault, f.Reason)
		}
	}
	for _, k := range faults.Postgres() {
		if !healed[k] {
			t.Errorf("fault %s was not injected and healed: %+v", k, run.Faults)
		}
	}
	// The container's log holds both of its incarnations: the crash took effect.
	b, err := os.ReadFile(filepath.Join(cfg.Dir, history.LogsDir, "postgres.log"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "database system is ready to accept connections"); n != 2 {
		t.Errorf("postgres.log: %d starts, want 2", n)
	}
	if !strings.Contains(string(b), "database system was interrupted") && !strings.Contains(string(b), "redo done") {
		t.Errorf("postgres.log: no recovery after the crash")
	}
	res, err := checker.Check(context.Background(), run, checker.Options{ExpectedBalances: source.Balances, OutDir: cfg.Dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Checks {
		t.Logf("%-20s %-8s %s", c.Name, c.Verdict, c.Message)
	}
	if res.Verdict != checker.Valid || run.Store.Cursor == 0 {
		t.Fatalf("verdict %s, cursor %d; want valid with commits (run kept in %s)", res.Verdict, run.Store.Cursor, cfg.Dir)
	}
}

// TestPostgresDoesNotComeUp: a PostgreSQL container that exits at start (here an image
// that is no PostgreSQL) ends the run incomplete, which the command reports as unknown
// (exit 3), with the reason; and every container and the network are removed.
func TestPostgresDoesNotComeUp(t *testing.T) {
	images(t)
	var ids []string
	cfg := postgresRun(t, 5*time.Second, []nemesis.Step{}, &ids, docker.ImageFenceline)
	err := harness.Run(context.Background(), cfg)
	if !errors.Is(err, harness.ErrIncomplete) || !strings.Contains(err.Error(), "postgres exited at start") {
		t.Fatalf("err = %v, want an incomplete run because postgres exited at start", err)
	}
	t.Log(err)
	for _, id := range ids {
		assertNothingLeft(t, id)
	}
}
