package harness_test

import (
	"context"
	"testing"
	"time"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/harness"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/internal/testbin"
	"github.com/fenceline/fenceline/targets"
	"github.com/fenceline/fenceline/workloads"
)

// TestClientGoTargets is a short chaos run of each client-go target under every fault,
// at the harness's default lease (2s: client-go's LeaseDuration; RenewDeadline and
// RetryPeriod in client-go's ratios). A fenced target's store must refuse every stale
// write, each token must be acquired once, and no event may be lost or applied twice;
// for the unfenced one, no-stale-write is not applicable. Mutual exclusion is reported,
// not asserted: client-go does not promise it (docs/targets.md has what the runs found).
func TestClientGoTargets(t *testing.T) {
	if testing.Short() {
		t.Skip("three 15-second chaos runs")
	}
	bin := testbin.Fenceline(t)
	for i, name := range []string{targets.ClientGo, targets.ClientGoFenced, targets.ClientGoTransitions} {
		t.Run(name, func(t *testing.T) {
			cfg := config(t, bin, 15*time.Second, int64(20261205+i))
			cfg.Node.Target, cfg.Node.LeaseTTL = name, 2*time.Second
			if err := harness.Run(context.Background(), cfg); err != nil {
				t.Fatal(err)
			}
			run, err := history.LoadRun(cfg.Dir)
			if err != nil {
				t.Fatal(err)
			}
			res, err := checker.Check(context.Background(), run, workloads.CheckerOptions(run.Info, cfg.Dir))
			if err != nil {
				t.Fatal(err)
			}
			verdicts := map[string]checker.Verdict{}
			for _, c := range res.Checks {
				verdicts[c.Name] = c.Verdict
				t.Logf("%-26s %-14s %s", c.Name, c.Verdict, c.Message)
			}
			if res.LeaderChanges < 1 {
				t.Errorf("no leader change in the run (kept in %s)", cfg.Dir)
			}
			tg, _ := targets.ByName(name)
			if !tg.Fenced {
				if v := verdicts[checker.CheckStaleWrite]; v != checker.NotApplicable {
					t.Errorf("no-stale-write of an unfenced target: %s, want %s", v, checker.NotApplicable)
				}
				return
			}
			for _, c := range []string{checker.CheckStaleWrite, checker.CheckUniqueTokens, checker.CheckExactlyOnce,
				checker.CheckLinearizability, checker.CheckCursorMonotonic, checker.CheckProgress} {
				if v := verdicts[c]; v != checker.Valid {
					t.Errorf("%s: %s, want valid (run kept in %s)", c, v, cfg.Dir)
				}
			}
			assertNothingLeft(t, cfg.Dir)
		})
	}
}
