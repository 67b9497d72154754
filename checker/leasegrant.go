package checker

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/history"
)

// CheckLeaseGrant judges the lock itself, not what the nodes believed of it: Redis
// must never grant a newer term while an older term's lease, by Redis's own expiry,
// still runs. A successful acquire or renewal of term t1, sent at c, keeps the lock
// t1's until at least c + LeaseTTL (Redis ran it after c, and set the expiry from
// then). An acquire of a newer term t2 (tokens are issued in the order Redis ran the
// acquires) that returned before that moment either took a lock that was held, or
// was followed by a renewal of a lock that was no longer t1's: either way the lock
// was granted twice. That holds whatever the nodes' clocks did (the history's times
// are the host's, the lock's expiry is Redis's) and whatever the nodes believed, so
// the check needs no excuse for pauses, delays, partitions or clock faults. It
// excuses only what ends a lease early by design: the holder's own release, a
// takeover of that term on disconnect, and a Redis fault that loses or rolls back data
// (a restart without persistence, a failover or switchover of a replicated Redis).
//
// The same premise judges the lock's answers to its holder. A release of term t1
// answered as done after an acquire of a newer term had returned claims a lock that no
// longer held t1's value (a release script that answers "released" for a lock not its
// own). A renewal or release of term t1 that Redis answered "not ours" (fail, not-held),
// returning before c + LeaseTTL of a grant of t1 sent at c, was refused while the lease
// was still t1's, with the same excuses (and an earlier release of t1 of unknown
// outcome). A lock that forgets its holder early lets a newer term in as surely as one
// granted twice, and a release recorded as refused that did delete the lock leaves the
// history with no release to excuse the next grant: both are bugs of the lock, whatever
// the nodes believed. And an acquire refused as held after the lock's last holder
// released it (answered done), with no acquire that could have taken it between, was
// refused by a lock that kept a released term (heldAfterRelease).
//
// With takeover on disconnect, the lock also answers for presence: while a presence-loss
// fault surely denied a node its presence channel (history.Event.InEffectFrom), Redis
// had no subscriber of it, so every acquire of that node sent and answered in between
// must be refused as not present (presenceIgnored). One answered as won or as held let a
// node without presence compete: a standby would take over its term at the next poll.
//
// And while a presence-flap fault surely kept a node's presence (it came back before
// the standbys' takeover scripts ran, and stayed), no acquire sent and answered in that
// interval may take that node's lease over (presentTakeovers): the script must find the
// holder's subscriber in the step that takes the lock, not trust the poll before it.
//
// lease-exclusion sees a twice-granted lock only when the older holder goes on
// believing long enough; a fence rejects that holder's next write within a poll, often
// within the drift margin lease-exclusion tolerates. This check sees the grant itself.
const CheckLeaseGrant = "lease-grant"

// grant is a successful acquire or renewal of a term: it keeps the lock the term's
// until at least call + LeaseTTL.
type grant struct {
	node      int32
	token     int64
	call, ret int64
	acquire   bool
}

func grantWhat(g grant) string {
	if g.acquire {
		return "acquire"
	}
	return "renewal"
}

// dataLossFault reports whether a fault of kind can lose or roll back Redis's writes,
// and with them the record of who holds the lock: a restart without persistence (a
// restart with it replays an append-only file synced before each reply, expiries as
// absolute times), or a failover of a replicated Redis to a replica that may lag.
func dataLossFault(kind string, persistent bool) bool {
	switch kind {
	case "redis-restart-volatile", "redis-failover", "redis-switchover", "redis-isolate-primary", "replication-delay":
		return true
	case "redis-restart":
		return !persistent
	}
	return false
}

