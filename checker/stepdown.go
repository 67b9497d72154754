package checker

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/fenceline/fenceline/history"
)

// CheckStepDown judges the two promises fenceline's elector makes about when a term
// ends, which a history shows and the fence never enforces.
//
// A term that ends because the node shuts down, or because its work returned, releases
// its lease before the node sends anything else, so that a standby takes over at once (on
// the release notice) instead of a lease later. The node's next election request after
// such a step-down must be the release of that term's token, and after a shutdown the
// same process (the boot of its operation ids, docs/history.md) sends nothing more: its
// elector has stopped. A kill of the node between the two excuses it; a node whose
// record ends after the step-down is not judged (it was killed, or the run ended).
//
// A term that ends because its lease expired ends at its deadline, the send time of its
// last grant that the node saw confirmed (acquire or renewal) plus LeaseTTL less the
// drift margin: a step-down for expiry more than a drift margin before that gave up a
// lease the lock still held, a failover nothing called for (an elector that never counts
// its renewals); one more than a quarter of the lease after it kept believing in a
// lease that Redis, which counts the same TTL from its own receipt of the grant, had let
// go. A clock fault on the node
// excuses either (the deadline is on the node's clock), a pause of it a late one. A term
// whose grant came after its deadline, and so sent no renewal, is not judged late.
//
// The release and the early expiry are failovers the design does not make, at every stop
// or every lease; a late expiry is a leader that believes past its lock, which the fence
// keeps from the store but not from anything else the leader does. It applies where
// lease-grant does: fenceline's own election in the listener workload.
const CheckStepDown = "step-down"

// Step-down reasons after which the elector releases (election.ReasonShutdown,
// election.ReasonLeadReturned).
const (
	reasonShutdown     = "shutdown"
	reasonLeadReturned = "lead-returned"
)

// notOwnElector says why a run's nodes are not fenceline's own elector in the listener
// workload, whose promises step-down and takeover-window judge; "" when they are.
func notOwnElector(p *parsed) string {
	switch info := &p.run.Info; {
	case info.Workload == "register":
		return "the register workload elects no leader"
	case info.Target != "":
		return fmt.Sprintf("the design under test (%s) is not fenceline's elector", info.Target)
	}
	return ""
}

// bootOf returns the process part of an operation id "<node>/<boot>/<seq>"
// (docs/history.md), or "" for an id of another form.
func bootOf(id string) string {
	parts := strings.Split(id, "/")
	if len(parts) != 3 {
		return ""
	}
	return parts[1]
}

// nodeKill reports whether a fault of kind ends the target's process without a
// graceful stop (SIGKILL), so that it could not release.
func nodeKill(kind string) bool {
	switch kind {
	case "kill", "fp-stall-new-leader", "fp-takeover-race":
		return true
	}
	return false
}

