//go:build chaos

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/internal/exitcode"
)

// A replay needs a stored run with its schedule, and takes that run's settings: a
// settings flag beside it, or a directory without schedule.json, is exit 2 in one line.
func TestReplayUsage(t *testing.T) {
	dir := t.TempDir()
	if err := history.WriteJSON(filepath.Join(dir, history.RunInfoFile), history.RunInfo{Seed: 3, Nodes: []string{"n1"}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--replay", dir}, "schedule.json"},
		{[]string{"--replay", t.TempDir()}, "run.json"},
		{[]string{"--replay", dir, "--seed", "4", "--nodes", "5"}, "--nodes, --seed cannot be given"},
	} {
		code, _, stderr := runCmd(append([]string{"chaos", "--out", t.TempDir()}, tc.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("fenceline chaos %s: exit %d, stderr %q; want 2 and one line with %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
}

// A replay runs the stored schedule with the stored seed and settings: the same
// schedule.json, and the same faults in the same order on the same kind of target.
func TestReplayReproducesTheSchedule(t *testing.T) {
	if testing.Short() {
		t.Skip("two chaos runs")
	}
	t.Setenv(passwordEnv, "")
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
	orig := run("--duration", "6s", "--nemesis", "kill,stop", "--seed", "11", "--lease-ttl", "1s", "first")
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
		if err := readJSONFile(filepath.Join(dir, history.RunInfoFile), info); err != nil {
			t.Fatal(err)
		}
	}
	if ia.Seed != ib.Seed || ia.LeaseTTL != ib.LeaseTTL || ia.Duration != ib.Duration || strings.Join(ia.Nemeses, ",") != strings.Join(ib.Nemeses, ",") {
		t.Errorf("settings %+v, replayed %+v", ia, ib)
	}
}

// Shrinking needs a stored run that failed: a valid run, or a directory without its
// schedule, is exit 2 in one line.
func TestShrinkUsage(t *testing.T) {
	valid := t.TempDir()
	for name, v := range map[string]any{
		history.RunInfoFile: history.RunInfo{Seed: 3, Nodes: []string{"n1"}}, history.ScheduleFile: []any{},
		"results.json": map[string]string{"verdict": "valid"},
	} {
		if err := history.WriteJSON(filepath.Join(valid, name), v); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{valid}, "only a failing run can be shrunk"},
		{[]string{t.TempDir()}, "run.json"},
		{[]string{}, "usage: fenceline shrink"},
	} {
		code, _, stderr := runCmd(append([]string{"shrink"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("fenceline shrink %s: exit %d, stderr %q; want 2 and one line with %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
}

// A replay runs on the stored run's Redis topology and mitigations: a cluster run
// replayed on the docker backend is refused as the original would be, for its topology,
// and a replay of a cluster run cannot be given --redis-topology.
func TestReplayKeepsTheTopology(t *testing.T) {
	dir := t.TempDir()
	info := history.RunInfo{Seed: 3, Nodes: []string{"n1", "n2", "n3"}, Workload: "listener", Backend: "docker",
		Nemeses: []string{"redis-failover"}, LeaseTTL: 2e9, Duration: 6e9, RedisTopology: "cluster", MinReplicasToWrite: 1, RedisWait: 1}
	if err := history.WriteJSON(filepath.Join(dir, history.RunInfoFile), info); err != nil {
		t.Fatal(err)
	}
	if err := history.WriteJSON(filepath.Join(dir, history.ScheduleFile), []any{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--replay", dir}, "--redis-topology cluster runs on the local backend only"},
		{[]string{"--replay", dir, "--redis-topology", "single"}, "--redis-topology cannot be given"},
	} {
		code, _, stderr := runCmd(append([]string{"chaos", "--out", t.TempDir()}, tc.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("fenceline chaos %s: exit %d, stderr %q; want 2 and %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
}