// leaseGrant is CheckLeaseGrant. It applies to fenceline's own election (the reference
// and its variants) in the listener workload, whose lock is a Redis key with the run's
// lease TTL and whose tokens Redis issues in the acquire; a target or a --node-cmd node
// records its lease in its own terms.
func leaseGrant(p *parsed) CheckResult {
	cr := CheckResult{Name: CheckLeaseGrant, Verdict: Valid}
	info := &p.run.Info
	ttl := info.LeaseTTL
	switch {
	case info.Workload == "register":
		cr.Verdict, cr.Message = NotApplicable, "the register workload's clients take tokens without a lease"
		return cr
	case info.Target != "":
		cr.Verdict, cr.Message = NotApplicable, fmt.Sprintf("the design under test (%s) is not fenceline's election: its lock and its tokens are not the Redis lease this check knows", info.Target)
		return cr
	case ttl <= 0:
		cr.Verdict, cr.Message = Unknown, "run.json records no lease TTL"
		return cr
	}
	// The tolerance absorbs the host's clock between the nodes' readings and Redis's (one
	// clock on one host): the drift margin, as for lease-exclusion. A lock taken from a
	// live holder is taken up to a lease less a renew interval early: seconds, not
	// milliseconds.
	tolerance := ttl / driftDivisor
	var grants []grant // by call
	for _, e := range p.el {
		if e.typ == history.OK && e.token > 0 && (e.kind == history.KindAcquire || e.kind == history.KindRenew) {
			grants = append(grants, grant{e.node, e.token, e.call, e.ret, e.kind == history.KindAcquire})
		}
	}
	slices.SortFunc(grants, func(a, b grant) int { return cmp.Compare(a.call, b.call) })
	// releases[node:token]: when the term's release (of any outcome) was sent.
	released := map[termKey]int64{}
	for _, e := range p.el {
		if e.kind == history.KindRelease && e.token > 0 {
			k := termKey{e.node, e.token}
			if t, ok := released[k]; !ok || e.call < t {
				released[k] = e.call
			}
		}
	}
	var losses []*fault
	for i := range p.faults {
		if f := &p.faults[i]; !f.failed && dataLossFault(f.kind, info.Persistence) {
			losses = append(losses, f)
		}
	}
	// takenAt[lock value of a term]: when the earliest takeover of it returned. From then
	// on the lock held the taker's value, and the term's grants sent before it held the
	// lock no more, for the taker's acquire and every acquire after it (the taker may
	// have released, or lost, its lock within the taken term's lease).
	// takenSent[lock value of a term]: when the earliest takeover of it was sent; from
	// then on Redis may have given the lock to the taker.
	takenAt, takenSent := map[string]int64{}, map[string]int64{}
	for _, g := range grants {
		if from, ok := p.takeovers[termKey{g.node, g.token}]; ok && g.acquire {
			if t, seen := takenAt[from]; !seen || g.ret < t {
				takenAt[from] = g.ret
			}
			sent := g.call
			if lost, ok := p.adoptedTakeovers[termKey{g.node, g.token}]; ok {
				sent = lost // the takeover whose answer was lost, not the adoption
			}
			if t, seen := takenSent[from]; !seen || sent < t {
				takenSent[from] = sent
			}
		}
	}
	excused := func(g, a grant) bool {
		if t, ok := released[termKey{g.node, g.token}]; ok && t <= a.ret {
			return true
		}
		// A takeover ends the term it took: it excuses that term's grants sent before it
		// returned, never a renewal sent after (the lock then held the taker's value).
		if t, ok := takenAt[lockValue(p.nodes[g.node], g.token)]; ok && g.call < t && t <= a.ret {
			return true
		}
		// A loss between the two, in either order, voids the premise too: a counter that
		// came back empty issues smaller tokens after larger ones.
		return lossDuring(p, losses, min(g.call, a.call), max(g.ret, a.ret), ttl)
	}
	var bad []finding
	checked := 0
	for _, a := range grants {
		if !a.acquire {
			continue
		}
		checked++
		// Only grants sent after a.ret-ttl+tolerance can still hold the lock at a.ret.
		from, _ := slices.BinarySearchFunc(grants, a.ret-int64(ttl)+int64(tolerance), func(g grant, t int64) int { return cmp.Compare(g.call, t) })
		for _, g := range grants[from:] {
			if g.token >= a.token || a.ret >= g.call+int64(ttl)-int64(tolerance) || excused(g, a) {
				continue
			}
			bad = append(bad, finding{at: a.ret, what: fmt.Sprintf(
				"%s's acquire of token %d (sent %s) returned at %s, while the lease of token %d was %s's: its %s sent at %s (answered at %s) kept it until %s at the earliest; no release of that term, takeover of it or Redis fault that loses data came between",
				p.nodes[a.node], a.token, p.t(a.call), p.t(a.ret), g.token, p.nodes[g.node], grantWhat(g), p.t(g.call), p.t(g.ret), p.t(g.call+int64(ttl)))})
			break // one finding per acquire: its earliest conflict
		}
	}
	twice := len(bad)
	// A release answered as done (the lock held the term's value and was deleted) after
	// a newer term's acquire had returned: the lock never holds an older term's value
	// again but for a Redis fault that loses data.
	lateReleases := 0
	for _, r := range p.el {
		if r.kind != history.KindRelease || r.typ != history.OK || r.token <= 0 {
			continue
		}
		for _, a := range grants {
			if a.acquire && a.token > r.token && a.ret <= r.call && !lossDuring(p, losses, a.call, r.ret, ttl) {
				lateReleases++
				bad = append(bad, finding{at: r.ret, what: fmt.Sprintf(
					"%s's release of token %d (sent %s) was answered as done at %s, after %s's acquire of token %d had returned at %s: the lock was no longer token %d's, and no Redis fault that loses data came between",
					p.nodes[r.node], r.token, p.t(r.call), p.t(r.ret), p.nodes[a.node], a.token, p.t(a.ret), r.token)})
				break
			}
		}
	}
	refusals, refused := 0, 0
	latest := map[termKey]grant{} // the latest grant of each term so far, by call
	for _, e := range p.el {
		k := termKey{e.node, e.token}
		if e.typ == history.OK && e.token > 0 && (e.kind == history.KindAcquire || e.kind == history.KindRenew) {
			latest[k] = grant{e.node, e.token, e.call, e.ret, e.kind == history.KindAcquire}
			continue
		}
		if !e.notHeld || e.token <= 0 || (e.kind != history.KindRenew && e.kind != history.KindRelease) {
			continue
		}
		refusals++
		// A term's requests never overlap, so its grants sent before this request (p.el
		// is in the order of invocation) returned before it was sent.
		// A takeover of the term explains the refusal only if it was sent before the
		// refusal came back: one sent after (a standby that took over once the node had
		// stopped) cannot have taken the lock the refused request met.
		g, ok := latest[k]
		taken, wasTaken := takenSent[lockValue(p.nodes[e.node], e.token)]
		if !ok || e.ret >= g.call+int64(ttl)-int64(tolerance) ||
			(wasTaken && taken < e.ret) || refusalExcused(p, losses, released, g, e.call, e.ret, ttl) {
			continue
		}
		refused++
		bad = append(bad, finding{at: e.ret, what: fmt.Sprintf(
			"%s's %s of token %d (sent %s) was refused as not its own at %s, while the lease was still its own: its %s sent at %s (answered at %s) kept it until %s at the earliest; no release of that term, takeover of it or Redis fault that loses data came between",
			p.nodes[e.node], e.kind, e.token, p.t(e.call), p.t(e.ret), grantWhat(g), p.t(g.call), p.t(g.ret), p.t(g.call+int64(ttl)))})
	}
	heldFree, heldBad := heldAfterRelease(p, losses, ttl)
	bad = append(bad, heldBad...)
	absent, presenceBad := presenceIgnored(p)
	bad = append(bad, presenceBad...)
	whilePresent, takenBad := presentTakeovers(p, grants)
	bad = append(bad, takenBad...)
	slices.SortStableFunc(bad, func(a, b finding) int { return cmp.Compare(a.at, b.at) })
	cr.Stats = map[string]int64{"acquires": int64(checked), "grants": int64(len(grants)), "granted_twice": int64(twice),
		"late_releases_done": int64(lateReleases), "refusals": int64(refusals), "refused_in_lease": int64(refused),
		"acquires_refused_after_release": int64(heldFree), "refused_free": int64(len(heldBad)),
		"acquires_without_presence": int64(absent), "presence_ignored": int64(len(presenceBad)),
		"acquires_while_present": int64(whilePresent), "present_taken_over": int64(len(takenBad))}
	if len(bad) == 0 {
		cr.Message = fmt.Sprintf("%d acquires: none returned while an older term's lease still ran in Redis; %d renewals and releases refused, none while the lease was still the holder's (tolerance %v)", checked, refusals, tolerance)
		if absent > 0 {
			cr.Message += fmt.Sprintf("; %d acquires while the node's presence was denied, each refused as not present", absent)
		}
		return cr
	}
	cr.Verdict = Invalid
	var parts []string
	if twice > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d acquires returned while an older term's lease still ran in Redis: the lock was granted twice", twice, checked))
	}
	if lateReleases > 0 {
		parts = append(parts, fmt.Sprintf("%d releases were answered as done after a newer term's acquire had returned", lateReleases))
	}
	if refused > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d refused renewals and releases were refused while the lease was still the holder's", refused, refusals))
	}
	if len(heldBad) > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d acquires refused after a release were refused while no term could hold the lock", len(heldBad), heldFree))
	}
	if len(presenceBad) > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d acquires sent and answered while the node's presence was denied were not refused as not present", len(presenceBad), absent))
	}
	if len(takenBad) > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d acquires sent and answered while a holder's presence surely stayed took that holder's lease over", len(takenBad), whilePresent))
	}
	cr.Message = strings.Join(parts, "; ")
	cr.setOffending(bad, 5, 0)
	return cr
}

