package checker

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fenceline/fenceline/history"
)

// Checks of the election's own promise: mutual exclusion of the lease, except where a
// process paused or its clock misbehaved, and no leader change without a cause.
const (
	// CheckLeaseExclusion judges every leadership overlap: it must be explained by a
	// pause or clock fault on the earlier leader (or by Redis losing its data, or by a
	// failpoint that stalled the elector itself), or last no longer than the drift
	// margin (LeaseTTL/20, the election's default), or be a stall of the earlier
	// leader's process that no fault injected (see stallExplained): its own lease had
	// run out by its last renewal before the other acquired, and it did nothing as
	// leader while it was late. Any other overlap is a leader that believed in a lease
	// Redis had already given to someone else.
	CheckLeaseExclusion = "lease-exclusion"
	// CheckUnexplainedLeaderChange judges the leader changes the store saw during the
	// chaos phase: each must follow a fault (injected, or an outage of Redis the harness
	// found) within two lease TTLs of its heal, or a stall of the old leader, or of
	// Redis as the nodes' unanswered requests show it, that no fault injected (see
	// changeStalled).
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

// closesPresence reports whether fault f closes the connection on which node's presence
// lives (election.Config.TakeoverOnDisconnect), so that a standby may take the lease
// from node while it lives: a reset of node's own link, a denial of its presence
// channel, or a Redis fault that ends or moves every client's connection (a restart, a
// failover, a switchover: the new primary has none of the old one's subscriptions). A
// kill or stop ends node's term itself.
func closesPresence(f *fault, node string) bool {
	switch f.kind {
	case "partition-reset", "presence-loss", "presence-flap":
		return f.node == node
	case "redis-restart", "redis-restart-volatile", "redis-failover", "redis-switchover", "replication-delay":
		return true
	}
	return false
}

// takeoverExplained reports whether o began with a takeover of the earlier leader's
// lease (history.ReasonTakeover) while a fault had closed its presence's connection,
// or within one lease TTL of that fault's heal (the client reconnects and subscribes
// again with backoff). A takeover with no such fault is a presence that vanished from a
// live, connected leader: the option's check broke, and the overlap stays unexplained.
func (p *parsed) takeoverExplained(o Overlap, ttl time.Duration) bool {
	b, ok := p.nodeIdx[o.NodeB]
	if !ok || p.takeovers[termKey{b, o.TokenB}] != lockValue(o.NodeA, o.TokenA) {
		return false
	}
	for i := range p.faults {
		f := &p.faults[i]
		if !f.failed && closesPresence(f, o.NodeA) && p.covers(f, o.Start, ttl) {
			return true
		}
	}
	return false
}

// covers reports whether time at lies between fault f's injection and window after its
// heal (the end of the run if it never healed).
func (p *parsed) covers(f *fault, at int64, window time.Duration) bool {
	healed := f.heal
	if healed == 0 {
		healed = p.runEnd()
	}
	return f.inject <= at && at <= healed+int64(window)
}

// maxClockJump bounds how far a clock fault moves a node's clock: nemesis.ClockSkew jumps
// it by LeaseTTL × (1 + magnitude), magnitude at most 1 (a test there holds the two
// together).
func maxClockJump(ttl time.Duration) time.Duration { return 2 * ttl }

// MaxClockJump is maxClockJump, for that test.
func MaxClockJump(ttl time.Duration) time.Duration { return maxClockJump(ttl) }

// leaseExclusion judges the overlaps ov (see CheckLeaseExclusion). An overlap is
// explained when it starts while an explaining fault is open, or within one lease TTL
// of its heal (a clock healed mid-lease still ran the deadline it had armed), and for a
// clock fault also the jump the heal made: a clock that ran ahead and is set back at the
// heal pushes the deadline armed before it back by as much (seen in CI: a leader that
// renewed just before such a heal stepped down 93 ms after the other node acquired,
// 1 TTL after the heal).
func leaseExclusion(p *parsed, ov []Overlap) CheckResult {
	cr := CheckResult{Name: CheckLeaseExclusion, Verdict: Valid}
	ttl := p.run.Info.LeaseTTL
	if ttl <= 0 {
		cr.Verdict, cr.Message = Unknown, "run.json records no lease TTL: the drift margin, and so the tolerance, is unknown"
		return cr
	}
	tolerance := ttl / driftDivisor
	var bad []finding
	explained, tolerated, stalled, tookOver := 0, 0, 0, 0
	var longestStall time.Duration
	var life *lifeSigns
	lifeSigns := func() *lifeSigns {
		if life == nil {
			life = p.lifeSigns()
		}
		return life
	}
	for _, o := range ov {
		if o.Duration <= tolerance {
			tolerated++
			continue
		}
		if p.overlapExplained(o, ttl, tolerance, lifeSigns) {
			explained++
			continue
		}
		if p.takeoverExplained(o, ttl) {
			tookOver++
			continue
		}
		why, late := p.stallExplained(o, ttl, tolerance, lifeSigns())
		if why == "" {
			stalled++
			longestStall = max(longestStall, late)
			continue
		}
		bad = append(bad, finding{at: o.Start, what: fmt.Sprintf(
			"%s (token %d) still believed it led for %v after %s (token %d) acquired the lease at %s (until %s); no pause or clock fault on %s explains it (tolerance %v), nor a stall: %s",
			o.NodeA, o.TokenA, o.Duration.Round(time.Millisecond), o.NodeB, o.TokenB, p.t(o.Start), p.t(o.End), o.NodeA, tolerance, why)})
	}
	cr.Stats = map[string]int64{"overlaps": int64(len(ov)), "explained": int64(explained), "tolerated": int64(tolerated),
		"stalled": int64(stalled), "longest_stall_ns": int64(longestStall), "unexplained": int64(len(bad))}
	if tookOver > 0 {
		cr.Stats["took_over"] = int64(tookOver)
	}
	if len(bad) == 0 {
		cr.Message = fmt.Sprintf("%d overlaps of leadership: %d explained by a pause, clock or Redis fault, %d within the drift margin (%v), %d by a stall of the earlier leader's process that no fault injected (its lease had run out by its own clock, and it did nothing as leader until it stepped down; longest %v); none unexplained",
			len(ov), explained, tolerated, tolerance, stalled, longestStall.Round(time.Millisecond))
		if tookOver > 0 {
			cr.Message += fmt.Sprintf("; %d began with a takeover on disconnect after a fault closed the earlier leader's connection (by design: its writes are fenced)", tookOver)
		}
		return cr
	}
	cr.Verdict = Invalid
	cr.Message = fmt.Sprintf("%d of %d overlaps of leadership are explained by no pause or clock fault of the earlier leader and last longer than the drift margin (%v): mutual exclusion of the lease broke",
		len(bad), len(ov), tolerance)
	cr.setOffending(bad, 5, 0)
	return cr
}

// overlapExplained reports whether a fault explains o (see leaseExclusion). A stall
// that fp-stall-new-leader injected between an acquire and its term explains it only
// if the earlier leader did nothing as leader while late (idleWhileLate), as a stalled
// elector that finds its lease gone does: one that goes on committing or renewing
// trusted a grant it no longer had (etcd-io/etcd#11408), and one whose lease still ran
// by its own clock saw the lock taken from it (a token minted after the lock,
// bsm/redislock#93).
func (p *parsed) overlapExplained(o Overlap, ttl, tolerance time.Duration, life func() *lifeSigns) bool {
	for i := range p.faults {
		f := &p.faults[i]
		if f.failed || !explainsOverlap(f, o.NodeA) {
			continue
		}
		if f.kind == "fp-stall-new-leader" {
			if _, why := p.idleWhileLate(o, ttl, tolerance, life()); why != "" {
				continue
			}
		}
		window := ttl
		if f.kind == "clock" {
			window += maxClockJump(ttl)
		}
		if p.covers(f, o.Start, window) {
			return true
		}
	}
	return false
}

// lifeSigns holds, per node, the sorted times of everything it recorded (invokes and
// completions of its store and election operations, its step-downs), and the invoke
// times of what only a leader does (commits and renewals).
type lifeSigns struct {
	all, leading map[int32][]int64
}

func (p *parsed) lifeSigns() *lifeSigns {
	l := &lifeSigns{all: map[int32][]int64{}, leading: map[int32][]int64{}}
	for i := range p.ops {
		o := &p.ops[i]
		if o.final {
			continue
		}
		l.all[o.node] = append(l.all[o.node], o.call)
		if o.ret != never {
			l.all[o.node] = append(l.all[o.node], o.ret)
		}
		if o.kind == kCommit {
			l.leading[o.node] = append(l.leading[o.node], o.call)
		}
	}
	for _, e := range p.el {
		l.all[e.node] = append(l.all[e.node], e.call)
		if e.ret != never && e.ret != 0 {
			l.all[e.node] = append(l.all[e.node], e.ret)
		}
		if e.kind == history.KindRenew {
			l.leading[e.node] = append(l.leading[e.node], e.call)
		}
	}
	for _, s := range p.stepDowns {
		l.all[s.node] = append(l.all[s.node], s.time)
	}
	for _, m := range []map[int32][]int64{l.all, l.leading} {
		for _, ts := range m {
			slices.Sort(ts)
		}
	}
	return l
}

// leaseDeadline finds the term (node, token)'s last successful acquire or renewal sent
// by at, and the deadline by the node's own clock that it gave the lease: ttl less the
// drift margin later. lastLease is -1 when none was recorded.
func (p *parsed) leaseDeadline(node int32, token, at int64, ttl time.Duration) (lastLease, deadline int64) {
	lastLease = -1
	for _, e := range p.el {
		if e.node == node && e.token == token && e.typ == history.OK && e.call <= at &&
			(e.kind == history.KindAcquire || e.kind == history.KindRenew) {
			lastLease = max(lastLease, e.call)
		}
	}
	return lastLease, lastLease + int64(ttl) - int64(ttl/driftDivisor)
}

// idleWhileLate returns the earlier leader A's deadline by its own clock, and "" if A
// was a late leader that did nothing as one: its lease had run out by its own clock
// (its last acquire or renewal of the term sent LeaseTTL less the drift margin before)
// by the time the other acquired, and it invoked no commit or renewal after that
// deadline but within the tolerance of its step-down. Else it says why not. A stalled
// elector looks like that; a leader that trusts a lease it no longer has does not.
func (p *parsed) idleWhileLate(o Overlap, ttl, tolerance time.Duration, l *lifeSigns) (deadline int64, why string) {
	a, ok := p.nodeIdx[o.NodeA]
	if !ok {
		return 0, "unknown node"
	}
	lastLease, deadline := p.leaseDeadline(a, o.TokenA, o.Start, ttl)
	if lastLease < 0 {
		return 0, "no acquire or renewal of its term was recorded"
	}
	if deadline > o.Start+int64(tolerance) {
		return deadline, fmt.Sprintf("by its own clock its lease held until %s (its last renewal sent at %s), after %s acquired", p.t(deadline), p.t(lastLease), o.NodeB)
	}
	lead := l.leading[a]
	i, _ := slices.BinarySearch(lead, deadline+1)
	if i < len(lead) && lead[i] < o.End-int64(tolerance) {
		return deadline, fmt.Sprintf("it still committed or renewed at %s, after its lease ran out at %s by its own clock", p.t(lead[i]), p.t(deadline))
	}
	return deadline, ""
}

// stallExplained decides whether overlap o is a stall of the earlier leader's process
// that the harness did not inject (a machine under load deschedules a process for
// hundreds of milliseconds): it returns "" and how late the leader stepped down, or
// why not. The earlier leader A must
//
//   - have had its lease run out by its own clock by the time the other acquired: its
//     last successful acquire or renewal of the term was sent at least LeaseTTL minus
//     the drift margin (and the tolerance) before; a leader whose lease was still valid
//     by its own clock when another node got the lease saw the lease itself break (a
//     release of someone else's lock, a renewal that extended a lock not its own);
//   - have been silent, recorded nothing, for all of the time it was late (from its
//     deadline to its step-down) but the tolerance; a leader that is late while it
//     commits or renews is one that ignores its deadline, not one that was stalled;
//   - have invoked no commit or renewal after its deadline but within the tolerance of
//     its step-down (the burst of a process that resumes);
//   - have no fault of the harness aimed at it, or a failpoint fault (which stalls
//     goroutines, not the process), open during that time: an injected fault must
//     explain itself (explainsOverlap).
func (p *parsed) stallExplained(o Overlap, ttl, tolerance time.Duration, l *lifeSigns) (string, time.Duration) {
	deadline, why := p.idleWhileLate(o, ttl, tolerance, l)
	if why != "" {
		return why, 0
	}
	a := p.nodeIdx[o.NodeA]
	stepDown := o.End
	late := time.Duration(stepDown - deadline)
	for i := range p.faults {
		f := &p.faults[i]
		healed := f.heal
		if healed == 0 {
			healed = p.runEnd()
		}
		if !f.failed && (f.node == o.NodeA || strings.HasPrefix(f.kind, "fp-")) && f.inject <= stepDown && healed >= deadline-int64(ttl) {
			return fmt.Sprintf("the harness's %s fault on %s was open (%s..%s)", f.kind, f.node, p.t(f.inject), p.t(healed)), late
		}
	}
	// The longest silence of A within [deadline, stepDown].
	all := l.all[a]
	j, _ := slices.BinarySearch(all, deadline)
	prev, silence := deadline, int64(0)
	for ; j < len(all) && all[j] < stepDown; j++ {
		silence = max(silence, all[j]-prev)
		prev = all[j]
	}
	silence = max(silence, stepDown-prev)
	if time.Duration(stepDown-deadline-silence) > tolerance {
		return fmt.Sprintf("it recorded operations while it was late (its longest silence between its deadline %s and its step-down is %v of %v)",
			p.t(deadline), time.Duration(silence).Round(time.Millisecond), late.Round(time.Millisecond)), late
	}
	return "", late
}

// Causes of a leader change (LeaderChange.Cause).
const (
	CauseFault     = "fault"      // a fault was open, or healed within two lease TTLs
	CauseStall     = "stall"      // a stall of the old leader or of Redis that no fault injected (see changeStalled)
	CauseAfterHeal = "after-heal" // after the final heal: not judged
)

// explainChanges says what caused each leader change: the one attribution of a change
// that the unexplained-leader-change check and the reports both read. A change before
// the final heal is explained by the latest fault injected at or before it that was
// open, or healed within two lease TTLs, when the new leader's first commit landed;
// failing that, by a stall the history shows (changeStalled). Nothing explains the
// others (Cause ""). A change after the final heal (the nodes are stopped one by one at
// the end) is CauseAfterHeal and not judged. Without a lease TTL or a final heal in run.json nothing is
// attributed either, and the check says it cannot judge.
func explainChanges(p *parsed, changes []change, terms []Term) []LeaderChange {
	out := make([]LeaderChange, len(changes))
	ttl, heal := p.run.Info.LeaseTTL, p.run.Info.HealTime
	var life *lifeSigns
	byToken := map[int64]*Term{}
	for i := range terms {
		byToken[terms[i].Token] = &terms[i]
	}
	for i, c := range changes {
		lc := LeaderChange{At: c.firstNew, OldNode: p.nodes[c.oldNode], OldToken: c.oldToken,
			NewNode: p.nodes[c.newNode], NewToken: c.newToken}
		switch {
		case ttl <= 0 || heal == 0:
		case c.firstNew > heal:
			lc.Cause = CauseAfterHeal
		default:
			if f := p.changeFault(c, ttl); f != nil {
				lc.Cause, lc.Fault, lc.FaultNode, lc.FaultAt = CauseFault, f.kind, f.node, f.inject
				break
			}
			if life == nil {
				life = p.lifeSigns()
			}
			if t := byToken[c.oldToken]; t != nil && t.Node == p.nodes[c.oldNode] && p.changeStalled(t, ttl, life) {
				lc.Cause = CauseStall
			}
		}
		out[i] = lc
	}
	return out
}

// unexplainedChanges judges the leader changes (see CheckUnexplainedLeaderChange) from
// their attributions (explainChanges).
func unexplainedChanges(p *parsed, changes []LeaderChange) CheckResult {
	cr := CheckResult{Name: CheckUnexplainedLeaderChange, Verdict: Valid}
	if p.run.Info.Workload == "register" {
		// Its clients take tokens outside the election: a new token is no handover.
		cr.Message = "the register workload elects no leader"
		return cr
	}
	ttl := p.run.Info.LeaseTTL
	if ttl <= 0 || p.run.Info.HealTime == 0 {
		cr.Verdict, cr.Message = Unknown, "run.json records no lease TTL or no final heal: the chaos phase cannot be told apart"
		return cr
	}
	var bad []finding
	judged, stalled := 0, 0
	for _, c := range changes {
		switch c.Cause {
		case CauseAfterHeal:
			continue
		case CauseFault:
		case CauseStall:
			stalled++
		default:
			bad = append(bad, finding{at: c.At, what: fmt.Sprintf(
				"leadership passed from %s (token %d) to %s (token %d) at %s with no fault open or healed within %v before",
				c.OldNode, c.OldToken, c.NewNode, c.NewToken, p.t(c.At), 2*ttl)})
		}
		judged++
	}
	cr.Stats = map[string]int64{"changes": int64(judged), "stalled": int64(stalled), "unexplained": int64(len(bad))}
	if len(bad) == 0 {
		cr.Message = fmt.Sprintf("%d leader changes before the final heal, each after a fault", judged)
		if stalled > 0 {
			cr.Message = fmt.Sprintf("%d leader changes before the final heal: %d after a fault, %d after a stall of the old leader or of Redis that no fault injected (its lease expired while it was silent, while its renewal was slow, or while Redis answered neither its renewal nor another node's request)",
				judged, judged-stalled, stalled)
		}
		return cr
	}
	cr.Verdict = Invalid
	cr.Message = fmt.Sprintf("%d leader changes before the final heal, %d with no fault to cause them: the election hands over on its own",
		judged, len(bad))
	cr.setOffending(bad, 5, 0)
	return cr
}

// changeStalled reports whether the old term t ended because the machine, not a fault
// of the harness nor the election, stalled its leader or Redis: it stepped down because
// its lease expired ("lease-expired": not a renewal Redis rejected, nor a term that
// ended on its own), and in its last lease TTL before that it was silent (recorded
// nothing) for at least a third of the lease (the default renew interval), or a renewal
// took that long or never came back, or a renewal got no answer while a request of
// another node's elector was also in flight and got none either (see
// unansweredElsewhere), or while a store request of its own was stuck too (see
// storeStalledAlongside); and it invoked no commit or renewal after its lease ran out by
// its own clock (counted from its last successful acquire or renewal sent) but within
// the drift margin of its step-down. A loaded machine deschedules the node or Redis that
// long, and a busy disk holds Redis in an fsync of its append-only file: the renewal
// then ends at the elector's request timeout (a sixth of the lease), shorter than any
// silence this counts, and the harness's probe, which waits longer, may not see it. An
// election that forgets to renew goes on committing, one that ignores its deadline goes
// on after it, and one whose renewals alone go unanswered while Redis answers the other
// nodes is broken itself: none is excused.
func (p *parsed) changeStalled(t *Term, ttl time.Duration, l *lifeSigns) bool {
	if t.EndReason != "step-down: lease-expired" {
		return false
	}
	node, ok := p.nodeIdx[t.Node]
	if !ok {
		return false
	}
	lastLease, deadline := p.leaseDeadline(node, t.Token, t.End, ttl)
	if lastLease < 0 {
		return false
	}
	drift := int64(ttl / driftDivisor)
	lead := l.leading[node]
	if j, _ := slices.BinarySearch(lead, deadline+1); j < len(lead) && lead[j] < t.End-drift {
		return false
	}
	from, gap := max(t.Start, t.End-int64(ttl)), int64(ttl/3)
	for _, e := range p.el {
		if e.node != node || e.token != t.Token || e.kind != history.KindRenew || e.call < from || e.call > t.End {
			continue
		}
		if e.ret == never || e.ret == 0 || e.ret-e.call >= gap {
			return true
		}
		if e.typ == history.Info && (p.unansweredElsewhere(node, e.call, e.ret) || p.storeStalledAlongside(node, e.call, e.ret)) {
			return true
		}
	}
	all := l.all[node]
	i, _ := slices.BinarySearch(all, from)
	prev := from
	for ; i < len(all) && all[i] <= t.End; i++ {
		if all[i]-prev >= gap {
			return true
		}
		prev = all[i]
	}
	return t.End-prev >= gap
}

// storeStalledAlongside reports whether a store request of node (a load or commit) was
// sent at most one wait before its election request [call, ret] and before half of that
// wait had passed, and was still unanswered when that request gave up: the node's whole path to Redis answered
// neither, not its elector alone. Seen at load 38 on two cores: a leader's commit took
// 556 ms while its renewal, sent 99 ms after it, timed out at 335 ms; twice in a row, and
// its lease ran out in the warm-up, with no fault, while the other nodes' requests were
// slow but answered. An election that drops its renewals sends no commit that stalls
// with them.
func (p *parsed) storeStalledAlongside(node int32, call, ret int64) bool {
	for i := range p.ops {
		o := &p.ops[i]
		if o.node == node && !o.final && o.call >= call-(ret-call) && o.call <= call+(ret-call)/2 && o.ret >= ret {
			return true
		}
	}
	return false
}

// unansweredElsewhere reports whether an election request of a node other than node
// (an acquire, renewal or release) was in flight at some moment of [call, ret] and got
// no answer (info, with a completion): Redis, or the path every node shares to it,
// answered neither then. The reference's elector never cancels a request it sent, so
// info there means a timeout, a lost connection or an error reply (LOADING); and its
// standbys send an acquire at least every RetryInterval (a quarter of the lease), so an
// outage long enough to cost a leader two renewals usually holds one of theirs. One
// node's requests alone going unanswered is no outage of Redis: the other nodes were
// answered.
func (p *parsed) unansweredElsewhere(node int32, call, ret int64) bool {
	for i := range p.el {
		e := &p.el[i]
		if e.node != node && e.typ == history.Info && e.ret != never && e.ret != 0 && e.call < ret && call < e.ret {
			return true
		}
	}
	return false
}

// changeFault returns the latest fault injected at or before change c's first commit
// under its new token that was open then, or healed within two lease TTLs; nil for none.
func (p *parsed) changeFault(c change, ttl time.Duration) *fault {
	var latest *fault
	for i := range p.faults {
		f := &p.faults[i]
		healed := f.heal
		if healed == 0 {
			healed = p.runEnd()
		}
		if f.inject <= c.firstNew && c.firstNew <= healed+int64(2*ttl) && (latest == nil || f.inject >= latest.inject) {
			latest = f
		}
	}
	return latest
}
