package nemesis

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/faults"
)

// fakeRedlock is a cluster with Redlock servers; it records what was done to them.
type fakeRedlock struct {
	fakeCluster
	servers int
}

func (f *fakeRedlock) RedlockServers() int { return f.servers }
func (f *fakeRedlock) RestartRedlockServer(_ context.Context, i int) error {
	return f.note("restart redlock " + string(rune('0'+i)))
}
func (f *fakeRedlock) AddRedlockToxic(_ context.Context, id string, i int, t backend.Toxic) error {
	return f.note("cut " + id + " from redlock " + string(rune('0'+i)) + " " + t.Type)
}
func (f *fakeRedlock) RemoveRedlockToxics(_ context.Context, id string, i int, _ ...string) error {
	return f.note("uncut " + id + " from redlock " + string(rune('0'+i)))
}
func (f *fakeRedlock) AddRedisToxic(_ context.Context, id string, t backend.Toxic) error {
	return f.note("slow " + id + " " + t.Type)
}

// redlock-restart cuts the leader off one server, heals it, slows the leader and
// restarts the other server, in that order; a cluster without Redlock servers is
// refused.
func TestRedlockRestart(t *testing.T) {
	c := &fakeRedlock{fakeCluster: fakeCluster{nodes: []string{"n1", "n2", "n3"}, stopped: map[string]bool{}}, servers: 2}
	injectHeal(t, c, faults.RedlockRestart, "n1", Params{LeaseTTL: 8 * time.Millisecond})
	got := strings.Join(c.did, "; ")
	want := "cut n1 from redlock 2 reset_peer; cut n1 from redlock 2 reset_peer; uncut n1 from redlock 2; slow n1 latency; restart redlock 1; uncut n1 from redlock 2"
	if got != want {
		t.Errorf("did %q\nwant %q", got, want)
	}
	f, _ := ByKind(faults.RedlockRestart)
	for _, c := range []Backend{&fakeCluster{stopped: map[string]bool{}}, &fakeRedlock{fakeCluster: fakeCluster{stopped: map[string]bool{}}}} {
		if _, err := f.Inject(context.Background(), c, "n1", Params{LeaseTTL: time.Millisecond}); !errors.Is(err, ErrNoRedlock) {
			t.Errorf("%T: %v, want ErrNoRedlock", c, err)
		}
	}
}
