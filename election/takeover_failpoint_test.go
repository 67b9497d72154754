//go:build failpoints

package election_test

import (
	"slices"
	"testing"
	"time"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/internal/failpoint"
	"github.com/fenceline/fenceline/internal/redisserver"
)

// The takeover script checks again, in the step that takes the lock, what the standby's
// poll saw: that the lock still holds the vanished leader's value and that nobody
// listens on its presence channel. The failpoint between the poll and the takeover holds
// the standbys there while the lock or the presence changes.
func TestTakeoverChecksAgainAtomically(t *testing.T) {
	// Two standbys see the same leader vanish; each is held 300 ms before its takeover.
	// The first takes the lock; the second's script finds the lock no longer the dead
	// leader's and takes nothing (a plain SET would overwrite the first's fresh lease).
	t.Run("two standbys", func(t *testing.T) {
		srv := redisserver.New(t)
		p := startProxy(t, srv.Addr())
		a := startNode(t, newClient(t, p.addr()), takeoverConfig("a", true), nil)
		first := a.term(t, wait)
		var active leaders
		b := startNode(t, newClient(t, srv.Addr()), takeoverConfig("b", true), &active)
		c := startNode(t, newClient(t, srv.Addr()), takeoverConfig("c", true), &active)
		time.Sleep(200 * time.Millisecond) // b and c have found the lease held
		armFailpoint(t, failpoint.TakeoverBetweenSteps, "2*sleep(300ms)")
		p.close()
		var winner *node
		select {
		case term := <-b.starts:
			winner = b
			t.Logf("b took over with token %d", term.Token)
		case term := <-c.starts:
			winner = c
			t.Logf("c took over with token %d", term.Token)
		case <-time.After(wait):
			t.Fatal("neither standby took over")
		}
		time.Sleep(time.Second) // the other's takeover has run by now
		if got := b.rec.takeovers(); len(got)+len(c.rec.takeovers()) != 1 {
			t.Errorf("takeovers: b %v, c %v; want exactly one of a's lock %s", got, c.rec.takeovers(), election.LockValue("a", first.Token))
		}
		if m := active.most.Load(); m != 1 {
			t.Errorf("%d standbys led at once, want 1", m)
		}
		if st := winner.e.Status(); st.Role != election.RoleLeader {
			t.Errorf("%s: %+v, want the leader", winner.id, st)
		}
	})
	// The standby's poll finds the leader's presence gone; before its takeover runs, the
	// presence is back (the leader reconnected and subscribed again, as go-redis does after
	// a reset). The script counts the listener and takes nothing.
	t.Run("presence back", func(t *testing.T) {
		srv := redisserver.New(t)
		p := startProxy(t, srv.Addr())
		a := startNode(t, newClient(t, p.addr()), takeoverConfig("a", true), nil)
		a.term(t, wait)
		b := startNode(t, newClient(t, srv.Addr()), takeoverConfig("b", true), nil)
		time.Sleep(200 * time.Millisecond)
		before := hits(failpoint.TakeoverBetweenSteps)
		armFailpoint(t, failpoint.TakeoverBetweenSteps, "block")
		p.close()
		time.Sleep(200 * time.Millisecond) // b's poll saw a gone; b is held at the failpoint
		if n := hits(failpoint.TakeoverBetweenSteps) - before; n != 1 {
			t.Fatalf("the failpoint was hit %d times, want 1 (b's takeover)", n)
		}
		back := newClient(t, srv.Addr()).Subscribe(t.Context(), election.PresenceChannel(election.DefaultName, "a"))
		t.Cleanup(func() { _ = back.Close() })
		if _, err := back.Receive(t.Context()); err != nil {
			t.Fatal(err)
		}
		failpoint.DisarmAll() // b's takeover runs now
		select {
		case term := <-b.starts:
			t.Fatalf("b took over (token %d) from a leader whose presence was back", term.Token)
		case <-time.After(time.Second):
		}
		if got := b.rec.takeovers(); len(got) != 0 {
			t.Errorf("b took over %v", got)
		}
	})
	// The takeover wins, but its reply is lost: the standby adopts the term at its next
	// attempt, and the adoption records the takeover it began with (Result.TookOver), so
	// that a check of the history knows why the vanished leader's lease ended early.
	t.Run("reply lost", func(t *testing.T) {
		srv := redisserver.New(t)
		p := startProxy(t, srv.Addr())
		a := startNode(t, newClient(t, p.addr()), takeoverConfig("a", true), nil)
		first := a.term(t, wait)
		b := startNode(t, newClient(t, srv.Addr()), takeoverConfig("b", true), nil)
		time.Sleep(200 * time.Millisecond)
		armFailpoint(t, failpoint.TakeoverBetweenSteps, "block")
		p.close()
		time.Sleep(200 * time.Millisecond) // b's poll saw a gone; b is held at the failpoint
		armFailpoint(t, failpoint.AcquireBeforeReply, "1*error")
		if err := failpoint.Disarm(failpoint.TakeoverBetweenSteps); err != nil { // b's takeover runs now
			t.Fatal(err)
		}
		select {
		case term := <-b.starts:
			t.Logf("b leads token %d; steps %v", term.Token, b.rec.snapshot())
		case <-time.After(wait):
			t.Fatalf("b did not lead: steps %v", b.rec.snapshot())
		}
		if !slices.Contains(b.rec.snapshot(), "acquire/unknown") {
			t.Errorf("steps %v: the takeover's reply was not lost", b.rec.snapshot())
		}
		if got, want := b.rec.takeovers(), []string{election.LockValue("a", first.Token)}; !slices.Equal(got, want) {
			t.Errorf("takeovers recorded %v, want %v: the adoption must name the takeover its term began with", got, want)
		}
	})
}

// hits is how many hits of point name ran an action since the process began.
func hits(name string) int64 {
	for _, s := range failpoint.Status() {
		if s.Name == name {
			return s.Hits
		}
	}
	return 0
}
