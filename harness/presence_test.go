package harness_test

import (
	"context"
	"testing"
	"time"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/harness"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/internal/testbin"
	"github.com/fenceline/fenceline/workloads"
)

// A presence-flap's completion carries the interval in which the holder's presence was
// surely back and stayed (nemesis.Sustainer, asked before the heal), and the reference
// takes no lease over in it.
func TestPresenceFlapInEffect(t *testing.T) {
	cfg := config(t, testbin.Fenceline(t), 10*time.Second, 5)
	cfg.Nemeses = []string{faults.PresenceFlap}
	cfg.Node.TakeoverOnDisconnect = true
	if err := harness.Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	run, err := history.LoadRun(cfg.Dir)
	if err != nil {
		t.Fatal(err)
	}
	flaps := 0
	for _, f := range run.Faults {
		if f.Fault != faults.PresenceFlap || f.Type == history.Invoke {
			continue
		}
		flaps++
		if f.Type != history.OK || f.InEffectFrom == 0 || f.InEffectTo <= f.InEffectFrom {
			t.Errorf("presence-flap completed without an interval: %+v", f)
		}
	}
	if flaps == 0 {
		t.Fatal("no presence-flap in the run")
	}
	res, err := checker.Check(context.Background(), run, workloads.CheckerOptions(run.Info, cfg.Dir))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Checks {
		t.Logf("%-20s %-8s %s", c.Name, c.Verdict, c.Message)
		if c.Name == checker.CheckLeaseGrant && c.Stats["acquires_while_present"] == 0 {
			t.Errorf("lease-grant judged no acquire while the presence stayed: %v", c.Stats)
		}
	}
	if res.Verdict != checker.Valid {
		t.Fatalf("verdict %s, want valid (run kept in %s)", res.Verdict, cfg.Dir)
	}
}
