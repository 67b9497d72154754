package checker

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/history"
)

// TestStepDown: after a step-down at a shutdown, or after the work returned, the
// node's next election request is the release of its term (the elector's promise), unless
// a kill came between. The mutants this catches: Lead's release condition negated or made
// false, which leaves the lease to run out at every stop.
func TestStepDown(t *testing.T) {
	for _, c := range []struct {
		name string
		// after runs once n1 has stepped down from token tok with reason.
		reason string
		after  func(s *sim, tok int64)
		want   Verdict
	}{
		{"shutdown, then the release", reasonShutdown, func(s *sim, tok int64) { s.release(0, tok) }, Valid},
		{"work returned, then the release", reasonLeadReturned, func(s *sim, tok int64) { s.release(0, tok) }, Valid},
		{"shutdown, then an acquire of the restarted node", reasonShutdown, func(s *sim, tok int64) {
			s.adv(time.Second)
			s.acquire(0)
		}, Invalid},
		{"work returned, then an acquire", reasonLeadReturned, func(s *sim, tok int64) {
			s.adv(500 * time.Millisecond)
			s.acquire(0)
		}, Invalid},
		{"shutdown, then the release of another token", reasonShutdown, func(s *sim, tok int64) { s.release(0, tok+7) }, Invalid},
		{"shutdown, a kill, then an acquire", reasonShutdown, func(s *sim, tok int64) {
			id := s.injectFault("kill", "n1")
			s.adv(time.Second)
			s.healFault(id)
			s.acquire(0)
		}, Valid},
		{"lease expired, then an acquire", reasonLeaseExpired, func(s *sim, tok int64) { s.acquire(0) }, Valid},
		{"shutdown, and the record ends", reasonShutdown, func(s *sim, tok int64) {}, Valid},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSim(simConfig{Seed: 1})
			tok := s.acquire(0)
			s.renew(0, tok)
			s.adv(100 * time.Millisecond)
			if c.reason == reasonLeaseExpired {
				s.adv(s.cfg.LeaseTTL) // at its deadline, not before
			}
			if c.reason == reasonLeadReturned {
				s.refusedStale(0, tok) // what makes the listener return
			}
			s.stepDown(0, tok, c.reason)
			s.adv(time.Millisecond)
			c.after(s, tok)
			wantCheck(t, checkOnly(t, s.end(), CheckStepDown), c.want, "without releasing")
		})
	}
}

// A kill recorded an instant before the step-down (the harness records it before it
// sends SIGKILL) still excuses the missing release: its restart came after.
func TestStepDownKillRace(t *testing.T) {
	s := newSim(simConfig{Seed: 1})
	tok := s.acquire(0)
	s.refusedStale(0, tok)
	id := s.injectFault("kill", "n1")
	s.stepDown(0, tok, reasonLeadReturned)
	s.adv(time.Second)
	s.healFault(id)
	s.acquire(0)
	if cr := checkOnly(t, s.end(), CheckStepDown); cr.Verdict != Valid {
		t.Fatalf("%s: %s %q", cr.Verdict, cr.Message, cr.Offending)
	}
}

// The check judges fenceline's own elector in the listener workload only.
func TestStepDownApplies(t *testing.T) {
	wantOwnElectorOnly(t, CheckStepDown, func(s *sim) {
		tok := s.acquire(0)
		s.stepDown(0, tok, reasonShutdown)
		s.adv(time.Second)
		s.acquire(0) // a new acquire, the term never released
	})
}

// After a shutdown, the process that stepped down sends nothing but its release: an
// elector that read its work's return as a shutdown (Lead's reasons swapped, a mutant)
// releases and campaigns on in the same process. A restarted process may campaign.
func TestStepDownAfterShutdown(t *testing.T) {
	for _, c := range []struct {
		name      string
		restarted bool
		want      Verdict
	}{
		{"the same process campaigns on", false, Invalid},
		{"a restarted process campaigns", true, Valid},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSim(simConfig{Seed: 1})
			tok := s.acquire(0)
			s.stepDown(0, tok, reasonShutdown)
			s.release(0, tok)
			s.adv(time.Second)
			later := len(s.events)
			s.acquire(0)
			// The node's ids in its recorder's form, <node>/<boot>/e<seq>.
			ids := map[string]string{}
			for i := range s.events {
				e := &s.events[i]
				if e.Node != "n1" {
					continue
				}
				if _, ok := ids[e.ID]; !ok {
					boot := "b1"
					if c.restarted && i >= later {
						boot = "b2"
					}
					ids[e.ID] = fmt.Sprintf("n1/%s/e%d", boot, len(ids)+1)
				}
				e.ID = ids[e.ID]
			}
			wantCheck(t, checkOnly(t, s.end(), CheckStepDown), c.want, "same process (boot b1)")
		})
	}
}

