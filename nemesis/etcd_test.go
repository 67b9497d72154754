package nemesis

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/faults"
)

// fakeEtcd is a cluster with etcd members whose leader is known (or not: "").
type fakeEtcd struct {
	fakeCluster
	members []string
	etcdLdr string
	toxics  map[string][]string // node -> toxic names on its etcd links
}

func (f *fakeEtcd) EtcdMembers() []string { return f.members }
func (f *fakeEtcd) EtcdLeader(context.Context) (string, error) {
	if f.etcdLdr == "" {
		return "", errors.New("no leader")
	}
	return f.etcdLdr, nil
}
func (f *fakeEtcd) KillEtcd(_ context.Context, m string) error  { return f.note("kill " + m) }
func (f *fakeEtcd) PauseEtcd(_ context.Context, m string) error { return f.note("pause " + m) }
func (f *fakeEtcd) StartEtcd(context.Context) error             { return f.note("start etcd") }
func (f *fakeEtcd) AddEtcdToxic(_ context.Context, id string, t backend.Toxic) error {
	f.toxics[id] = append(f.toxics[id], t.Name)
	return nil
}
func (f *fakeEtcd) RemoveEtcdToxics(_ context.Context, id string, names ...string) error {
	f.toxics[id] = slices.DeleteFunc(f.toxics[id], func(n string) bool { return slices.Contains(names, n) })
	return nil
}

func newFakeEtcd(members ...string) *fakeEtcd {
	return &fakeEtcd{fakeCluster: fakeCluster{nodes: []string{"n1", "n2"}, stopped: map[string]bool{}},
		members: members, toxics: map[string][]string{}}
}

func injectHeal(t *testing.T, c Backend, kind, aim string, p Params) string {
	t.Helper()
	f, err := ByKind(kind)
	if err != nil {
		t.Fatal(err)
	}
	what, err := f.Inject(context.Background(), c, aim, p)
	if err != nil {
		t.Fatalf("%s: %v", kind, err)
	}
	if _, err := f.Heal(context.Background(), c, aim); err != nil {
		t.Fatalf("%s heal: %v", kind, err)
	}
	return what
}

// etcd-kill and etcd-pause hit the raft leader of three members (any member, by the
// seed, mid-election), the only member of one; etcd-restart the member the seed picks.
// Every heal starts what is down.
func TestEtcdMemberFaults(t *testing.T) {
	for _, c := range []struct {
		kind, leader string
		members      []string
		variant      int
		want         string
	}{
		{faults.EtcdKill, "e2", []string{"e1", "e2", "e3"}, 0, "kill e2"},
		{faults.EtcdKill, "", []string{"e1", "e2", "e3"}, 2, "kill e3"},
		{faults.EtcdPause, "e3", []string{"e1", "e2", "e3"}, 0, "pause e3"},
		{faults.EtcdPause, "", []string{"e1"}, 2, "pause e1"},
		{faults.EtcdKill, "e1", []string{"e1"}, 1, "kill e1"},
		{faults.EtcdRestart, "e2", []string{"e1", "e2", "e3"}, 0, "kill e1"},
		{faults.EtcdRestart, "e2", []string{"e1", "e2", "e3"}, 4, "kill e2"},
	} {
		e := newFakeEtcd(c.members...)
		e.etcdLdr = c.leader
		what := injectHeal(t, e, c.kind, TargetEtcd, Params{Variant: c.variant})
		if want := []string{c.want, "start etcd"}; !slices.Equal(e.did, want) {
			t.Errorf("%s (leader %q, %d members, variant %d): did %v, want %v", c.kind, c.leader, len(c.members), c.variant, e.did, want)
		}
		if !strings.Contains(what, strings.Fields(c.want)[1]) {
			t.Errorf("%s says %q, not the member", c.kind, what)
		}
	}
}

// partition-etcd puts the blackhole on the node's etcd links only, and the heal takes it away.
func TestEtcdPartition(t *testing.T) {
	e := newFakeEtcd("e1", "e2", "e3")
	f, _ := ByKind(faults.PartitionEtcd)
	ctx := context.Background()
	if _, err := f.Inject(ctx, e, "n2", Params{}); err != nil {
		t.Fatal(err)
	}
	if len(e.toxics["n2"]) != 2 || len(e.toxics["n1"]) != 0 || len(e.did) != 0 {
		t.Fatalf("toxics %v, did %v", e.toxics, e.did)
	}
	if _, err := f.Heal(ctx, e, "n2"); err != nil || len(e.toxics["n2"]) != 0 {
		t.Fatalf("heal: %v, toxics %v", err, e.toxics)
	}
}

// Without etcd the faults refuse to inject (saying why) and heal as a no-op; HealAll
// starts etcd only where there is one.
func TestEtcdFaultsNeedEtcd(t *testing.T) {
	ctx := context.Background()
	none := &fakeCluster{nodes: []string{"n1"}, stopped: map[string]bool{}}
	empty := newFakeEtcd() // the backend's type, run without etcd
	for _, c := range []Backend{none, empty} {
		for _, k := range faults.Etcd() {
			f, _ := ByKind(k)
			if _, err := f.Inject(ctx, c, "n1", Params{}); !errors.Is(err, faults.ErrNoEtcd) {
				t.Errorf("%s without etcd: %v, want ErrNoEtcd", k, err)
			}
			if _, err := f.Heal(ctx, c, "n1"); err != nil {
				t.Errorf("%s heal without etcd: %v", k, err)
			}
		}
		if err := HealAll(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if slices.Contains(empty.did, "start etcd") {
		t.Errorf("HealAll started etcd in a cluster without: %v", empty.did)
	}
	e := newFakeEtcd("e1")
	if err := HealAll(ctx, e); err != nil || !slices.Contains(e.did, "start etcd") {
		t.Errorf("HealAll: %v, did %v", err, e.did)
	}
}

// A schedule of the etcd faults holds each for its time (the member faults longer than
// the lease but the restart) and aims only the partition at a node.
func TestEtcdSchedule(t *testing.T) {
	lease := time.Second
	steps, err := NewSchedule(ScheduleOptions{Seed: 3, Kinds: faults.Etcd(), Duration: time.Minute, LeaseTTL: lease, Nodes: 3})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, s := range steps {
		seen[s.Kind] = true
		minHold := lease * 3 / 2
		if s.Kind == faults.EtcdRestart {
			minHold = lease / 10
		}
		if s.Params.Hold < minHold {
			t.Errorf("%s held %v, want >= %v", s.Kind, s.Params.Hold, minHold)
		}
		if aimed := s.Aim != (Aim{}); aimed != (s.Kind == faults.PartitionEtcd) {
			t.Errorf("%s aimed at %v", s.Kind, s.Aim)
		}
	}
	if len(seen) != len(faults.Etcd()) {
		t.Errorf("a minute of etcd faults drew only %v", seen)
	}
}
