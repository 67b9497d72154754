package harness_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/harness"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/internal/testbin"
	"github.com/fenceline/fenceline/source"
)

// tampering is a cluster whose store is altered behind the nodes' backs once the last
// node has stopped: the final read then sees a store that disagrees with the layout.
type tampering struct {
	backend.Backend
	tamper func(addr string)
}

func (c tampering) StopNode(ctx context.Context, id string) error {
	err := c.Backend.StopNode(ctx, id)
	nodes := c.Nodes()
	if id == nodes[len(nodes)-1] {
		c.tamper(c.RedisAddr())
	}
	return err
}

// TestTamperedStoreIsNotJudgedValid: a real run whose cursor record loses its token field
// after the nodes stopped is an incomplete run, and the checker does not call it valid.
// With the listener's reader the token read as 0 and the run was checked as if whole.
func TestTamperedStoreIsNotJudgedValid(t *testing.T) {
	cfg := config(t, testbin.Fenceline(t), 3*time.Second, 1)
	cfg.Nemeses = nil
	start := cfg.Start
	cfg.Start = func(ctx context.Context, spec backend.Spec) (backend.Backend, error) {
		c, err := start(ctx, spec)
		if err != nil {
			return nil, err
		}
		return tampering{Backend: c, tamper: func(addr string) {
			rc := redis.NewClient(&redis.Options{Addr: addr})
			defer rc.Close()
			if err := rc.HDel(context.Background(), "{fenceline}:cursor", "token").Err(); err != nil {
				t.Errorf("tamper: %v", err)
			}
		}}, nil
	}
	err := harness.Run(context.Background(), cfg)
	if !errors.Is(err, harness.ErrIncomplete) || !errors.Is(err, harness.ErrBadStore) {
		t.Fatalf("run: %v, want ErrIncomplete and ErrBadStore", err)
	}
	run, err := history.LoadRun(cfg.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.Store != nil || !strings.Contains(run.Info.Interrupted, "field \"token\" missing") {
		t.Fatalf("store %v, interrupted %q", run.Store != nil, run.Info.Interrupted)
	}
	res, err := checker.Check(context.Background(), run, checker.Options{ExpectedBalances: source.Balances})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict == checker.Valid {
		t.Fatalf("a run whose store was tampered with is %s", res.Verdict)
	}
}