// heldAfterRelease judges the acquires refused as held (fail, not-held; not an
// adoption) whose latest preceding lock event is a release answered as done: that
// release deleted the lock (it held the term's value when Redis ran it), and only an
// acquire sets it again, so another acquire must have run between the release and the
// refused one. An acquire of any node, of any outcome but a refusal, whose call and
// return bracket a moment in between could have; a Redis fault that loses data may bring
// an older lock back. With neither, the refusal claims a holder that did not exist: a
// release answered as done that kept the lock (its DEL dropped, say), which leaves every
// standby a lease behind at every stop. It returns how many refusals it judged and the
// findings.
func heldAfterRelease(p *parsed, losses []*fault, ttl time.Duration) (int, []finding) {
	if p.run.Info.Variant == redlockVariant {
		// Its lock is several servers' keys: a release done on a majority may leave a
		// minority's, and an acquire is refused by a majority's.
		return 0, nil
	}
	var releases, sets []elOp // releases answered done; acquires that may have set the lock
	for _, e := range p.el {
		switch {
		case e.kind == history.KindRelease && e.typ == history.OK:
			releases = append(releases, e)
		case e.kind == history.KindAcquire && e.typ != history.Fail:
			sets = append(sets, e)
		}
	}
	judged := 0
	var bad []finding
	for _, a := range p.el {
		if a.kind != history.KindAcquire || !a.notHeld || a.token != 0 {
			continue
		}
		// The latest release done before a was sent.
		var r *elOp
		for i := range releases {
			if releases[i].ret <= a.call && (r == nil || releases[i].ret > r.ret) {
				r = &releases[i]
			}
		}
		if r == nil {
			continue
		}
		judged++
		set := slices.ContainsFunc(sets, func(x elOp) bool { return x.call < a.ret && x.ret > r.call })
		if set || lossDuring(p, losses, r.call, a.ret, ttl) {
			continue
		}
		bad = append(bad, finding{at: a.ret, what: fmt.Sprintf(
			"%s's acquire (sent %s) was refused as held at %s, after %s's release of token %d had been answered as done at %s: the release deleted the lock, no acquire could have taken it between, and no Redis fault that loses data came between",
			p.nodes[a.node], p.t(a.call), p.t(a.ret), p.nodes[r.node], r.token, p.t(r.ret))})
	}
	return judged, bad
}

