//go:build chaos

package chaosrun

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/nemesis"
)

// A replay takes the store and the Redis setup from run.json, and a run recorded before
// run.json had them replays as it ran: the cursor in Redis, one Redis server.
func TestReplaySettingsStoreAndTopology(t *testing.T) {
	for _, tc := range []struct {
		name string
		info history.RunInfo
		want map[string]string
	}{
		{"postgres-sentinel", history.RunInfo{Seed: 5, Nodes: []string{"n1", "n2"}, Backend: "docker", Store: "postgres",
			Redis: &history.RedisSetup{Topology: "sentinel", MinReplicasToWrite: 1, MinReplicasMaxLag: 2, Wait: 1}},
			map[string]string{"store": "postgres", "redis-topology": "sentinel", "min-replicas-to-write": "1",
				"min-replicas-max-lag": "2", "redis-wait": "1", "backend": "docker", "nodes": "2", "seed": "5"}},
		{"recorded-before", history.RunInfo{Seed: 6, Nodes: []string{"n1"}, Backend: "local"},
			map[string]string{"store": "redis", "redis-topology": "single", "min-replicas-to-write": "0",
				"min-replicas-max-lag": "1", "redis-wait": "0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := history.WriteJSON(filepath.Join(dir, history.RunInfoFile), tc.info); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, history.ScheduleFile), []byte("[]"), 0o644); err != nil {
				t.Fatal(err)
			}
			fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
			for _, name := range ReplayFlags {
				fs.String(name, "", "")
			}
			if _, err := ReplaySettings(fs, dir); err != nil {
				t.Fatal(err)
			}
			for name, want := range tc.want {
				if got := fs.Lookup(name).Value.String(); got != want {
					t.Errorf("--%s = %q, want %q", name, got, want)
				}
			}
		})
	}
}

// --schedule auto aims the faults where the nodes have the failpoints to be held at.
func TestAutoSchedule(t *testing.T) {
	for _, tc := range []struct {
		target, nodeCmd, workload, budget, want string
	}{
		{"", "", "listener", "", nemesis.ScheduleTargeted},
		{"reference", "", "listener", "", nemesis.ScheduleTargeted},
		{"redsync", "", "listener", "", nemesis.ScheduleRandom},
		{"", "python3 node.py", "listener", "", nemesis.ScheduleRandom},
		{"", "", "register", "", nemesis.ScheduleRandom},
		{"", "", "listener", "kill.p99=2.5s", nemesis.ScheduleRandom},
	} {
		if got := AutoSchedule(tc.target, tc.nodeCmd, tc.workload, tc.budget); got != tc.want {
			t.Errorf("AutoSchedule(%q, %q, %q, %q) = %s, want %s", tc.target, tc.nodeCmd, tc.workload, tc.budget, got, tc.want)
		}
	}
}