// A step-down for an expired lease comes at the deadline the term's confirmed grants gave
// it, not before: an elector that never counts its renewals (Lead's error test negated,
// a mutant) gives up every lease at its first deadline. A clock fault on the node
// excuses it.
func TestStepDownEarlyExpiry(t *testing.T) {
	ttl := 2 * time.Second
	for _, c := range []struct {
		name  string
		after time.Duration // from the last renewal's send to the step-down
		clock bool
		want  Verdict
	}{
		{"at the deadline", ttl - ttl/20, false, Valid},
		{"within the drift margin before it", ttl - 2*ttl/20 + time.Millisecond, false, Valid},
		// Two renewals confirmed, the step-down at the acquire's deadline.
		{"a renewal's lease ahead", ttl - ttl/20 - 1333*time.Millisecond, false, Invalid},
		{"a renewal's lease ahead, a clock fault on the node", ttl - ttl/20 - 1333*time.Millisecond, true, Valid},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSim(simConfig{Seed: 1})
			tok := s.acquire(0)
			if c.clock {
				id := s.injectFault("clock", "n1")
				defer s.healFault(id)
			}
			s.adv(667 * time.Millisecond)
			s.renew(0, tok)
			s.adv(666 * time.Millisecond)
			sent := s.now
			s.renew(0, tok)
			s.now = sent + int64(c.after)
			s.stepDown(0, tok, reasonLeaseExpired)
			s.adv(time.Millisecond)
			wantCheck(t, checkOnly(t, s.end(), CheckStepDown), c.want, "for an expired lease")
		})
	}
}

// A step-down for an expired lease comes at the deadline, not after it: an elector that
// adds the drift margin where it subtracts it (Lead's deadline arithmetic, two mutants)
// believes in its lease past the lock's expiry on Redis. A pause or a clock fault on the
// node excuses it, and so does a term that sent no renewal after its grant: a grant that
// arrived after its deadline ends the term at once.
func TestStepDownLateExpiry(t *testing.T) {
	ttl := 2 * time.Second
	deadline := ttl - ttl/20 // from the last confirmed renewal's send
	for _, c := range []struct {
		name    string
		after   time.Duration // from the last confirmed renewal's send to the step-down
		fault   string        // on the node from before that renewal to after the step-down
		renewed bool          // a renewal was sent after the last confirmed one
		want    Verdict
	}{
		{"at the deadline", deadline + 5*time.Millisecond, "", true, Valid},
		{"within the drift margin after it", deadline + ttl/20 - time.Millisecond, "", true, Valid},
		// A node starved of CPU (108 ms at load average 30, a mutants run's control).
		{"two drift margins after it", deadline + 2*ttl/20, "", true, Valid},
		{"a third of the lease after it", deadline + ttl/3, "", true, Invalid},
		{"a third of the lease after it, the node paused", deadline + ttl/3, "pause", true, Valid},
		{"a third of the lease after it, a clock fault on the node", deadline + ttl/3, "clock", true, Valid},
		{"no renewal sent since the last grant", deadline + ttl/3, "", false, Valid},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSim(simConfig{Seed: 1})
			tok := s.acquire(0)
			if c.fault != "" {
				id := s.injectFault(c.fault, "n1")
				defer s.healFault(id)
			}
			s.adv(667 * time.Millisecond)
			sent := s.now
			s.renew(0, tok)
			if c.renewed {
				// Unanswered renewals: the node is cut off from Redis.
				for _, at := range []time.Duration{667 * time.Millisecond, 1334 * time.Millisecond} {
					s.now = sent + int64(at)
					i := s.invoke(0, history.KindRenew, history.Event{Token: tok})
					s.adv(500 * time.Millisecond)
					s.complete(i, history.Info, history.Event{Token: tok, Error: "i/o timeout"})
				}
			}
			s.now = sent + int64(c.after)
			s.stepDown(0, tok, reasonLeaseExpired)
			s.adv(time.Millisecond)
			wantCheck(t, checkOnly(t, s.end(), CheckStepDown), c.want, "after the deadline")
		})
	}
	// An acquire answered after its deadline: the term ends as it begins.
	s := newSim(simConfig{Seed: 1})
	i := s.invoke(0, history.KindAcquire, history.Event{})
	s.adv(ttl + ttl/4)
	s.complete(i, history.OK, history.Event{Token: 1})
	s.stepDown(0, 1, reasonLeaseExpired)
	s.adv(time.Millisecond)
	wantCheck(t, checkOnly(t, s.end(), CheckStepDown), Valid, "after the deadline")
}

