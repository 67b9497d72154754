package nemesis_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/nemesis"
)

// aim makes the fault of an aimed step and waits for its moment, as the harness does.
func aim(t *testing.T, c nemesis.Backend, kind, moment, target string) (nemesis.Fault, string, string) {
	t.Helper()
	f, err := nemesis.ForStep(nemesis.Step{Kind: kind, Moment: moment})
	if err != nil {
		t.Fatal(err)
	}
	held, what, err := f.(nemesis.Aimer).Aim(context.Background(), c, target, nemesis.Params{LeaseTTL: lease})
	if err != nil {
		t.Fatalf("aim %s at %s: %v (%s)", kind, moment, err, what)
	}
	return f, held, what
}

// lastAcquire is the time of node id's latest acquire that won, from its history.
func lastAcquire(t *testing.T, dir, id string) (int64, int64) {
	t.Helper()
	evs, err := history.ReadFile(filepath.Join(dir, history.HistoryDir, id+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var at, tok int64
	for _, e := range evs {
		if e.Kind == history.KindAcquire && e.Type == history.OK {
			at, tok = e.Time, e.Token
		}
	}
	return at, tok
}

// A kill aimed at the moment a node acquired lands on the node that just won, while it
// is held between its acquire and its term: within a few polls of the acquire, and
// before its first commit. The leader stopped to make the handover is back after the
// heal.
func TestAimedAtAcquired(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, false)
	old, tok := leader(t, c, 0)
	f, held, what := aim(t, c, faults.Kill, nemesis.MomentAcquired, old)
	landed := time.Now().UnixNano()
	if held == old || !strings.Contains(what, "held at election/acquire-after-win") {
		t.Fatalf("held %s (%s); want a successor of %s held just after it won", held, what, old)
	}
	st, err := c.NodeStatus(context.Background(), held)
	if err != nil || st.Role == "leader" || st.Commits != 0 {
		t.Fatalf("%s while held: %+v, %v; want it not yet leading, no commit", held, st, err)
	}
	if _, err := f.Inject(context.Background(), c, held, nemesis.Params{LeaseTTL: lease}); err != nil {
		t.Fatal(err)
	}
	won, newTok := lastAcquire(t, c.Dir(), held)
	// Generous: the hits are read every 5 ms, on a loaded 2-core machine.
	if newTok <= tok || landed-won > int64(500*time.Millisecond) || landed < won {
		t.Fatalf("the kill landed %v after %s's acquire of token %d (the old token %d); want within 500ms",
			time.Duration(landed-won), held, newTok, tok)
	}
	t.Logf("the kill landed %v after %s won token %d", time.Duration(landed-won), held, newTok)
	if c.Running(held) || c.Running(old) {
		t.Fatalf("running after the kill: %s %v, %s %v", held, c.Running(held), old, c.Running(old))
	}
	heal(t, c, f, held)
	if !c.Running(held) || !c.Running(old) {
		t.Fatal("the heal did not restart both nodes")
	}
	leader(t, c, newTok)
}

// A pause aimed before a commit freezes the leader with a commit in hand: it commits
// nothing while held, and goes on (as a follower) when healed.
func TestAimedBeforeCommit(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, false)
	id, tok := leader(t, c, 0)
	f, held, _ := aim(t, c, faults.Pause, nemesis.MomentBeforeCommit, id)
	if held != id {
		t.Fatalf("held %s, want the leader %s", held, id)
	}
	before, err := c.NodeStatus(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if after, err := c.NodeStatus(context.Background(), id); err != nil || after.Commits != before.Commits {
		t.Fatalf("the held leader committed: %d then %d commits (%v)", before.Commits, after.Commits, err)
	}
	if _, err := f.Inject(context.Background(), c, id, nemesis.Params{LeaseTTL: lease}); err != nil {
		t.Fatal(err)
	}
	leader(t, c, tok, id)
	heal(t, c, f, id)
	eventually(t, electTimeout, id+" back as follower", func() bool { return role(c, id) == "follower" })
}

// A pause aimed at a release freezes a stopped leader before its release is sent: a
// standby takes over when the lease runs out, and after the heal the old leader's late
// release (a compare-and-delete of a lock no longer its own) lets it exit, and it is
// restarted.
func TestAimedAtRelease(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, false)
	id, tok := leader(t, c, 0)
	f, held, what := aim(t, c, faults.Pause, nemesis.MomentRelease, id)
	if held != id || !strings.Contains(what, "held at election/release-before-send") {
		t.Fatalf("held %s (%s), want the leader %s held before its release", held, what, id)
	}
	if _, err := f.Inject(context.Background(), c, id, nemesis.Params{LeaseTTL: lease}); err != nil {
		t.Fatal(err)
	}
	next, _ := leader(t, c, tok, id)
	heal(t, c, f, id)
	if !c.Running(id) {
		t.Fatalf("%s not restarted", id)
	}
	eventually(t, electTimeout, id+" back as follower", func() bool { return role(c, id) == "follower" })
	if role(c, next) != "leader" {
		t.Errorf("the late release of %s ended %s's term", id, next)
	}
}
