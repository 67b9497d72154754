//go:build chaos

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/nemesis"
)

// Shrink with real runs: volatile-redis fails exactly when Redis restarts without its
// append-only file (the token counter starts again, tokens repeat), whatever else the
// schedule holds. Of a kill, that restart and a stop, shrink keeps the restart alone,
// and the run it found says "Shrunk from 3 faults to 1". About 40 s: four short runs.
func TestShrinkFindsTheOneFault(t *testing.T) {
	realRuns(t, "four chaos runs")
	lease := time.Second
	p := nemesis.Params{LeaseTTL: lease}
	step := func(at time.Duration, kind string, hold time.Duration) nemesis.Step {
		p := p
		p.Hold = hold
		return nemesis.Step{At: at, Kind: kind, Aim: nemesis.Aim{Leader: true}, Params: p}
	}
	steps := []nemesis.Step{
		step(500*time.Millisecond, faults.Kill, 500*time.Millisecond),
		step(2500*time.Millisecond, faults.RedisRestartVolatile, 200*time.Millisecond),
		step(4*time.Second, faults.Stop, 500*time.Millisecond),
	}
	steps[1].Aim = nemesis.Aim{}
	orig := storedRun(t, map[string]any{
		history.RunInfoFile: history.RunInfo{Seed: 5, Nodes: []string{"n1", "n2", "n3"}, Workload: "listener",
			Variant: "volatile-redis", Backend: "local", LeaseTTL: lease, Duration: 8 * time.Second,
			Nemeses: []string{faults.Kill, faults.RedisRestartVolatile, faults.Stop}},
		history.ScheduleFile: steps,
		"results.json":       map[string]string{"verdict": "invalid"},
	})
	out := t.TempDir()
	code, stdout, stderr := runCmd("shrink", "--repeat", "1", "--time-limit", "3m", "--binary", helperBinary(t), "--out", out, orig)
	if code != exitOK || !strings.Contains(stdout, "shrunk from 3 faults to 1 ") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	var got []nemesis.Step
	b, err := os.ReadFile(filepath.Join(out, "shrunk-schedule.json"))
	if err == nil {
		err = json.Unmarshal(b, &got)
	}
	if err != nil || len(got) != 1 || got[0].Kind != faults.RedisRestartVolatile || got[0].At != steps[0].At {
		t.Fatalf("shrunk schedule %s (%v); want the volatile restart alone, at the original's first fault's time", b, err)
	}
	var dir string
	for _, l := range strings.Split(stdout, "\n") {
		if d, ok := strings.CutPrefix(l, "failing run: "); ok {
			dir = d
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil || !strings.Contains(string(md), "Shrunk from 3 faults to 1") {
		t.Fatalf("%s/report.md does not say it was shrunk (%v)", dir, err)
	}
	t.Logf("%s%s", stdout, stderr)
}