// presenceIgnored judges the acquires (not an adoption, which renews the node's own lock)
// that a node sent and got an answer to while a presence-loss fault surely denied it its
// presence: each must be refused as not present. An answer of unknown outcome is not
// judged. It returns how many it judged and the findings.
func presenceIgnored(p *parsed) (int, []finding) {
	judged := 0
	var bad []finding
	for i := range p.faults {
		f := &p.faults[i]
		if f.kind != faults.PresenceLoss || f.inEffectFrom == 0 {
			continue
		}
		for _, a := range p.el {
			if a.kind != history.KindAcquire || p.nodes[a.node] != f.node || a.call < f.inEffectFrom || a.ret > f.inEffectTo ||
				a.typ == history.Info || p.evs.At(int(a.ev)).Token != 0 {
				continue
			}
			judged++
			if a.typ == history.Fail && !a.notHeld {
				continue // not present
			}
			answer := "won, token " + strconv.FormatInt(a.token, 10)
			if a.typ == history.Fail {
				answer = "refused as held"
			}
			bad = append(bad, finding{at: a.ret, what: fmt.Sprintf(
				"%s's acquire (sent %s) was answered at %s as %s, while its presence channel had no subscriber: presence-loss denied it from %s (seen in effect) to %s (heal begun)",
				f.node, p.t(a.call), p.t(a.ret), answer, p.t(f.inEffectFrom), p.t(f.inEffectTo))})
		}
	}
	return judged, bad
}

