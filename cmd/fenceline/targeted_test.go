//go:build chaos

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/internal/exitcode"
	"github.com/fenceline/fenceline/nemesis"
)

// One pause aimed at the moment the leader is about to commit catches no-fence: the
// leader wakes with the commit in hand and writes after its successor has. (A pause at
// a random time catches it in about 1 of 10 leader pauses.)
func TestAimedPauseCatchesNoFence(t *testing.T) {
	realRuns(t, "a chaos run")
	lease := time.Second
	steps := []nemesis.Step{{At: 500 * time.Millisecond, Kind: faults.Pause, Aim: nemesis.Aim{Leader: true},
		Moment: nemesis.MomentBeforeCommit, Params: nemesis.Params{LeaseTTL: lease, Hold: 2500 * time.Millisecond}}}
	orig := storedRun(t, map[string]any{
		history.RunInfoFile: history.RunInfo{Seed: 9, Nodes: []string{"n1", "n2", "n3"}, Workload: "listener",
			Variant: "no-fence", Backend: "local", LeaseTTL: lease, Duration: 6 * time.Second, Nemeses: []string{faults.Pause}},
		history.ScheduleFile: steps,
	})
	out := t.TempDir()
	code, stdout, stderr := runCmd("chaos", "--quiet", "--binary", helperBinary(t), "--out", out, "--replay", orig)
	if code != exitcode.Invalid || !strings.Contains(stdout, "no-stale-write") {
		t.Fatalf("exit %d, want 1 with a stale write\n%s\n%s", code, stdout, stderr)
	}
	dir, err := filepath.EvalSymlinks(filepath.Join(out, "latest"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, history.ScheduleFile))
	if err != nil || !strings.Contains(string(b), `"moment": "before-commit"`) {
		t.Fatalf("schedule.json of the run does not keep the moment: %s (%v)", b, err)
	}
}
