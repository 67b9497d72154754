//go:build chaos

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenceline/fenceline/experiment/chaosrun"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/internal/exitcode"
)

// A replay needs a stored run with its schedule, and takes that run's settings: a
// settings flag beside it, or a directory without schedule.json, is exit 2 in one line.
func TestReplayUsage(t *testing.T) {
	dir := storedRun(t, map[string]any{history.RunInfoFile: history.RunInfo{Seed: 3, Nodes: []string{"n1"}}})
	wantUsage(t, []string{"chaos", "--out", t.TempDir()}, true, []usageCase{
		{[]string{"--replay", dir}, "schedule.json"},
		{[]string{"--replay", t.TempDir()}, "run.json"},
		{[]string{"--replay", dir, "--seed", "4", "--nodes", "5"}, "--nodes, --seed cannot be given"},
		{[]string{"--replay", dir, "--start-cursor", "4"}, "--start-cursor cannot be given"},
	})
}

// A replay runs the stored schedule with the stored seed and settings: the same
// schedule.json, the same faults in the same order on the same kind of target, and the
// same store, the same start of the token counter and the cursor (pinned here to values
// no seed draws).
func TestReplayReproducesTheSchedule(t *testing.T) {
	realRuns(t, "two chaos runs")
	bin, out := helperBinary(t), t.TempDir() // this test binary, as fenceline
	run := func(args ...string) string {
		t.Helper()
		o := filepath.Join(out, args[len(args)-1])
		code, _, stderr := runCmd(append([]string{"chaos", "--quiet", "--binary", bin, "--out", o}, args[:len(args)-1]...)...)
		// The verdict is not this test's business (nodes built with -race on a loaded
		// machine can miss a deadline); a run completed and judged is.
		if code != exitOK && code != exitcode.Invalid {
			t.Fatalf("fenceline chaos %v: exit %d\n%s", args, code, stderr)
		}
		dir, err := filepath.EvalSymlinks(filepath.Join(o, "latest"))
		if err != nil {
			t.Fatal(err)
		}
		return dir
	}
	// With the cursor in PostgreSQL: the replay must run the store of the stored run.
	orig := run("--duration", "6s", "--nemesis", "kill,stop", "--seed", "11", "--lease-ttl", "1s", "--store", "postgres",
		"--start-token", "123456789", "--start-cursor", "2147483000", "first")
	again := run("--replay", orig, "second")
	read := func(dir, name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if a, b := read(orig, history.ScheduleFile), read(again, history.ScheduleFile); !bytes.Equal(a, b) {
		t.Errorf("schedules differ:\n%s\n%s", a, b)
	}
	faultsOf := func(dir string) []string {
		r, err := history.LoadRun(dir)
		if err != nil {
			t.Fatal(err)
		}
		var kinds []string
		for _, f := range r.Faults {
			if f.Type == history.Invoke {
				kinds = append(kinds, f.Fault)
			}
		}
		return kinds
	}
	a, b := faultsOf(orig), faultsOf(again)
	if len(a) == 0 || strings.Join(a, ",") != strings.Join(b, ",") {
		t.Errorf("faults %v, replayed %v", a, b)
	}
	var ia, ib history.RunInfo
	for dir, info := range map[string]*history.RunInfo{orig: &ia, again: &ib} {
		if err := chaosrun.ReadJSONFile(filepath.Join(dir, history.RunInfoFile), info); err != nil {
			t.Fatal(err)
		}
	}
	if ia.Seed != ib.Seed || ia.LeaseTTL != ib.LeaseTTL || ia.Duration != ib.Duration || strings.Join(ia.Nemeses, ",") != strings.Join(ib.Nemeses, ",") ||
		ia.Store != "postgres" || ib.Store != "postgres" {
		t.Errorf("settings %+v, replayed %+v", ia, ib)
	}
	if ia.StartToken != 123456789 || ia.StartCursor != 2147483000 || ib.StartToken != ia.StartToken || ib.StartCursor != ia.StartCursor {
		t.Errorf("start %d/%d, replayed from %d/%d; want 123456789/2147483000 both times", ia.StartToken, ia.StartCursor, ib.StartToken, ib.StartCursor)
	}
}

// Shrinking needs a stored run that failed: a valid run, or a directory without its
// schedule, is exit 2 in one line.
func TestShrinkUsage(t *testing.T) {
	valid := storedRun(t, map[string]any{
		history.RunInfoFile: history.RunInfo{Seed: 3, Nodes: []string{"n1"}}, history.ScheduleFile: []any{},
		"results.json": map[string]string{"verdict": "valid"},
	})
	noSchedule := storedRun(t, map[string]any{history.RunInfoFile: history.RunInfo{Seed: 3, Nodes: []string{"n1"}}})
	wantUsage(t, []string{"shrink"}, true, []usageCase{
		{[]string{valid}, "only a failing run can be shrunk"},
		{[]string{noSchedule}, "schedule.json"},
		{[]string{t.TempDir()}, "run.json"},
		{[]string{}, "fenceline shrink: want RUN_DIR, got 0 arguments"},
		{[]string{valid, "--budget", "1m"}, "flag provided but not defined: -budget"},
		{[]string{valid, "--runs", "1"}, "flag provided but not defined: -runs"},
	})
}

// A replay runs on the stored run's Redis topology and mitigations: a cluster run with a
// min-replicas-to-write that a cluster cannot have is refused as the original would be,
// for its topology, and a replay of a cluster run cannot be given --redis-topology.
func TestReplayKeepsTheTopology(t *testing.T) {
	dir := storedRun(t, map[string]any{
		history.RunInfoFile: history.RunInfo{Seed: 3, Nodes: []string{"n1", "n2", "n3"}, Workload: "listener", Backend: "docker",
			Nemeses: []string{"redis-failover"}, LeaseTTL: 2e9, Duration: 6e9,
			Redis: &history.RedisSetup{Topology: "cluster", MinReplicasToWrite: 2, Wait: 1}},
		history.ScheduleFile: []any{},
	})
	wantUsage(t, []string{"chaos", "--out", t.TempDir()}, false, []usageCase{
		{[]string{"--replay", dir}, "min-replicas-to-write 2 (0..1 with cluster)"},
		{[]string{"--replay", dir, "--redis-topology", "single"}, "--redis-topology cannot be given"},
	})
}
