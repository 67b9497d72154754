package nemesis

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/node"
)

// fakeCluster leads with one node and never hits a failpoint; it records what it was
// asked to do.
type fakeCluster struct {
	nodes   []string
	leader  string
	stopped map[string]bool
	did     []string
}

func (f *fakeCluster) Nodes() []string        { return f.nodes }
func (f *fakeCluster) Running(id string) bool { return !f.stopped[id] }
func (f *fakeCluster) note(s string) error    { f.did = append(f.did, s); return nil }
func (f *fakeCluster) StartNode(_ context.Context, id string) error {
	f.stopped[id] = false
	return f.note("start " + id)
}
func (f *fakeCluster) StopNode(_ context.Context, id string) error {
	f.stopped[id] = true
	if f.leader == id {
		f.leader = ""
	}
	return f.note("stop " + id)
}
func (f *fakeCluster) KillNode(_ context.Context, id string) error {
	return f.StopNode(context.Background(), id)
}
func (f *fakeCluster) PauseNode(_ context.Context, id string) error {
	return f.note("pause " + id)
}
func (f *fakeCluster) ResumeNode(_ context.Context, id string) error {
	return f.note("resume " + id)
}
func (f *fakeCluster) SetClock(context.Context, string, time.Duration, float64) error { return nil }
func (f *fakeCluster) AddRedisToxic(context.Context, string, backend.Toxic) error     { return nil }
func (f *fakeCluster) RemoveRedisToxics(context.Context, string, ...string) error     { return nil }
func (f *fakeCluster) ResetLinks(context.Context) error                               { return nil }
func (f *fakeCluster) KillRedis(context.Context) error                                { return nil }
func (f *fakeCluster) StartRedis(context.Context) error                               { return nil }
func (f *fakeCluster) ArmFailpoint(_ context.Context, id, name, action string) error {
	return f.note("arm " + id + " " + name + "=" + action)
}
func (f *fakeCluster) DisarmFailpoints(_ context.Context, id string) error {
	return f.note("disarm " + id)
}
func (f *fakeCluster) FailpointHits(context.Context, string) (map[string]int64, error) {
	return map[string]int64{}, nil
}
func (f *fakeCluster) NodeStatus(_ context.Context, id string) (node.Status, error) {
	if id == f.leader {
		return node.Status{ID: id, Role: "leader"}, nil
	}
	return node.Status{ID: id, Role: "follower"}, nil
}

// A moment that never comes lets the armed nodes go after the bound and lands the
// fault on whoever leads then, never on the leader the step stopped; the heal restarts
// that leader.
func TestMomentThatNeverComes(t *testing.T) {
	c := &fakeCluster{nodes: []string{"n1", "n2", "n3"}, leader: "n1", stopped: map[string]bool{}}
	f, err := ForStep(Step{Kind: faults.Kill, Moment: MomentAcquired})
	if err != nil {
		t.Fatal(err)
	}
	p := Params{LeaseTTL: time.Millisecond}
	target, what, err := f.(Aimer).Aim(context.Background(), c, "n1", p)
	if err != nil || target == "n1" || !strings.Contains(what, "did not come") {
		t.Fatalf("target %q, %q, %v; want a node other than the stopped n1, and the moment missed", target, what, err)
	}
	if _, err := f.Inject(context.Background(), c, target, p); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Heal(context.Background(), c, target); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(c.did, "; ")
	for _, want := range []string{"arm n2 election/acquire-after-win=block", "stop n1", "disarm n2", "start n1"} {
		if !strings.Contains(got, want) {
			t.Errorf("did %q; want %q in it", got, want)
		}
	}
	if !c.Running("n1") {
		t.Error("the stopped leader was not restarted")
	}
}