// A renewal answered after the deadline in force extends nothing: the elector ends the
// term, and its loop may step down at once, before it has even taken the answer. The
// history is that of a reference node in a mutants run (election:stepDown+9:12, which
// changes only a log level), which the early rule judged 1.452 s early against the late
// renewal. A renewal answered well before the deadline does extend it, and a step-down
// before the extended deadline is still early.
func TestStepDownLateAnswerExtendsNothing(t *testing.T) {
	ms := func(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }
	for _, c := range []struct {
		name     string
		answered time.Duration // the last renewal's answer, from its send
		stepDown time.Duration // from the last renewal's send
		want     Verdict
	}{
		// The run's times: the renewal before, sent at 0 (deadline 1.9 s), answered; one
		// lost; the last sent at 1.542696 s, answered 447.902 ms later (91 ms after the
		// deadline), the step-down 91 µs after that.
		{"answered after the deadline in force", ms(447.902), ms(447.993), Valid},
		{"answered just before it, the timer first", ms(300), ms(360), Valid},
		{"answered well before it", ms(50), ms(100), Invalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSim(simConfig{Seed: 1})
			tok := s.acquire(0)
			s.adv(667 * time.Millisecond)
			sent := s.now
			s.renew(0, tok)
			s.now = sent + int64(ms(729.7))
			i := s.invoke(0, history.KindRenew, history.Event{Token: tok})
			s.adv(ms(334.6))
			s.complete(i, history.Info, history.Event{Token: tok, Error: "i/o timeout"})
			last := sent + int64(ms(1542.696))
			s.now = last
			i = s.invoke(0, history.KindRenew, history.Event{Token: tok})
			s.now = last + int64(c.answered)
			s.complete(i, history.OK, history.Event{Token: tok})
			s.now = last + int64(c.stepDown)
			s.stepDown(0, tok, reasonLeaseExpired)
			s.adv(time.Millisecond)
			wantCheck(t, checkOnly(t, s.end(), CheckStepDown), c.want, "before the deadline")
		})
	}
}

// A step-down says the lease its term counted on, from the send of the grant that set
// its deadline: the TTL less the drift margin, and no more. An elector that adds the
// margin where it subtracts it (Lead's deadline arithmetic, at the acquire or at a
// renewal) counts two margins too many, at every step-down whatever the reason, which
// the late rule cannot tell from a starved node's timer.
func TestStepDownCountedLease(t *testing.T) {
	ttl := 2 * time.Second
	for _, c := range []struct {
		name   string
		lease  time.Duration
		reason string
		fault  string // on the node throughout
		want   Verdict
	}{
		{"the TTL less the margin", ttl - ttl/20, reasonShutdown, "", Valid},
		{"less than that (a larger margin)", ttl - ttl/10, reasonLeaseExpired, "", Valid},
		{"not said", 0, reasonLeaseExpired, "", Valid},
		{"the TTL plus the margin, at a shutdown", ttl + ttl/20, reasonShutdown, "", Invalid},
		{"the TTL plus the margin, at an expiry", ttl + ttl/20, reasonLeaseExpired, "", Invalid},
		{"a nanosecond more, under a clock fault", ttl - ttl/20 + 1, reasonLeaseExpired, "clock", Invalid},
		// The run says its nodes count their lease (fenceline's own node): an elector
		// that does not tell its LeaseRecorder (the recorder's test negated).
		{"not said, in a run whose nodes say it", 0, reasonShutdown, "", Invalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSim(simConfig{Seed: 1})
			counted := strings.HasSuffix(c.name, "whose nodes say it")
			if c.fault != "" {
				id := s.injectFault(c.fault, "n1")
				defer s.healFault(id)
			}
			tok := s.acquire(0)
			s.adv(100 * time.Millisecond)
			if c.reason == reasonLeaseExpired {
				s.adv(ttl - ttl/20) // at its deadline
			}
			s.stepDownCounted(0, tok, c.reason, c.lease)
			if c.reason == reasonShutdown {
				s.adv(time.Millisecond)
				s.release(0, tok)
			}
			s.adv(time.Millisecond)
			run := s.end()
			run.Info.LeaseCounted = counted
			cr := checkOnly(t, run, CheckStepDown)
			want := "beyond the lease TTL less the drift margin"
			if counted {
				want = "without saying the lease"
			}
			wantCheck(t, cr, c.want, want)
			if c.lease != 0 && cr.Stats["counted"] != 1 {
				t.Errorf("counted %d step-downs, want 1", cr.Stats["counted"])
			}
		})
	}
}

