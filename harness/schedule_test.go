package harness

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/nemesis"
	"github.com/fenceline/fenceline/node"
)

// slowHealCluster is a cluster of one node whose restart takes c.slow: a heal that
// overruns its schedule. Only what the stop fault and the runner use is implemented.
type slowHealCluster struct {
	Backend
	slow   time.Duration
	mu     sync.Mutex
	stops  []time.Time
	starts []time.Time // when each restart finished
}

func (c *slowHealCluster) Nodes() []string { return []string{"n1"} }
func (c *slowHealCluster) Running(string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.stops) == len(c.starts)
}
func (c *slowHealCluster) NodeStatus(context.Context, string) (node.Status, error) {
	return node.Status{}, nil
}

func (c *slowHealCluster) StopNode(context.Context, string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stops = append(c.stops, time.Now())
	return nil
}

func (c *slowHealCluster) StartNode(context.Context, string) error {
	time.Sleep(c.slow)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.starts = append(c.starts, time.Now())
	return nil
}

// TestScheduleKeepsQuietTimeAfterSlowHeal: a heal that takes longer than planned moves
// the rest of the schedule back, so the planned quiet time after a fault is kept (with
// the schedule as planned the second fault would strike the moment the first healed).
func TestScheduleKeepsQuietTimeAfterSlowHeal(t *testing.T) {
	c := &slowHealCluster{slow: 400 * time.Millisecond}
	r := &runner{
		cfg:    Config{Duration: 300 * time.Millisecond},
		log:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		c:      c,
		faults: history.NewRecorder(io.Discard),
	}
	step := func(at time.Duration) nemesis.Step {
		return nemesis.Step{At: at, Kind: faults.Stop, Aim: nemesis.Aim{Node: 1},
			Params: nemesis.Params{Hold: 50 * time.Millisecond, LeaseTTL: time.Second}}
	}
	// Planned: fault 1 at 0 for 50 ms, 150 ms of quiet, fault 2 at 200 ms.
	start := time.Now()
	if err := r.chaos(context.Background(), []nemesis.Step{step(0), step(200 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if len(c.stops) != 2 || len(c.starts) != 2 {
		t.Fatalf("%d stops and %d restarts, want 2 and 2", len(c.stops), len(c.starts))
	}
	if quiet := c.stops[1].Sub(c.starts[0]); quiet < 140*time.Millisecond {
		t.Errorf("the second fault struck %v after the first healed; the schedule planned 150ms of quiet", quiet)
	}
	// The end of the chaos phase moves back by the overruns too: the last fault's quiet
	// time before the end (300 - 250 = 50 ms) is kept.
	if end := time.Since(c.starts[1]); end < 40*time.Millisecond {
		t.Errorf("the chaos phase ended %v after the last heal; 50ms of quiet were planned", end)
	}
	if took > 10*time.Second {
		t.Errorf("the schedule took %v", took)
	}
}