// presentTakeovers judges the acquires other nodes sent and got an answer to while a
// presence-flap fault surely kept a node's presence (Redis counted a subscriber of its
// channel throughout): none may have taken that node's lease over, since the takeover
// script requires, in the step that takes the lock, that nobody listens on the holder's
// channel. It returns how many it judged and the findings.
func presentTakeovers(p *parsed, grants []grant) (int, []finding) {
	judged := 0
	var bad []finding
	for i := range p.faults {
		f := &p.faults[i]
		if f.kind != faults.PresenceFlap || f.inEffectFrom == 0 {
			continue
		}
		within := func(call, ret int64) bool { return call >= f.inEffectFrom && ret <= f.inEffectTo }
		for _, a := range p.el {
			if a.kind == history.KindAcquire && p.nodes[a.node] != f.node && a.typ != history.Info && within(a.call, a.ret) {
				judged++
			}
		}
		for _, g := range grants {
			from, ok := p.takeovers[termKey{g.node, g.token}]
			if !ok || !g.acquire || !strings.HasPrefix(from, f.node+":") || !within(g.call, g.ret) {
				continue
			}
			bad = append(bad, finding{at: g.ret, what: fmt.Sprintf(
				"%s's acquire (sent %s) took %s's lease over at %s (token %d, taking %s), while %s's presence surely stayed: presence-flap saw it back by %s and unbroken at %s",
				p.nodes[g.node], p.t(g.call), f.node, p.t(g.ret), g.token, from, f.node, p.t(f.inEffectFrom), p.t(f.inEffectTo))})
		}
	}
	return judged, bad
}

// lockValue is the lock's value while node holds token's term, "node:token", as the
// acquire script writes it and a takeover's Reason names it.
func lockValue(node string, token int64) string { return node + ":" + strconv.FormatInt(token, 10) }

// redlockVariant is variants.RedlockMajority, whose lock is a majority of servers.
const redlockVariant = "redlock-majority"

// refusalExcused reports whether a refusal of a term's request (sent at call, returned
// at ret) after its grant g is explained by design: the term's own release sent
// earlier (released), or a Redis fault that loses data between the two.
func refusalExcused(p *parsed, losses []*fault, released map[termKey]int64, g grant, call, ret int64, ttl time.Duration) bool {
	if t, ok := released[termKey{g.node, g.token}]; ok && t < call {
		return true
	}
	return lossDuring(p, losses, g.call, ret, ttl)
}

// lossDuring reports whether a fault of losses was open between lo and hi, or healed
// less than a lease before lo (a lock it lost may be re-granted up to a lease later).
func lossDuring(p *parsed, losses []*fault, lo, hi int64, ttl time.Duration) bool {
	for _, f := range losses {
		healed := f.heal
		if healed == 0 {
			healed = p.runEnd()
		}
		if f.inject <= hi && lo <= healed+int64(ttl) {
			return true
		}
	}
	return false
}
