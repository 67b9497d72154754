package checker

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/history"
)

// How the earlier leader n1 spends an overlap in exclusionRunAs.
const (
	// busy: n1 goes on committing (every 50 ms, rejected) after its lease ran out by
	// its own clock, as a leader that ignores its deadline does.
	busy = iota
	// silent: n1 records nothing from its last renewal to its late step-down, as a
	// process the machine did not schedule.
	silent
	// renewed: n1 renewed 100 ms before n2 acquired, so that its lease still held by
	// its own clock: the lease itself broke.
	renewed
)

// exclusionRun is exclusionRunAs with a busy n1.
func exclusionRun(t *testing.T, overlap time.Duration, fault string) (*Result, int64) {
	t.Helper()
	return exclusionRunAs(t, overlap, fault, busy)
}

// n1Leads is a sim in which n1 acquired the lease, loaded the cursor and committed 20
// times; then fault, if set, was injected on n1 (id names it).
func n1Leads(fault string) (s *sim, id string) {
	s = newSim(simConfig{Seed: 1})
	s.token = s.acquire(0)
	s.cursor, _ = s.load(0)
	s.some(20)
	if fault != "" {
		id = s.injectFault(fault, "n1")
	}
	return s, id
}

// n2ShutsDown ends a sim in which n2 leads: n2 commits 5 more times and shuts down
// (sim.run starts with an acquire of n1). It returns the result of checks on the run.
func n2ShutsDown(t *testing.T, s *sim, checks ...string) *Result {
	t.Helper()
	s.some(5)
	s.stepDown(1, 2, "shutdown")
	s.adv(time.Millisecond)
	res, err := Check(context.Background(), s.run(), Options{Checks: checks})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// exclusionRunAs: n1 leads and commits; n2 acquires the lease and commits while n1 still
// believes it leads, for overlap; then n1 steps down. fault, if set, is injected on n1
// before n2's acquire and healed after n1's step-down.
func exclusionRunAs(t *testing.T, overlap time.Duration, fault string, mode int) (*Result, int64) {
	t.Helper()
	return exclusionRunOn(t, overlap, fault, "n1", mode)
}

// exclusionRunOn is exclusionRunAs with the fault aimed at node.
func exclusionRunOn(t *testing.T, overlap time.Duration, fault, node string, mode int) (*Result, int64) {
	t.Helper()
	s, id := n1Leads("")
	if fault != "" {
		id = s.injectFault(fault, node)
	}
	s.adv(s.cfg.LeaseTTL)
	if mode == renewed {
		s.adv(-100 * time.Millisecond)
		s.renew(0, 1)
		s.adv(100 * time.Millisecond)
	}
	s.leader = 1
	s.token = s.acquire(1)
	acquired := s.now
	s.cursor, _ = s.load(1)
	s.some(5)
	if mode == busy {
		for s.now < acquired+int64(overlap)-int64(50*time.Millisecond) {
			s.adv(50 * time.Millisecond)
			i := s.commitInvoke(0, 1, 0)
			s.adv(s.lat())
			s.finishCommit(i, s.apply(i))
		}
	}
	s.now = acquired + int64(overlap)
	s.stepDown(0, 1, "lease-expired")
	if id != "" {
		s.adv(time.Millisecond)
		s.healFault(id)
	}
	return n2ShutsDown(t, s, CheckLeaseExclusion, CheckUnexplainedLeaderChange), acquired
}

// TestStallNewLeaderExplainsAnIdleLeader: fp-stall-new-leader (aimed at the leader it
// kills, n3 here) explains an overlap whose earlier leader was stalled between its
// acquire and its term and, finding its lease gone, did nothing as leader; not one whose
// earlier leader went on committing after its lease ran out by its own clock (a grant
// trusted late, etcd-io/etcd#11408), nor one whose lease still held by its own clock
// (the lock taken from under it, bsm/redislock#93).
func TestStallNewLeaderExplainsAnIdleLeader(t *testing.T) {
	for _, c := range []struct {
		mode int
		want Verdict
	}{{silent, Valid}, {busy, Invalid}, {renewed, Invalid}} {
		res, _ := exclusionRunOn(t, 500*time.Millisecond, "fp-stall-new-leader", "n3", c.mode)
		if cr := res.Check(CheckLeaseExclusion); cr.Verdict != c.want {
			t.Errorf("mode %d: %s, want %s: %s %q", c.mode, cr.Verdict, c.want, cr.Message, cr.Offending)
		}
	}
}

func TestLeaseExclusion(t *testing.T) {
	res, acquired := exclusionRun(t, 500*time.Millisecond, "")
	c := res.Check(CheckLeaseExclusion)
	if c.Verdict != Invalid || c.FirstViolation != acquired || len(c.Offending) != 1 ||
		!strings.Contains(c.Offending[0], "n1 (token 1) still believed it led for 500ms after n2 (token 2) acquired") {
		t.Errorf("an overlap with no fault: %+v; want invalid from n2's acquire (%d)", c, acquired)
	}
	if c := res.Check(CheckUnexplainedLeaderChange); c.Verdict != Invalid || c.FirstViolation <= acquired {
		t.Errorf("a leader change with no fault: %+v", c)
	}
	for _, fault := range []string{"pause", "clock"} {
		res, _ := exclusionRun(t, 500*time.Millisecond, fault)
		for _, name := range []string{CheckLeaseExclusion, CheckUnexplainedLeaderChange} {
			if c := res.Check(name); c.Verdict != Valid {
				t.Errorf("under a %s of n1, %s: %+v", fault, name, c)
			}
		}
	}
	// A partition explains a leader change, not an overlap: the leader's local deadline
	// must end its term whether or not Redis answers.
	res, _ = exclusionRun(t, 500*time.Millisecond, "partition-blackhole")
	if c := res.Check(CheckLeaseExclusion); c.Verdict != Invalid {
		t.Errorf("an overlap under a partition: %+v, want invalid", c)
	}
	if c := res.Check(CheckUnexplainedLeaderChange); c.Verdict != Valid {
		t.Errorf("a leader change under a partition: %+v, want valid", c)
	}
	// A leader whose own lease still held when another acquired saw the lease break,
	// stalled or not.
	res, _ = exclusionRunAs(t, 500*time.Millisecond, "", renewed)
	if c := res.Check(CheckLeaseExclusion); c.Verdict != Invalid || !strings.Contains(c.Offending[0], "by its own clock its lease held until") {
		t.Errorf("an overlap while n1's lease held by its own clock: %+v, want invalid", c)
	}
	// Within the drift margin (lease/20 = 100ms): tolerated.
	res, _ = exclusionRun(t, 80*time.Millisecond, "")
	if c := res.Check(CheckLeaseExclusion); c.Verdict != Valid || c.Stats["tolerated"] != 1 {
		t.Errorf("an 80ms overlap: %+v, want valid and tolerated", c)
	}
}

// A leader change after a stall of the old leader that no fault injected (its lease
// expired while it recorded nothing) is explained by the stall; the same leader busy
// after its deadline, or one whose term ended on a rejected renewal, is not.
func TestLeaderChangeAfterStall(t *testing.T) {
	res, _ := exclusionRunAs(t, 700*time.Millisecond, "", silent)
	if c := res.Check(CheckUnexplainedLeaderChange); c.Verdict != Valid || c.Stats["stalled"] != 1 {
		t.Errorf("a change after a silent stall: %+v, want valid, one stall", c)
	}
	res, _ = exclusionRunAs(t, 700*time.Millisecond, "", busy)
	if c := res.Check(CheckUnexplainedLeaderChange); c.Verdict != Invalid {
		t.Errorf("a change after a leader busy past its deadline: %+v, want invalid", c)
	}
}

// A stall of the earlier leader's process that the harness did not inject (a loaded
// machine): its lease had run out by its own clock before the other acquired, and it
// recorded nothing until its late step-down. Tolerated, and counted; the same under a
// fault of the harness on it that does not explain overlaps is not.
func TestLeaseExclusionStall(t *testing.T) {
	res, _ := exclusionRunAs(t, 700*time.Millisecond, "", silent)
	if c := res.Check(CheckLeaseExclusion); c.Verdict != Valid || c.Stats["stalled"] != 1 || c.Stats["longest_stall_ns"] < int64(700*time.Millisecond) {
		t.Errorf("a silent late step-down: %+v, want valid, one stall", c)
	}
	for _, fault := range []string{"fp-late-commit", "partition-blackhole"} {
		res, _ := exclusionRunAs(t, 700*time.Millisecond, fault, silent)
		if c := res.Check(CheckLeaseExclusion); c.Verdict != Invalid || !strings.Contains(c.Offending[0], "fault on n1 was open") {
			t.Errorf("a silent late step-down under %s: %+v, want invalid", fault, c)
		}
	}
	// Busy while late: a leader that ignores its deadline.
	res, _ = exclusionRunAs(t, 700*time.Millisecond, "", busy)
	if c := res.Check(CheckLeaseExclusion); c.Verdict != Invalid || !strings.Contains(c.Offending[0], "it still committed or renewed at") {
		t.Errorf("a busy late step-down: %+v, want invalid", c)
	}
}

// A clock fault healed before the other node acquired still explains the overlap while
// the heal's jump back can have pushed the earlier leader's deadline (up to a lease plus
// the largest jump after the heal), and no longer after that.
func TestClockHealJumpExplainsLaterOverlap(t *testing.T) {
	run := func(sinceHeal time.Duration) CheckResult {
		s, id := n1Leads("clock")
		s.adv(100 * time.Millisecond)
		s.healFault(id)
		s.adv(sinceHeal)
		s.leader = 1
		s.token = s.acquire(1)
		acquired := s.now
		s.cursor, _ = s.load(1)
		s.some(5)
		for s.now < acquired+int64(250*time.Millisecond) { // n1 still acts as leader
			s.adv(50 * time.Millisecond)
			i := s.commitInvoke(0, 1, 0)
			s.adv(s.lat())
			s.finishCommit(i, s.apply(i))
		}
		s.now = acquired + int64(300*time.Millisecond)
		s.stepDown(0, 1, "lease-expired")
		return *n2ShutsDown(t, s, CheckLeaseExclusion).Check(CheckLeaseExclusion)
	}
	ttl := newSim(simConfig{Seed: 1}).cfg.LeaseTTL
	if c := run(ttl + ttl/2); c.Verdict != Valid || c.Stats["explained"] != 1 {
		t.Errorf("an overlap 1.5 leases after a clock heal: %+v, want valid, explained by the clock", c)
	}
	if c := run(ttl + maxClockJump(ttl) + ttl/2); c.Verdict != Invalid {
		t.Errorf("an overlap %v after a clock heal: %+v, want invalid", ttl+maxClockJump(ttl)+ttl/2, c)
	}
}

// A recorded run (testdata/real/redis-stall-self-handover): `fenceline chaos --nemesis
// none --seed 1 --duration 20s` (3 local nodes, lease 2 s) whose redis-server was stopped
// (SIGSTOP) for 1.33 s at t+7.95 s from outside the harness, as a loaded machine stalls
// it (an fsync of its append-only file on a busy disk): no fault was recorded, and the
// harness's probe, which waits 1 s, did not see it. The leader n1's two renewals after
// its last good one (t+8.22, t+8.92) got no answer (i/o timeout), as did the standbys'
// acquires; it stepped down at its deadline (t+9.449, lease-expired), found its own lock
// still in Redis, released it and took the lease again: n1 (token …999) to n1 (token
// …000) at t+9.456 s, the shape of issue 22's false alarm. Trimmed to every election
// operation and the store operations of t+6.5..10.5 s.
func TestLeaderChangeAfterRedisStall(t *testing.T) {
	run, err := history.LoadRun(filepath.Join("testdata", "real", "redis-stall-self-handover"))
	if err != nil {
		t.Fatal(err)
	}
	check := func(run *history.Run) CheckResult {
		t.Helper()
		res, err := Check(context.Background(), run, Options{Checks: []string{CheckUnexplainedLeaderChange}})
		if err != nil {
			t.Fatal(err)
		}
		return *res.Check(CheckUnexplainedLeaderChange)
	}
	if c := check(run); c.Verdict != Valid || c.Stats["changes"] != 1 || c.Stats["stalled"] != 1 {
		t.Errorf("a self-handover after a stall of Redis that no node got an answer from: %+v, want valid, one stall", c)
	}
	// Without the standbys' unanswered requests, the leader's own store requests, stuck
	// alongside its renewals, still show its path to Redis stalled (seen at load 38: a
	// self-handover in a warm-up, its commits stuck 550 ms while the others were slow
	// but answered).
	without := func(drop func(e history.Event) bool) *history.Run {
		ids := map[string]bool{} // an operation goes with its invoke and completion
		for _, e := range run.Events.All() {
			if drop(e) {
				ids[e.ID] = true
			}
		}
		var kept []history.Event
		for _, e := range run.Events.All() {
			if !ids[e.ID] {
				kept = append(kept, e)
			}
		}
		r := *run
		r.Events = history.Pack(kept)
		return &r
	}
	withStore := without(func(e history.Event) bool { return e.Node != "n1" && e.Type == history.Info })
	if c := check(withStore); c.Verdict != Valid || c.Stats["stalled"] != 1 {
		t.Errorf("the same change with the leader's store requests stuck beside its renewals: %+v, want valid, one stall", c)
	}
	// Without the leader's store requests from the stall on too: only its elector got no
	// answer, which no outage of Redis, nor of the leader's path to it, explains.
	stalled := func(t int64) bool { // from the stall to the step-down
		return t >= run.Info.Start+int64(7950*time.Millisecond) && t < run.Info.Start+int64(9449*time.Millisecond)
	}
	alone := without(func(e history.Event) bool {
		store := e.Kind == history.KindCommit || e.Kind == history.KindLoad
		return (e.Node != "n1" && e.Type == history.Info) || (e.Node == "n1" && store && stalled(e.Time))
	})
	if c := check(alone); c.Verdict != Invalid || !strings.Contains(c.Offending[0], "leadership passed from n1 (token 9999999999999999) to n1 (token 10000000000000000)") {
		t.Errorf("the same change with only the leader unanswered: %+v, want invalid", c)
	}
}

// One attribution for every leader change: two changes while one clock fault is open
// are both the clock fault's (the report once said "none attributed" for the second,
// whose failover window the first had taken, while the check passed it), a change
// within two lease TTLs of a later fault's heal is that later fault's, and one after
// the final heal is not judged.
func TestExplainChangesAttributesEachChange(t *testing.T) {
	const s = int64(time.Second)
	p := &parsed{
		run:   &history.Run{Info: history.RunInfo{LeaseTTL: 2 * time.Second, HealTime: 60 * s, End: 70 * s}},
		nodes: []string{"n1", "n2", "n3"},
		faults: []fault{
			{id: "fault-1", kind: "clock", node: "n2", inject: 15 * s, heal: 21 * s},
			{id: "fault-2", kind: "kill", node: "n1", inject: 30 * s, heal: 32 * s},
		},
	}
	changes := []change{
		{oldNode: 1, newNode: 0, oldToken: 1, newToken: 2, firstNew: 16 * s},
		{oldNode: 0, newNode: 2, oldToken: 2, newToken: 3, firstNew: 18*s + s/2},
		{oldNode: 2, newNode: 1, oldToken: 3, newToken: 4, firstNew: 35 * s},
		{oldNode: 1, newNode: 0, oldToken: 4, newToken: 5, firstNew: 65 * s},
	}
	got := explainChanges(p, changes, nil)
	want := []struct{ cause, fault, node string }{
		{CauseFault, "clock", "n2"}, {CauseFault, "clock", "n2"}, {CauseFault, "kill", "n1"}, {CauseAfterHeal, "", ""},
	}
	for i, w := range want {
		if g := got[i]; g.Cause != w.cause || g.Fault != w.fault || g.FaultNode != w.node || g.NewToken != changes[i].newToken {
			t.Errorf("change %d: %+v, want %+v", i+1, g, w)
		}
	}
	if c := unexplainedChanges(p, got); c.Verdict != Valid || c.Stats["changes"] != 3 {
		t.Errorf("the check on the same attributions: %+v, want valid, 3 judged", c)
	}
}

// takeoverRun: n1 leads; fault (if set) hits n1; 20 ms later n2 takes the lease over
// from lock value from (a takeover on disconnect, long before n1's lease ran out) and
// commits, while n1 goes on committing, rejected, for 300 ms, then steps down on a
// rejected renewal; the fault heals.
func takeoverRun(t *testing.T, fault, from string) *Result {
	t.Helper()
	s, id := n1Leads(fault)
	s.adv(20 * time.Millisecond)
	s.leader = 1
	s.token = s.acquireTakeover(1, from)
	acquired := s.now
	s.cursor, _ = s.load(1)
	s.some(5)
	for s.now < acquired+int64(300*time.Millisecond) {
		s.adv(50 * time.Millisecond)
		i := s.commitInvoke(0, 1, 0)
		s.adv(s.lat())
		s.finishCommit(i, s.apply(i))
	}
	s.stepDown(0, 1, "renew-rejected")
	if id != "" {
		s.adv(time.Millisecond)
		s.healFault(id)
	}
	return n2ShutsDown(t, s, CheckLeaseExclusion, CheckStaleWrite)
}

// A takeover on disconnect overlaps the old leader by design; lease-exclusion explains it
// only when a fault really closed the old leader's connection, and only for the term it
// took over. The fence still has to hold.
func TestTakeoverOverlap(t *testing.T) {
	for _, fault := range []string{"partition-reset", "presence-loss", "redis-restart", "redis-failover"} {
		res := takeoverRun(t, fault, "n1:1")
		if c := res.Check(CheckLeaseExclusion); c.Verdict != Valid || c.Stats["took_over"] != 1 {
			t.Errorf("a takeover under %s: %+v, want valid, one takeover", fault, c)
		}
		if c := res.Check(CheckStaleWrite); c.Verdict != Valid {
			t.Errorf("a takeover under %s: %+v", fault, c)
		}
	}
	for _, tc := range []struct{ fault, from, why string }{
		{"", "n1:1", "no fault closed n1's connection"},
		{"partition-blackhole", "n1:1", "a blackhole keeps the connection open"},
		{"delay", "n1:1", "a delay keeps the connection open"},
		{"partition-reset", "n1:7", "the takeover names another term"},
		{"partition-reset", "n3:1", "the takeover names another node"},
		{"presence-loss", "n3:1", "the takeover names another node"},
	} {
		if c := takeoverRun(t, tc.fault, tc.from).Check(CheckLeaseExclusion); c.Verdict != Invalid {
			t.Errorf("a takeover of %s under %q (%s): %+v, want invalid", tc.from, tc.fault, tc.why, c)
		}
	}
}

// A fault that kills or stops the leader ends its term at the injection: a successor
// that takes over at once (a takeover on disconnect, 20 ms later) overlaps nothing. A
// fault kind missing from isNodeDeath leaves the dead leader's term open until it is
// restarted, a false overlap (seen: fp-takeover-race before it was listed, a false
// alarm of the reference in make validate).
func TestNodeDeathEndsTerm(t *testing.T) {
	run := func(fault string) *CheckResult {
		t.Helper()
		s, id := n1Leads(fault)
		s.adv(20 * time.Millisecond)
		s.leader = 1
		s.token = s.acquireTakeover(1, "n1:1")
		s.cursor, _ = s.load(1)
		s.some(20)
		s.adv(time.Second) // n1 is restarted (or its link healed) a second later
		s.healFault(id)
		// n1 is back (restarted, or healed) and finds the lease held.
		i := s.invoke(0, history.KindAcquire, history.Event{})
		s.adv(s.lat())
		s.complete(i, history.Fail, history.Event{Error: "not-held"})
		return n2ShutsDown(t, s, CheckLeaseExclusion).Check(CheckLeaseExclusion)
	}
	for _, fault := range []string{"kill", "stop", "fp-late-release", "fp-release-race", "fp-release-lost", "fp-stall-new-leader", "fp-takeover-race"} {
		if c := run(fault); c.Verdict != Valid {
			t.Errorf("%s of the leader, then a takeover: %+v, want valid (the kill ends the term)", fault, c)
		}
	}
	// The control: a fault that leaves the leader alive and connected.
	if c := run("partition-blackhole"); c.Verdict != Invalid {
		t.Errorf("partition-blackhole of the leader, then a takeover: %+v, want invalid", c)
	}
}
