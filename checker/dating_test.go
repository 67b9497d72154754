package checker

import (
	"context"
	"testing"
	"time"
)

// A violation is dated at the first offending operation, not at the final read that
// found it: events applied twice by a commit 70 ms into a 60-second run are dated at
// that commit, by every check that sees it.
func TestViolationDatedAtTheOffendingCommit(t *testing.T) {
	s := newSim(simConfig{Seed: 3, NoCursorCheck: true})
	s.token = s.acquire(0)
	s.cursor, _ = s.load(0)
	s.some(5)
	// n2 acquires and loads; n1, whose token is still the highest accepted, commits;
	// then n2 commits from the cursor it loaded, which has moved: the store (no cursor
	// check) applies those events again.
	s.leader = 1
	s.token = s.acquire(1)
	s.cursor, _ = s.load(1)
	i := s.commitInvoke(0, 1, s.st.cursor)
	s.adv(s.lat())
	s.finishCommit(i, s.apply(i))
	s.now = s.start + int64(70*time.Millisecond)
	dup := s.commitInvoke(1, s.token, s.cursor)
	call := s.now
	s.adv(s.lat())
	if r := s.apply(dup); r != "ok" {
		t.Fatalf("set-up: the duplicating commit was %s", r)
	}
	s.adv(s.lat())
	s.finishCommit(dup, "ok")
	ret := s.now
	s.cursor = s.events[dup].To
	for s.now < s.start+int64(60*time.Second) {
		s.some(10)
		s.adv(100 * time.Millisecond)
	}
	run := s.run()
	res, err := Check(context.Background(), run, Options{ExpectedBalances: testBalances})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{CheckExactlyOnce, CheckLinearizability, CheckCursorMonotonic} {
		c := res.Check(name)
		if c.Verdict != Invalid {
			t.Errorf("%s: %v, want invalid: %s", name, c.Verdict, c.Message)
			continue
		}
		if c.FirstViolation < call || c.FirstViolation > ret {
			t.Errorf("%s dated t+%v, want the duplicating commit [t+%v, t+%v], not the final read (t+%v)", name,
				time.Duration(c.FirstViolation-s.start), time.Duration(call-s.start), time.Duration(ret-s.start), time.Duration(run.Info.End-s.start))
		}
	}
}
