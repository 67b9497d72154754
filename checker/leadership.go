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

// isNodeDeath reports whether a fault ends the target's process (the failpoint faults
// fp-late-release, fp-release-race and fp-release-lost stop it, fp-stall-new-leader and
// fp-takeover-race kill it).
func isNodeDeath(kind string) bool {
	switch kind {
	case "kill", "stop", "fp-late-release", "fp-release-race", "fp-release-lost", "fp-stall-new-leader", "fp-takeover-race":
		return true
	}
	return false
}

// runEnd is the end of the run: RunInfo.End, or the latest event.
func (p *parsed) runEnd() int64 {
	if p.run.Info.End > 0 {
		return max(p.run.Info.End, p.end)
	}
	return p.end
}

// terms rebuilds every leadership term from the election operations. A term starts when
// an acquire returns ok and ends at the first of: the node's step-down (for that token,
// or with no token), the invoke of its release of that token, a kill or stop of the
// node, or the node's next acquire. If none was recorded, it ends at the term's last
// sign of life (its last ok renew or accepted commit), or at the end of the run if that
// sign came within one lease TTL of the end (the node was still leading).
func terms(p *parsed) []Term {
	// A term ends at the earliest marker of its node at or after its start that is for
	// any term (token <= 0) or for its token; an acquire at the very start is its own.
	// Markers are sorted per node (and per node and token), so each term is found by
	// binary search: O(n log n) however many terms a node has.
	generic := map[int32][]marker{}
	specific := map[termKey][]marker{}
	seq := 0
	acquires, lastLife := termMarkers(p, func(node int32, m marker) {
		m.seq, seq = seq, seq+1
		if m.token > 0 {
			specific[termKey{node, m.token}] = append(specific[termKey{node, m.token}], m)
		} else {
			generic[node] = append(generic[node], m)
		}
	})
	byTime := func(a, b marker) int { return cmp.Or(cmpInt(a.time, b.time), cmp.Compare(a.seq, b.seq)) }
	// notAcq[n][i] is the first index >= i of generic[n] that is not an acquire.
	notAcq := map[int32][]int32{}
	for n, ms := range generic {
		slices.SortFunc(ms, byTime)
		na := make([]int32, len(ms)+1)
		na[len(ms)] = int32(len(ms))
		for i := len(ms) - 1; i >= 0; i-- {
			na[i] = na[i+1]
			if ms[i].token != -1 {
				na[i] = int32(i)
			}
		}
		notAcq[n] = na
	}
	for _, ms := range specific {
		slices.SortFunc(ms, byTime)
	}
	first := func(ms []marker, t int64) int { // first index with time >= t
		return sort.Search(len(ms), func(i int) bool { return ms[i].time >= t })
	}
	idx := map[termKey]int{}
	out := make([]Term, 0, len(acquires))
	for _, a := range acquires {
		t := Term{Node: p.nodes[a.node], Token: a.token, Start: a.ret, End: -1}
		var best *marker
		consider := func(m *marker) {
			if best == nil || byTime(*m, *best) < 0 {
				best = m
			}
		}
		if ms := generic[a.node]; len(ms) > 0 {
			i := first(ms, t.Start)
			if i < len(ms) && ms[i].time == t.Start {
				// An acquire at the very start is this term's own: the first other
				// marker at that time, else the first after it.
				if k := notAcq[a.node][i]; int(k) < len(ms) && ms[k].time == t.Start {
					i = int(k)
				} else {
					i = first(ms, t.Start+1)
				}
			}
			if i < len(ms) {
				consider(&ms[i])
			}
		}
		if a.token > 0 {
			if ms := specific[termKey{a.node, a.token}]; len(ms) > 0 {
				if i := first(ms, t.Start); i < len(ms) {
					consider(&ms[i])
				}
			}
		}
		if best != nil {
			t.End, t.EndReason = best.time, best.reason
			if best.token == -1 {
				t.EndReason = "next-acquire"
			}
		}
		idx[termKey{a.node, a.token}] = len(out)
		out = append(out, t)
	}
	closeTerms(p, out, idx, lastLife)
	return out
}

// marker is a sign that a node's term ended.
type marker struct {
	time   int64
	token  int64 // 0: any term of the node; -1: the node's next acquire
	reason string
	seq    int // the order markers were found in: the first of equal times wins
}

// termKey names a term: its node's index and its token.
type termKey struct {
	node  int32
	token int64
}

// termMarkers passes add every end marker of p (step-downs, releases, node deaths, the
// next acquires), in the order that decides between markers of equal time. It returns
// the ok acquires, which start the terms, sorted by return, and the last ok renew of
// each (node, token).
func termMarkers(p *parsed, add func(node int32, m marker)) (acquires []elOp, lastLife map[[2]int64]int64) {
	for _, s := range p.stepDowns {
		r := "step-down"
		if s.reason != "" {
			r += ": " + s.reason
		}
		add(s.node, marker{time: s.time, token: s.token, reason: r})
	}
	lastLife = map[[2]int64]int64{} // (node, token) -> last renew ok
	for _, l := range p.el {
		switch {
		case l.kind == history.KindAcquire && l.typ == history.OK:
			acquires = append(acquires, l)
		case l.kind == history.KindRelease:
			add(l.node, marker{time: l.call, token: l.token, reason: "release"})
		case l.kind == history.KindRenew && l.typ == history.OK:
			k := [2]int64{int64(l.node), l.token}
			lastLife[k] = max(lastLife[k], l.ret)
		}
	}
	for _, f := range p.faults {
		if i, ok := p.nodeIdx[f.node]; ok && !f.failed && isNodeDeath(f.kind) {
			add(i, marker{time: f.inject, reason: f.kind})
		}
	}
	for _, a := range acquires {
		add(a.node, marker{time: a.ret, token: -1}) // next acquire; -1: never this term's
	}
	slices.SortStableFunc(acquires, func(a, b elOp) int { return cmpInt(a.ret, b.ret) })
	return acquires, lastLife
}

