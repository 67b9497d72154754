package checker

import (
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/fenceline/fenceline/history"
)

// change is a leader change as the store saw it: the first commit accepted under a
// token higher than every token accepted before.
type change struct {
	oldNode, newNode   int32
	oldToken, newToken int64
	lastOldCall        int64 // invoke of the last commit accepted under oldToken
	lastOld, firstNew  int64 // completions
}

// leaderChanges walks the acknowledged commits in completion order.
func leaderChanges(p *parsed) []change {
	var out []change
	cur, curNode := int64(math.MinInt64), int32(0)
	var lastCall, lastRet int64
	for _, i := range p.okByRet() {
		o := &p.ops[i]
		if !acceptedCommit(o) {
			continue
		}
		switch {
		case o.token == cur:
			lastCall, lastRet = max(lastCall, o.call), o.ret
		case o.token > cur:
			if cur != math.MinInt64 {
				out = append(out, change{oldNode: curNode, newNode: o.node, oldToken: cur, newToken: o.token,
					lastOldCall: lastCall, lastOld: lastRet, firstNew: o.ret})
			}
			cur, curNode, lastCall, lastRet = o.token, o.node, o.call, o.ret
		}
	}
	return out
}

// clusterWide reports whether a fault acts on Redis (or anything but one node) rather
// than on a node.
func (p *parsed) clusterWide(f *fault) bool {
	if strings.HasPrefix(f.kind, "redis") || f.node == "" || f.node == "redis" {
		return true
	}
	if len(p.run.Info.Nodes) > 0 {
		return !slices.Contains(p.run.Info.Nodes, f.node)
	}
	return false
}

// failovers attributes leader changes to faults (see Window for the rule) and
// summarizes the windows per fault kind.
func failovers(p *parsed, changes []change) ([]Window, []FailoverStats) {
	used := make([]bool, len(p.faults))
	var ws []Window
	for _, c := range changes {
		for i := range p.faults {
			f := &p.faults[i]
			if used[i] || f.failed || f.inject < c.lastOldCall || f.inject >= c.firstNew {
				continue
			}
			if f.node != p.nodes[c.oldNode] && !p.clusterWide(f) {
				continue
			}
			used[i] = true
			ws = append(ws, Window{
				Fault: f.kind, FaultNode: f.node, Injected: f.inject,
				OldNode: p.nodes[c.oldNode], OldToken: c.oldToken, NewNode: p.nodes[c.newNode], NewToken: c.newToken,
				LastOld: c.lastOld, FirstNew: c.firstNew,
				ToNewToken: time.Duration(c.firstNew - f.inject), Gap: time.Duration(c.firstNew - c.lastOld),
			})
			break
		}
	}
	byKind := map[string]*FailoverStats{}
	get := func(k string) *FailoverStats {
		if s, ok := byKind[k]; ok {
			return s
		}
		s := &FailoverStats{Fault: k}
		byKind[k] = s
		return s
	}
	for _, f := range p.faults {
		if !f.failed {
			get(f.kind).Injected++
		}
	}
	to, gap := map[string][]time.Duration{}, map[string][]time.Duration{}
	for _, w := range ws {
		get(w.Fault).Windows++
		to[w.Fault] = append(to[w.Fault], w.ToNewToken)
		gap[w.Fault] = append(gap[w.Fault], w.Gap)
	}
	var stats []FailoverStats
	for _, k := range slices.Sorted(maps.Keys(byKind)) {
		s := byKind[k]
		s.ToNewToken, s.Gap = distribution(to[k]), distribution(gap[k])
		stats = append(stats, *s)
	}
	return ws, stats
}

// distribution summarizes samples with nearest-rank percentiles.
func distribution(ds []time.Duration) Distribution {
	if len(ds) == 0 {
		return Distribution{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := func(q float64) time.Duration {
		i := int(math.Ceil(q*float64(len(s)))) - 1
		return s[min(max(i, 0), len(s)-1)]
	}
	return Distribution{Count: len(s), Min: s[0], P50: rank(0.50), P90: rank(0.90), P99: rank(0.99), Max: s[len(s)-1]}
}

// rejections counts commits rejected with a stale token and with a cursor conflict:
// answered ones, and unknown ones the audit shows rejected.
func rejections(p *parsed) (stale, conflict int) {
	for i := range p.ops {
		o := &p.ops[i]
		if o.kind != kCommit {
			continue
		}
		switch {
		case o.out == outStale:
			stale++
		case o.out == outConflict:
			conflict++
		case o.res == resRejected:
			switch p.run.Store.AuditAt(int(o.audit)).Result {
			case history.ErrStaleToken:
				stale++
			case history.ErrCursorConflict:
				conflict++
			}
		}
	}
	return stale, conflict
}