func stepDownCheck(p *parsed) CheckResult {
	cr := CheckResult{Name: CheckStepDown, Verdict: Valid}
	if why := notOwnElector(p); why != "" {
		cr.Verdict, cr.Message = NotApplicable, why
		return cr
	}
	byNode := map[int32][]elOp{} // each node's requests, in the order it sent them
	for _, e := range p.el {
		byNode[e.node] = append(byNode[e.node], e)
	}
	kills := p.faultsByNode(func(f *fault) bool { return !f.failed && nodeKill(f.kind) })
	// A kill is recorded just before it is sent: one recorded an instant before the
	// step-down still ended the process before its release, and its heal (the restart)
	// came after.
	killedBetween := func(node int32, from, to int64) bool {
		for _, f := range kills[p.nodes[node]] {
			if f.inject <= to && (f.heal == 0 || f.heal >= from) {
				return true
			}
		}
		return false
	}
	var bad []finding
	judged := 0
	for _, sd := range p.stepDowns {
		if sd.reason != reasonShutdown && sd.reason != reasonLeadReturned {
			continue
		}
		ops := byNode[sd.node]
		i := sort.Search(len(ops), func(i int) bool { return ops[i].call >= sd.time })
		if i == len(ops) {
			continue
		}
		judged++
		next := ops[i]
		if (next.kind != history.KindRelease || next.token != sd.token) && !killedBetween(sd.node, sd.time, next.call) {
			bad = append(bad, finding{at: next.call, what: fmt.Sprintf(
				"%s stepped down from token %d at %s (%s) and sent its %s of token %d at %s without releasing the lease first, and no kill of it came between",
				p.nodes[sd.node], sd.token, p.t(sd.time), sd.reason, next.kind, next.token, p.t(next.call))})
			continue
		}
		if sd.reason != reasonShutdown {
			continue
		}
		// A shutdown ends the process's election: after its release, the same process
		// (the boot of its operation ids) sends nothing more.
		boot := bootOf(sd.id)
		for _, e := range ops[i+1:] {
			if boot != "" && bootOf(p.evs.At(int(e.ev)).ID) == boot {
				bad = append(bad, finding{at: e.call, what: fmt.Sprintf(
					"%s stepped down from token %d at %s for a shutdown, released it, and the same process (boot %s) then sent its %s of token %d at %s",
					p.nodes[sd.node], sd.token, p.t(sd.time), boot, e.kind, e.token, p.t(e.call))})
				break
			}
		}
	}
	unreleased := len(bad)
	expired, early, late := expiries(p)
	counted, overcounted := overcounts(p)
	refused, ignored := refusals(p)
	returned, unprompted := workReturns(p)
	for _, part := range [][]finding{early, late, overcounted, ignored, unprompted} {
		bad = append(bad, part...)
	}
	cr.Stats = map[string]int64{"judged": int64(judged), "unreleased": int64(unreleased), "expiries": int64(expired),
		"early": int64(len(early)), "late": int64(len(late)), "counted": int64(counted), "overcounted": int64(len(overcounted)),
		"refused": int64(refused), "ignored": int64(len(ignored)), "work_returned": int64(returned), "unprompted": int64(len(unprompted))}
	if len(bad) == 0 {
		cr.Message = fmt.Sprintf("%d step-downs at a shutdown or after the work returned, each followed by the release of its term; %d for an expired lease, each at its deadline; %d that counted their lease, none beyond the TTL less the drift margin; %d terms whose renewal was refused, each ended at once", judged, expired, counted, refused)
		return cr
	}
	cr.Verdict = Invalid
	var parts []string
	if unreleased > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d step-downs at a shutdown or after the work returned were not followed by the release of their term", unreleased, judged))
	}
	if len(early) > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d step-downs for an expired lease came before the deadline its confirmed grants gave it", len(early), expired))
	}
	if len(late) > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d step-downs for an expired lease came after the deadline its confirmed grants gave it", len(late), expired))
	}
	if len(overcounted) > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d step-downs counted a lease beyond the TTL less the drift margin", len(overcounted), counted))
	}
	if len(ignored) > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d terms whose renewal was refused did not end at once", len(ignored), refused))
	}
	if len(unprompted) > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d terms whose work returned had no commit refused as stale", len(unprompted), returned))
	}
	slices.SortStableFunc(bad, func(a, b finding) int { return cmp.Compare(a.at, b.at) })
	cr.Message = strings.Join(parts, "; ")
	cr.setOffending(bad, 5, 0)
	return cr
}

// lateTolerance divides the lease TTL into the tolerance of a late step-down for expiry
// (see expiries).
const lateTolerance = 4

// reasonLeaseExpired is election.ReasonLeaseExpired.
const reasonLeaseExpired = "lease-expired"

