package checker

import (
	"fmt"
	"time"
)

// Checks of the election's own promise: mutual exclusion of the lease, except where a
// process paused or its clock misbehaved, and no leader change without a cause.
const (
	// CheckLeaseExclusion judges every leadership overlap: it must be explained by a
	// pause or clock fault on the earlier leader (or by Redis losing its data, or by a
	// failpoint that stalled the elector itself), or last no longer than the drift
	// margin (LeaseTTL/20, the election's default). Any other overlap is a leader that
	// believed in a lease Redis had already given to someone else.
	CheckLeaseExclusion = "lease-exclusion"
	// CheckUnexplainedLeaderChange judges the leader changes the store saw during the
	// chaos phase: each must follow a fault (injected, or an outage of Redis the harness
	// found) within two lease TTLs of its heal.
	CheckUnexplainedLeaderChange = "unexplained-leader-change"
)

// driftDivisor is the election's default: DriftMargin = LeaseTTL/20. The nodes the
// harness runs use the default, and run.json records only the lease.
const driftDivisor = 20

// explainsOverlap reports whether fault f explains an overlap whose earlier leader is
// node: a pause or a clock fault on that node stops or distorts its local deadline; a
// Redis restart without persistence forgets the lease; fp-stall-new-leader stalls the
// elector of every node but the one it kills between its acquire and its term.
func explainsOverlap(f *fault, node string) bool {
	switch f.kind {
	case "pause", "clock":
		return f.node == node
	case "fp-stall-new-leader":
		return f.node != node
	case "redis-restart-volatile":
		return true
	}
	return false
}

// leaseExclusion judges the overlaps ov (see CheckLeaseExclusion). An overlap is
// explained when it starts while an explaining fault is open, or within one lease TTL
// of its heal (a clock healed mid-lease still ran the deadline it had armed).
func leaseExclusion(p *parsed, ov []Overlap) CheckResult {
	cr := CheckResult{Name: CheckLeaseExclusion, Verdict: Valid}
	ttl := p.run.Info.LeaseTTL
	if ttl <= 0 {
		cr.Verdict, cr.Message = Unknown, "run.json records no lease TTL: the drift margin, and so the tolerance, is unknown"
		return cr
	}
	tolerance := ttl / driftDivisor
	var bad []finding
	explained, tolerated := 0, 0
	for _, o := range ov {
		if o.Duration <= tolerance {
			tolerated++
			continue
		}
		if p.overlapExplained(o, ttl) {
			explained++
			continue
		}
		bad = append(bad, finding{at: o.Start, what: fmt.Sprintf(
			"%s (token %d) still believed it led for %v after %s (token %d) acquired the lease at %s (until %s); no pause or clock fault on %s explains it (tolerance %v)",
			o.NodeA, o.TokenA, o.Duration.Round(time.Millisecond), o.NodeB, o.TokenB, p.t(o.Start), p.t(o.End), o.NodeA, tolerance)})
	}
	cr.Stats = map[string]int64{"overlaps": int64(len(ov)), "explained": int64(explained), "tolerated": int64(tolerated), "unexplained": int64(len(bad))}
	if len(bad) == 0 {
		cr.Message = fmt.Sprintf("%d overlaps of leadership: %d explained by a pause, clock or Redis fault, %d within the drift margin (%v); none unexplained",
			len(ov), explained, tolerated, tolerance)
		return cr
	}
	cr.Verdict = Invalid
	cr.Message = fmt.Sprintf("%d of %d overlaps of leadership are explained by no pause or clock fault of the earlier leader and last longer than the drift margin (%v): mutual exclusion of the lease broke",
		len(bad), len(ov), tolerance)
	cr.setOffending(bad, 5, 0)
	return cr
}

// overlapExplained reports whether a fault explains o (see leaseExclusion).
func (p *parsed) overlapExplained(o Overlap, ttl time.Duration) bool {
	for i := range p.faults {
		f := &p.faults[i]
		if f.failed || !explainsOverlap(f, o.NodeA) {
			continue
		}
		healed := f.heal
		if healed == 0 {
			healed = p.runEnd()
		}
		if f.inject <= o.Start && o.Start <= healed+int64(ttl) {
			return true
		}
	}
	return false
}

// unexplainedChanges judges the leader changes (see CheckUnexplainedLeaderChange). A
// change counts from the first commit under the new token; those after the final heal
// (the nodes are stopped one by one at the end) are not judged.
func unexplainedChanges(p *parsed, changes []change) CheckResult {
	cr := CheckResult{Name: CheckUnexplainedLeaderChange, Verdict: Valid}
	if p.run.Info.Workload == "register" {
		// Its clients take tokens outside the election: a new token is no handover.
		cr.Message = "the register workload elects no leader"
		return cr
	}
	ttl := p.run.Info.LeaseTTL
	heal := p.run.Info.HealTime
	if ttl <= 0 || heal == 0 {
		cr.Verdict, cr.Message = Unknown, "run.json records no lease TTL or no final heal: the chaos phase cannot be told apart"
		return cr
	}
	var bad []finding
	judged := 0
	for _, c := range changes {
		if c.firstNew > heal {
			continue
		}
		judged++
		if p.changeExplained(c, ttl) {
			continue
		}
		bad = append(bad, finding{at: c.firstNew, what: fmt.Sprintf(
			"leadership passed from %s (token %d) to %s (token %d) at %s with no fault open or healed within %v before",
			p.nodes[c.oldNode], c.oldToken, p.nodes[c.newNode], c.newToken, p.t(c.firstNew), 2*ttl)})
	}
	cr.Stats = map[string]int64{"changes": int64(judged), "unexplained": int64(len(bad))}
	if len(bad) == 0 {
		cr.Message = fmt.Sprintf("%d leader changes before the final heal, each after a fault", judged)
		return cr
	}
	cr.Verdict = Invalid
	cr.Message = fmt.Sprintf("%d leader changes before the final heal, %d with no fault to cause them: the election hands over on its own",
		judged, len(bad))
	cr.setOffending(bad, 5, 0)
	return cr
}

// changeExplained reports whether a fault was open, or healed at most two lease TTLs
// earlier, when c's first commit under the new token was accepted.
func (p *parsed) changeExplained(c change, ttl time.Duration) bool {
	for i := range p.faults {
		f := &p.faults[i]
		healed := f.heal
		if healed == 0 {
			healed = p.runEnd()
		}
		if f.inject <= c.firstNew && c.firstNew <= healed+int64(2*ttl) {
			return true
		}
	}
	return false
}