// A renewal that Redis refused (the lock is not the term's) ends the term at once. An
// elector whose loop goes on after the refusal (Lead's break turned into a continue)
// renews the token again, or, when its deadline comes before the next renewal is due,
// steps down only then. A pause of the node excuses a late step-down, never a renewal.
func TestStepDownAfterRefusal(t *testing.T) {
	const reasonRenewRejected = "renew-rejected" // election.ReasonRenewRejected
	ttl := 2 * time.Second
	for _, c := range []struct {
		name     string
		renewed  bool          // the node renews the token again after the refusal
		stepDown time.Duration // from the refusal's answer
		reason   string
		fault    string // on the node throughout
		want     Verdict
	}{
		{"steps down at once", false, 50 * time.Microsecond, reasonRenewRejected, "", Valid},
		{"steps down a starved 200 ms later", false, 200 * time.Millisecond, reasonRenewRejected, "", Valid},
		{"renews again, then expires", true, 1200 * time.Millisecond, reasonLeaseExpired, "", Invalid},
		{"steps down only at its deadline", false, 1200 * time.Millisecond, reasonLeaseExpired, "", Invalid},
		{"steps down late, the node paused", false, 1200 * time.Millisecond, reasonLeaseExpired, "pause", Valid},
		{"renews again, the node paused", true, 1200 * time.Millisecond, reasonLeaseExpired, "pause", Invalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSim(simConfig{Seed: 1})
			if c.fault != "" {
				id := s.injectFault(c.fault, "n1")
				defer s.healFault(id)
			}
			tok := s.acquire(0)
			s.adv(667 * time.Millisecond)
			i := s.invoke(0, history.KindRenew, history.Event{Token: tok})
			s.adv(time.Millisecond)
			s.complete(i, history.Fail, history.Event{Token: tok, Error: history.ErrNotHeld})
			refused := s.now
			if c.renewed {
				s.adv(667 * time.Millisecond)
				i := s.invoke(0, history.KindRenew, history.Event{Token: tok})
				s.adv(500 * time.Millisecond)
				s.complete(i, history.Info, history.Event{Token: tok, Error: "i/o timeout"})
			}
			s.now = refused + int64(c.stepDown)
			s.stepDown(0, tok, c.reason)
			s.adv(time.Millisecond)
			cr := checkOnly(t, s.end(), CheckStepDown)
			wantCheck(t, cr, c.want, "was refused")
			if cr.Stats["refused"] != 1 {
				t.Errorf("judged %d refusals, want 1", cr.Stats["refused"])
			}
		})
	}
	// A refusal answered after the term had ended (the deadline came first, and the
	// elector waited for its renewal in flight) is not judged.
	s := newSim(simConfig{Seed: 1})
	tok := s.acquire(0)
	s.adv(667 * time.Millisecond)
	i := s.invoke(0, history.KindRenew, history.Event{Token: tok})
	s.adv(ttl)
	s.stepDown(0, tok, reasonLeaseExpired)
	s.adv(10 * time.Millisecond)
	s.complete(i, history.Fail, history.Event{Token: tok, Error: history.ErrNotHeld})
	s.adv(time.Second)
	s.stepDown(0, tok, reasonLeaseExpired) // a later term of the token (an adoption) is not this one's
	s.adv(time.Millisecond)
	cr := checkOnly(t, s.end(), CheckStepDown)
	if cr.Stats["refused"] != 0 {
		t.Errorf("judged %d refusals answered after the step-down, want 0", cr.Stats["refused"])
	}
}

// The listener's work returns only when the fence refuses a commit of its term as stale
// (listener.Run retries every other failure). A listener that gives up at a failed load
// (Run's ctx test negated, a mutant) returns with no such refusal; so does one refused
// under another term.
func TestStepDownWorkReturned(t *testing.T) {
	for _, c := range []struct {
		name   string
		before func(s *sim, tok int64)
		want   Verdict
	}{
		{"after a commit refused as stale", func(s *sim, tok int64) { s.refusedStale(0, tok) }, Valid},
		{"after a failed load", func(s *sim, tok int64) {
			i := s.invoke(0, history.KindLoad, history.Event{})
			s.adv(time.Millisecond)
			s.complete(i, history.Info, history.Event{Error: "i/o timeout"})
		}, Invalid},
		{"after a commit of another term refused", func(s *sim, tok int64) { s.refusedStale(0, tok-1) }, Invalid},
		{"after another node's commit refused", func(s *sim, tok int64) { s.refusedStale(1, tok) }, Invalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSim(simConfig{Seed: 1})
			tok := s.acquire(0)
			s.adv(100 * time.Millisecond)
			c.before(s, tok)
			s.stepDown(0, tok, reasonLeadReturned)
			s.adv(time.Millisecond)
			s.release(0, tok)
			s.adv(time.Millisecond)
			cr := checkOnly(t, s.end(), CheckStepDown)
			wantCheck(t, cr, c.want, "no commit of that term had been refused as stale")
			if cr.Stats["work_returned"] != 1 {
				t.Errorf("judged %d step-downs for lead-returned, want 1", cr.Stats["work_returned"])
			}
		})
	}
}