// expiries judges the step-downs for an expired lease against the deadline the term's
// confirmed grants gave it (CheckStepDown), and returns how many it judged and the
// findings: steps down before it (early) and after it (late).
//
// Early is judged against the deadline surely in force: a renewal extends it only when
// answered a drift margin before it. The elector ends a term whose renewal is answered
// after its deadline, and its loop may take the deadline's timer before an answer that
// came just before it: a reference node stepped down 91 µs after a renewal's answer
// that came 91 ms after the deadline before it, which the latest grant alone called
// 1.45 s early. Late is judged against the latest deadline any confirmed grant gave.
//
// The node reads its send time before it records the request, so a deadline taken from
// the recorded call is never early, and a step-down judged late against it is at least
// as late. The tolerance is the drift margin for an early one, and a quarter of the lease
// (lateTolerance) for a late one: a node starved of CPU steps down late, as a paused one
// does, and the harness does not see it. On two cores running twelve mutants' chaos runs
// at once the unmutated elector's step-downs came at most 26 ms after the deadline in 787
// of them at load average 19, and 108 ms after it once at load average 30 (the control of
// a mutants run, 2026-12-07), where the drift margin (100 ms) called it late.
//
// A late one is judged only while the term's renewal loop ran: a renewal of the term was
// sent after its last confirmed grant. A term whose grant arrived after its deadline (a
// slow reply, a node stalled just after winning) ends at once, late, and sends none. A
// clock fault on the node excuses either (the deadline is on its clock), a pause of it a
// late one (it cannot step down while stopped).
func expiries(p *parsed) (judged int, early, late []finding) {
	ttl := p.run.Info.LeaseTTL
	if ttl <= 0 {
		return 0, nil, nil
	}
	margin := int64(ttl / driftDivisor)
	clocked := p.faultsByNode(func(f *fault) bool { return f.kind == "clock" })
	paused := p.faultsByNode(func(f *fault) bool { return f.kind == "pause" })
	for _, sd := range p.stepDowns {
		if sd.reason != reasonLeaseExpired || sd.token <= 0 {
			continue
		}
		// The term's grants confirmed before the step-down, in the order they were sent.
		var grants []*elOp
		for i := range p.el {
			e := &p.el[i]
			if e.node == sd.node && e.token == sd.token && e.typ == history.OK && e.ret <= sd.time &&
				(e.kind == history.KindAcquire || e.kind == history.KindRenew) {
				grants = append(grants, e)
			}
		}
		if len(grants) == 0 {
			continue
		}
		slices.SortStableFunc(grants, func(a, b *elOp) int { return cmp.Compare(a.call, b.call) })
		last := grants[len(grants)-1] // the latest deadline any grant gave it: for a late one
		// The deadline surely in force, for an early one: a grant extends it only when its
		// answer came a drift margin before it. One answered after it extends nothing (the
		// elector ends the term: the lock may have expired before the answer), and one
		// answered just before it races the deadline's timer in the elector's loop.
		first := grants[0]
		inForce, by := first.call+int64(ttl)-margin, first
		for _, g := range grants[1:] {
			if g.ret <= inForce-margin && g.call+int64(ttl)-margin > inForce {
				inForce, by = g.call+int64(ttl)-margin, g
			}
		}
		between := func(f fault) bool { return f.inject <= sd.time && (f.heal == 0 || f.heal >= first.call) }
		if slices.ContainsFunc(clocked[p.nodes[sd.node]], between) {
			continue
		}
		judged++
		gave := func(g *elOp, deadline int64) string {
			return fmt.Sprintf("its %s sent at %s (answered at %s) gave it, %s", g.kind, p.t(g.call), p.t(g.ret), p.t(deadline))
		}
		deadline := last.call + int64(ttl) - margin
		switch {
		case sd.time < inForce-margin:
			early = append(early, finding{at: sd.time, what: fmt.Sprintf(
				"%s stepped down from token %d at %s for an expired lease, %v before the deadline %s; no clock fault on it came between",
				p.nodes[sd.node], sd.token, p.t(sd.time), time.Duration(inForce-sd.time).Round(time.Millisecond), gave(by, inForce))})
		case sd.time > deadline+int64(ttl/lateTolerance) && renewedAfter(p, sd, last.call) && !slices.ContainsFunc(paused[p.nodes[sd.node]], between):
			grant := gave(last, deadline)
			late = append(late, finding{at: sd.time, what: fmt.Sprintf(
				"%s stepped down from token %d at %s for an expired lease, %v after the deadline %s, while it went on renewing; no pause or clock fault on it came between",
				p.nodes[sd.node], sd.token, p.t(sd.time), time.Duration(sd.time-deadline).Round(time.Millisecond), grant)})
		}
	}
	return judged, early, late
}

// renewedAfter reports whether sd's node sent a renewal of sd's term after from and
// before the step-down.
func renewedAfter(p *parsed, sd stepDown, from int64) bool {
	return slices.ContainsFunc(p.el, func(e elOp) bool {
		return e.node == sd.node && e.token == sd.token && e.kind == history.KindRenew && e.call > from && e.call <= sd.time
	})
}

// overcounts judges the lease each step-down says its term counted on
// (election.LeaseRecorder): from the send of the grant that set the local deadline to
// the deadline, at most LeaseTTL less the drift margin. Redis counts the same TTL from
// its receipt of the grant, so a longer one is a leader that believes past its lock by
// the excess whenever the node's clock runs slow; the late rule of expiries sees that
// only beyond a quarter of the lease, and only at an expiry. The lease is one clock's
// difference of two readings, so no fault excuses it. A run whose nodes say it
// (RunInfo.LeaseCounted: fenceline's own node) must say it at every step-down. It
// returns how many step-downs said their lease, and the findings.
func overcounts(p *parsed) (judged int, bad []finding) {
	ttl := p.run.Info.LeaseTTL
	if ttl <= 0 {
		return 0, nil
	}
	most := ttl - ttl/driftDivisor
	for _, sd := range p.stepDowns {
		if sd.lease == 0 {
			if p.run.Info.LeaseCounted {
				bad = append(bad, finding{at: sd.time, what: fmt.Sprintf(
					"%s stepped down from token %d at %s (%s) without saying the lease its term counted on, which its run says every step-down does",
					p.nodes[sd.node], sd.token, p.t(sd.time), sd.reason)})
			}
			continue
		}
		judged++
		if time.Duration(sd.lease) > most {
			bad = append(bad, finding{at: sd.time, what: fmt.Sprintf(
				"%s stepped down from token %d at %s (%s) having counted its lease %v from the send of its last grant, %v beyond the lease TTL less the drift margin (%v)",
				p.nodes[sd.node], sd.token, p.t(sd.time), sd.reason, time.Duration(sd.lease), time.Duration(sd.lease)-most, most)})
		}
	}
	return judged, bad
}

