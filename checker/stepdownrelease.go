package checker

import (
	"fmt"
	"sort"
	"strings"

	"github.com/fenceline/fenceline/history"
)

// CheckStepDownRelease judges what fenceline's elector promises at the end of a term
// that nothing took from it: a term that ends because the node shuts down, or because
// its work returned, releases its lease before the node sends anything else, so that a
// standby takes over at once (on the release notice) instead of a lease later. The
// node's next election request after such a step-down must therefore be the release of
// that term's token, and after a shutdown the same process (the boot of its operation
// ids, docs/history.md) sends nothing more: its elector has stopped. A node that was killed between the two is excused (it had no
// chance to send it); a node whose record ends after the step-down is not judged (it was
// killed, or the run ended). A term that ended because its lease expired or a renewal
// was refused is not judged either: its lock is no longer its own to release.
//
// It applies where lease-grant does: fenceline's own election in the listener
// workload. A node that never releases is no safety bug (its lease runs out); it is a
// failover a lease slower than the design's at every stop, which a history can tell.
const CheckStepDownRelease = "step-down-release"

// Step-down reasons after which the elector releases (election.ReasonShutdown,
// election.ReasonLeadReturned).
const (
	reasonShutdown     = "shutdown"
	reasonLeadReturned = "lead-returned"
)

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

func stepDownRelease(p *parsed) CheckResult {
	cr := CheckResult{Name: CheckStepDownRelease, Verdict: Valid}
	info := &p.run.Info
	switch {
	case info.Workload == "register":
		cr.Verdict, cr.Message = NotApplicable, "the register workload elects no leader"
		return cr
	case info.Target != "":
		cr.Verdict, cr.Message = NotApplicable, fmt.Sprintf("the design under test (%s) is not fenceline's elector, whose release at a step-down this check knows", info.Target)
		return cr
	}
	byNode := map[int32][]elOp{} // each node's requests, in the order it sent them
	for _, e := range p.el {
		byNode[e.node] = append(byNode[e.node], e)
	}
	kills := map[string][]fault{} // each node's kills
	for _, f := range p.faults {
		if !f.failed && nodeKill(f.kind) {
			kills[f.node] = append(kills[f.node], f)
		}
	}
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
	cr.Stats = map[string]int64{"judged": int64(judged), "unreleased": int64(len(bad))}
	if len(bad) == 0 {
		cr.Message = fmt.Sprintf("%d step-downs at a shutdown or after the work returned, each followed by the release of its term", judged)
		return cr
	}
	cr.Verdict = Invalid
	cr.Message = fmt.Sprintf("%d of %d step-downs at a shutdown or after the work returned were not followed by the release of their term", len(bad), judged)
	cr.setOffending(bad, 5, 0)
	return cr
}
