package checker

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fenceline/fenceline/history"
)

// isNodeDeath reports whether a fault ends the target's process.
func isNodeDeath(kind string) bool { return kind == "kill" || kind == "stop" }

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
	type marker struct {
		time   int64
		token  int64 // 0: any term of the node
		reason string
	}
	markers := map[int32][]marker{}
	for _, s := range p.stepDowns {
		r := "step-down"
		if s.reason != "" {
			r += ": " + s.reason
		}
		markers[s.node] = append(markers[s.node], marker{s.time, s.token, r})
	}
	var acquires []elOp
	lastLife := map[[2]int64]int64{} // (node, token) -> last renew ok
	for _, l := range p.el {
		switch {
		case l.kind == history.KindAcquire && l.typ == history.OK:
			acquires = append(acquires, l)
		case l.kind == history.KindRelease:
			markers[l.node] = append(markers[l.node], marker{l.call, l.token, "release"})
		case l.kind == history.KindRenew && l.typ == history.OK:
			k := [2]int64{int64(l.node), l.token}
			lastLife[k] = max(lastLife[k], l.ret)
		}
	}
	for _, f := range p.faults {
		if i, ok := p.nodeIdx[f.node]; ok && !f.failed && isNodeDeath(f.kind) {
			markers[i] = append(markers[i], marker{f.inject, 0, f.kind})
		}
	}
	for _, a := range acquires {
		markers[a.node] = append(markers[a.node], marker{a.ret, -1, ""}) // next acquire; -1: never this term's
	}
	slices.SortStableFunc(acquires, func(a, b elOp) int { return cmpInt(a.ret, b.ret) })
	type key struct {
		node  int32
		token int64
	}
	idx := map[key]int{}
	out := make([]Term, 0, len(acquires))
	for _, a := range acquires {
		t := Term{Node: p.nodes[a.node], Token: a.token, Start: a.ret, End: -1}
		for _, m := range markers[a.node] {
			if m.time < t.Start || (m.time == t.Start && m.token == -1) {
				continue
			}
			if m.token > 0 && m.token != a.token {
				continue
			}
			if m.token == -1 && m.time > t.Start {
				m.reason = "next-acquire"
			}
			if t.End < 0 || m.time < t.End {
				t.End, t.EndReason = m.time, m.reason
			}
		}
		idx[key{a.node, a.token}] = len(out)
		out = append(out, t)
	}
	for i := range p.ops {
		o := &p.ops[i]
		if !acceptedCommit(o) || o.ret == never {
			continue
		}
		j, ok := idx[key{o.node, o.token}]
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
	return out
}

// overlaps finds the intervals in which terms of two different nodes both ran.
func overlaps(ts []Term) []Overlap {
	var out []Overlap
	for i := range ts {
		for j := i + 1; j < len(ts); j++ {
			a, b := ts[i], ts[j]
			if a.Node == b.Node {
				continue
			}
			if b.Start < a.Start {
				a, b = b, a
			}
			s, e := max(a.Start, b.Start), min(a.End, b.End)
			if e > s {
				out = append(out, Overlap{NodeA: a.Node, TokenA: a.Token, NodeB: b.Node, TokenB: b.Token, Start: s, End: e, Duration: time.Duration(e - s)})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Overlap) int { return cmpInt(a.Start, b.Start) })
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
	for _, o := range ov {
		total += o.Duration
		longest = max(longest, o.Duration)
		lines = append(lines, fmt.Sprintf("%s (token %d) and %s (token %d) both led for %v from %s",
			o.NodeA, o.TokenA, o.NodeB, o.TokenB, o.Duration.Round(time.Millisecond), p.t(o.Start)))
	}
	cr.Message = fmt.Sprintf("%d overlaps of leadership over %d terms, %v in all, longest %v (measured, not judged: the fence is what makes them harmless)",
		len(ov), nterms, total.Round(time.Millisecond), longest.Round(time.Millisecond))
	cr.Message += ": " + strings.Join(capList(lines, 3), "; ")
	cr.Stats = map[string]int64{"overlaps": int64(len(ov)), "total_ns": int64(total), "longest_ns": int64(longest)}
	return cr
}
