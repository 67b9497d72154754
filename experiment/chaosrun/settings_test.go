//go:build chaos

package chaosrun

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/faults"

	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/nemesis"
	"github.com/fenceline/fenceline/workloads"
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
				"min-replicas-max-lag": "2", "redis-wait": "1", "backend": "docker", "nodes": "2", "seed": "5", "etcd-members": "0"}},
		{"etcd", history.RunInfo{Seed: 7, Nodes: []string{"n1"}, Backend: "local", EtcdMembers: 3},
			map[string]string{"etcd-members": "3", "store": "redis"}},
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

// --etcd-members: 1 by default for a target that elects through etcd, 1 or 3 there,
// refused for the others; the etcd faults need etcd.
func TestEtcdMembers(t *testing.T) {
	for _, tc := range []struct {
		target  string
		members int
		nemeses []string
		want    int
		err     string
	}{
		{"etcd", 0, []string{faults.Kill}, 1, ""},
		{"etcd-fenced", 3, faults.Etcd(), 3, ""},
		{"etcd", 2, nil, 0, "1 or 3"},
		{"", 1, nil, 0, "does not elect through etcd"},
		{"redsync", 3, nil, 0, "does not elect through etcd"},
		{"", 0, []string{faults.EtcdKill}, 0, "acts on etcd"},
	} {
		s := Spec{Target: tc.target, EtcdMembers: tc.members, Nemeses: tc.nemeses}
		err := s.prepareEtcd()
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%+v: %v, want an error with %q", tc, err, tc.err)
		case tc.err == "" && (err != nil || s.EtcdMembers != tc.want):
			t.Errorf("%+v: %d members, %v", tc, s.EtcdMembers, err)
		}
		if slices.Contains(tc.nemeses, faults.EtcdKill) && tc.members == 0 && tc.target == "" && !errors.Is(err, faults.ErrNoEtcd) {
			t.Errorf("etcd-kill without etcd: %v, want ErrNoEtcd", err)
		}
	}
}

// redlock-restart acts on Redlock servers, which only the Redlock variant has: named for
// another run, it is a usage error before anything starts.
func TestRedlockRestartNeedsTheVariant(t *testing.T) {
	s := Spec{Nodes: 3, Duration: time.Second, LeaseTTL: 2 * time.Second, Variant: "reference",
		Nemeses: []string{faults.RedlockRestart}, Workload: workloads.Workload{Name: "listener", SourceRate: 400, Batch: 20}}
	if err := s.Prepare(); err == nil || !strings.Contains(err.Error(), "only --variant redlock-majority") {
		t.Errorf("redlock-restart for the reference: %v", err)
	}
}

// presence-loss and presence-flap act on the presence that only --takeover-on-disconnect
// keeps: named for another run, or on replicas, each is a usage error before anything
// starts.
func TestPresenceLossNeedsTakeover(t *testing.T) {
	for _, tc := range []struct {
		takeover bool
		topology string
		ok       bool
	}{
		{false, "", false},
		{true, backend.TopologySentinel, false},
		{true, "", true},
	} {
		for _, k := range []string{faults.PresenceLoss, faults.PresenceFlap} {
			s := Spec{Nodes: 3, Duration: time.Second, LeaseTTL: 2 * time.Second, Variant: "reference", Takeover: tc.takeover,
				Redis: backend.RedisSpec{Topology: tc.topology}, Backend: "local",
				Nemeses: []string{k}, Workload: workloads.Workload{Name: "listener", SourceRate: 400, Batch: 20}}
			err := s.Prepare()
			if refused := err != nil && strings.Contains(err.Error(), "--nemesis "+k); refused == tc.ok {
				t.Errorf("%s, takeover %v, topology %q: %v", k, tc.takeover, tc.topology, err)
			}
		}
	}
}
