package checker

import (
	"context"
	"strings"
	"testing"
	"time"
)

// exclusionRun: n1 leads and commits; n2 acquires the lease and commits while n1 still
// believes it leads, for overlap; then n1 steps down. fault, if set, is injected on n1
// before n2's acquire and healed after n1's step-down.
func exclusionRun(t *testing.T, overlap time.Duration, fault string) (*Result, int64) {
	t.Helper()
	s := newSim(simConfig{Seed: 1})
	s.token = s.acquire(0)
	s.cursor, _ = s.load(0)
	s.some(20)
	var id string
	if fault != "" {
		id = s.injectFault(fault, "n1")
	}
	s.adv(s.cfg.LeaseTTL)
	s.leader = 1
	s.token = s.acquire(1)
	acquired := s.now
	s.cursor, _ = s.load(1)
	s.some(5)
	s.now = acquired + int64(overlap)
	s.stepDown(0, 1, "lease-expired")
	if id != "" {
		s.adv(time.Millisecond)
		s.healFault(id)
	}
	s.some(5)
	s.stepDown(1, 2, "shutdown") // sim.run starts with an acquire of n1
	s.adv(time.Millisecond)
	res, err := Check(context.Background(), s.run(), Options{Checks: []string{CheckLeaseExclusion, CheckUnexplainedLeaderChange}})
	if err != nil {
		t.Fatal(err)
	}
	return res, acquired
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
	// Within the drift margin (lease/20 = 100ms): tolerated.
	res, _ = exclusionRun(t, 80*time.Millisecond, "")
	if c := res.Check(CheckLeaseExclusion); c.Verdict != Valid || c.Stats["tolerated"] != 1 {
		t.Errorf("an 80ms overlap: %+v, want valid and tolerated", c)
	}
}