// refusals judges what a node does once Redis refused a renewal of its term (fail,
// not-held): the lock is not the term's any more, so the term ends at once. Its next
// step-down of that token must come within a quarter of the lease (lateTolerance, the
// lateness a node starved of CPU shows) of the refusal's answer, unless a pause of the
// node came between, and the node sends no renewal of the token before it, whatever
// its clock did: a refused term renews nothing. It returns how many refusals it judged
// (those answered before the term's step-down was recorded) and the findings.
func refusals(p *parsed) (judged int, bad []finding) {
	ttl := p.run.Info.LeaseTTL
	if ttl <= 0 {
		return 0, nil
	}
	paused := p.faultsByNode(func(f *fault) bool { return f.kind == "pause" })
	for _, r := range p.el {
		if r.kind != history.KindRenew || !r.notHeld {
			continue
		}
		// The term's first step-down recorded after the refusal; none: the node was
		// killed or the run ended, and nothing is judged.
		var sd *stepDown
		for i := range p.stepDowns {
			s := &p.stepDowns[i]
			if s.node == r.node && s.token == r.token && s.time >= r.ret && (sd == nil || s.time < sd.time) {
				sd = s
			}
		}
		if sd == nil || slices.ContainsFunc(p.stepDowns, func(s stepDown) bool {
			return s.node == r.node && s.token == r.token && s.time >= r.call && s.time < r.ret
		}) {
			continue // the term had ended before the answer came
		}
		judged++
		node := p.nodes[r.node]
		if i := slices.IndexFunc(p.el, func(e elOp) bool {
			return e.node == r.node && e.token == r.token && e.kind == history.KindRenew && e.call > r.ret && e.call <= sd.time
		}); i >= 0 {
			bad = append(bad, finding{at: p.el[i].call, what: fmt.Sprintf(
				"%s's renewal of token %d was refused at %s (the lock is not its own), and it renewed that token again at %s, before it stepped down at %s",
				node, r.token, p.t(r.ret), p.t(p.el[i].call), p.t(sd.time))})
			continue
		}
		between := func(f fault) bool { return f.inject <= sd.time && (f.heal == 0 || f.heal >= r.ret) }
		if sd.time-r.ret > int64(ttl/lateTolerance) && !slices.ContainsFunc(paused[node], between) {
			bad = append(bad, finding{at: sd.time, what: fmt.Sprintf(
				"%s's renewal of token %d was refused at %s (the lock is not its own), and it stepped down from that token only at %s (%s), %v later; no pause of it came between",
				node, r.token, p.t(r.ret), p.t(sd.time), sd.reason, time.Duration(sd.time-r.ret).Round(time.Millisecond))})
		}
	}
	return judged, bad
}

// workReturns judges why a term's work returned (a step-down for lead-returned). The
// listener gives up its term only when the fence refuses one of its commits as stale
// (listener.Run): it retries every other failure, a load or a fetch that failed or a
// commit of unknown outcome, for as long as the term lasts. So the step-down must follow
// a commit of that term refused as stale, by the same node. A listener that gives up at
// a failed load (a mutant of its retry) hands over its term at every Redis fault, a
// failover nothing called for. It returns how many such step-downs it judged and the
// findings.
func workReturns(p *parsed) (judged int, bad []finding) {
	for _, sd := range p.stepDowns {
		if sd.reason != reasonLeadReturned {
			continue
		}
		judged++
		if slices.ContainsFunc(p.ops, func(o op) bool {
			return o.kind == kCommit && o.node == sd.node && o.token == sd.token && o.out == outStale && o.ret <= sd.time
		}) {
			continue
		}
		bad = append(bad, finding{at: sd.time, what: fmt.Sprintf(
			"%s's work returned from token %d at %s, and no commit of that term had been refused as stale: the listener gave up a term the fence had not refused",
			p.nodes[sd.node], sd.token, p.t(sd.time))})
	}
	return judged, bad
}

// faultsByNode groups the run's faults that keep holds by the node each hit, in the order
// of their injections.
func (p *parsed) faultsByNode(keep func(f *fault) bool) map[string][]fault {
	by := map[string][]fault{}
	for i := range p.faults {
		if f := &p.faults[i]; keep(f) {
			by[f.node] = append(by[f.node], *f)
		}
	}
	return by
}