// closeTerms counts each term's accepted commits (idx: a term's index in out) and ends
// the terms that no marker ended: at their last sign of life, or at the end of the run
// if that came within one lease TTL of it.
func closeTerms(p *parsed, out []Term, idx map[termKey]int, lastLife map[[2]int64]int64) {
	for i := range p.ops {
		o := &p.ops[i]
		if !acceptedCommit(o) || o.ret == never {
			continue
		}
		j, ok := idx[termKey{o.node, o.token}]
		if !ok {
			continue
		}
		t := &out[j]
		t.Commits++
		if t.FirstCommit == 0 || o.ret < t.FirstCommit {
			t.FirstCommit = o.ret
		}
		t.LastCommit = max(t.LastCommit, o.ret)
	}
	end, ttl := p.runEnd(), p.run.Info.LeaseTTL
	for i := range out {
		t := &out[i]
		if t.End >= 0 {
			continue
		}
		last := max(t.Start, t.LastCommit, lastLife[[2]int64{int64(p.nodeIdx[t.Node]), t.Token}])
		if ttl <= 0 || time.Duration(end-last) <= ttl {
			t.End, t.EndReason = max(end, last), "run-end"
		} else {
			t.End, t.EndReason = last, "last-activity"
		}
	}
}

// maxOverlaps bounds the overlaps listed: each is a pair of terms, and a crafted
// history can make every pair overlap.
const maxOverlaps = 1 << 20

// overlaps finds the intervals in which terms of two different nodes both ran, in
// order of start (then of the two terms' order in ts, which is by start). A sweep over
// the terms in start order keeps, per node, the terms still running: O(n log n) plus
// the overlaps found, at most maxOverlaps.
func overlaps(ts []Term) []Overlap {
	type pair struct{ a, b int }
	var found []pair
	active := map[string][]int{} // node -> indices of its terms that may still run
	var nodes []string           // nodes with a non-empty active list
	for j := range ts {
		b := &ts[j]
		if len(found) >= maxOverlaps {
			break
		}
		keep := nodes[:0]
		for _, n := range nodes {
			list := active[n][:0]
			for _, i := range active[n] {
				if ts[i].End <= b.Start {
					continue // ended: it overlaps no later term either
				}
				list = append(list, i)
				if n != b.Node && min(ts[i].End, b.End) > b.Start {
					found = append(found, pair{i, j})
				}
			}
			active[n] = list
			if len(list) > 0 {
				keep = append(keep, n)
			}
		}
		nodes = keep
		if b.End > b.Start {
			if len(active[b.Node]) == 0 {
				nodes = append(nodes, b.Node)
			}
			active[b.Node] = append(active[b.Node], j)
		}
	}
	slices.SortFunc(found, func(x, y pair) int {
		return cmp.Or(cmpInt(ts[x.b].Start, ts[y.b].Start), cmp.Compare(x.a, y.a), cmp.Compare(x.b, y.b))
	})
	found = found[:min(len(found), maxOverlaps)]
	out := make([]Overlap, 0, len(found))
	for _, pr := range found {
		a, b := ts[pr.a], ts[pr.b]
		s, e := b.Start, min(a.End, b.End)
		out = append(out, Overlap{NodeA: a.Node, TokenA: a.Token, NodeB: b.Node, TokenB: b.Token, Start: s, End: e, Duration: time.Duration(e - s)})
	}
	return out
}

// overlapCheck reports the overlaps. It is always Valid.
func overlapCheck(p *parsed, ov []Overlap, nterms int) CheckResult {
	cr := CheckResult{Name: CheckLeadershipOverlap, Verdict: Valid}
	if len(ov) == 0 {
		cr.Message = fmt.Sprintf("%d terms; no two nodes believed they led at the same time", nterms)
		return cr
	}
	var total, longest time.Duration
	var lines []string
	for i, o := range ov {
		total += o.Duration
		longest = max(longest, o.Duration)
		if i < 3 { // the message names three; formatting them all costs memory for nothing
			lines = append(lines, fmt.Sprintf("%s (token %d) and %s (token %d) both led for %v from %s",
				o.NodeA, o.TokenA, o.NodeB, o.TokenB, o.Duration.Round(time.Millisecond), p.t(o.Start)))
		}
	}
	if len(ov) > len(lines) {
		lines = append(lines, fmt.Sprintf("… and %d more", len(ov)-len(lines)))
	}
	cr.Message = fmt.Sprintf("%d overlaps of leadership over %d terms, %v in all, longest %v (listed here; lease-exclusion judges each)",
		len(ov), nterms, total.Round(time.Millisecond), longest.Round(time.Millisecond))
	if len(ov) >= maxOverlaps {
		cr.Message += fmt.Sprintf(" (listing stopped at %d)", maxOverlaps)
	}
	cr.Message += ": " + strings.Join(lines, "; ")
	cr.Stats = map[string]int64{"overlaps": int64(len(ov)), "total_ns": int64(total), "longest_ns": int64(longest)}
	return cr
}
