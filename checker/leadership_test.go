package checker

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/fenceline/fenceline/history"
)

// The quadratic end search and overlaps this package used before, kept as the
// reference: the markers, the commits and the ends of unended terms are terms' own.

func termsQuadratic(p *parsed) []Term {
	markers := map[int32][]marker{}
	acquires, lastLife := termMarkers(p, func(node int32, m marker) {
		markers[node] = append(markers[node], m)
	})
	idx := map[termKey]int{}
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
		idx[termKey{a.node, a.token}] = len(out)
		out = append(out, t)
	}
	closeTerms(p, out, idx, lastLife)
	return out
}

// overlaps finds the intervals in which terms of two different nodes both ran.
func overlapsQuadratic(ts []Term) []Overlap {
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

// TestTermsAgreeWithQuadratic: terms and overlaps, now O(n log n), give exactly what
// the quadratic versions gave, on simulated runs with every fault and on register runs
// with thousands of terms.
func TestTermsAgreeWithQuadratic(t *testing.T) {
	runs := []*history.Run{
		newSim(simConfig{Seed: 31, Ops: 3000, FaultEvery: 30, Faults: benchFaults}).run(),
		newSim(simConfig{Seed: 32, Ops: 3000, FaultEvery: 20, NoFence: true, Faults: []string{"pause", "kill", "stop"}}).run(),
		coarseRegisterRun(33, 6, 6000, 16*time.Millisecond),
		coarseRegisterRun(34, 3, 3000, time.Microsecond),
	}
	for seed := range uint64(20) {
		runs = append(runs, cleanRun(seed))
	}
	for i, run := range runs {
		p, err := parse(run)
		if err != nil {
			t.Fatal(err)
		}
		want, got := termsQuadratic(p), terms(p)
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("run %d: terms differ", i)
		}
		if wo, go_ := overlapsQuadratic(want), overlaps(got); !reflect.DeepEqual(wo, go_) && !(len(wo) == 0 && len(go_) == 0) {
			t.Fatalf("run %d: overlaps differ: %d and %d", i, len(wo), len(go_))
		}
	}
	// Random terms: many nodes, equal starts, empty and nested terms.
	rng := rand.New(rand.NewPCG(5, 5))
	for range 3000 {
		ts := make([]Term, rng.IntN(30))
		for i := range ts {
			s := rng.Int64N(40)
			ts[i] = Term{Node: string(rune('a' + rng.IntN(4))), Token: int64(i), Start: s, End: s + rng.Int64N(20) - 3}
		}
		slices.SortStableFunc(ts, func(a, b Term) int { return cmpInt(a.Start, b.Start) })
		if wo, go_ := overlapsQuadratic(ts), overlaps(ts); !reflect.DeepEqual(wo, go_) && !(len(wo) == 0 && len(go_) == 0) {
			t.Fatalf("overlaps differ on %+v:\n%+v\n%+v", ts, wo, go_)
		}
	}
}

// TestManyTerms: two nodes with 100,000 terms each and all nodes' terms overlapping are
// handled in bounded time.
func TestManyTerms(t *testing.T) {
	const base = int64(1_700_000_000_000_000_000)
	n := 200_000
	if raceEnabled {
		n = 60_000
	}
	var evs []history.Event
	for i := range n {
		n := []string{"n1", "n2"}[i%2]
		tm := base + int64(i)*10
		id := n + "/a/" + string(rune('a'+i%26)) + "/" + time.Duration(i).String()
		evs = append(evs,
			history.Event{ID: id, Type: history.Invoke, Kind: history.KindAcquire, Node: n, Time: tm},
			history.Event{ID: id, Type: history.OK, Kind: history.KindAcquire, Node: n, Time: tm + 1, Token: int64(i + 1)})
	}
	run := &history.Run{Info: history.RunInfo{Start: base}, Events: history.Pack(evs)}
	t0 := time.Now()
	res, err := checkWithin(t, 30*time.Second, run, Options{Checks: []string{CheckLeadershipOverlap}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Terms) != n {
		t.Errorf("%d terms", len(res.Terms))
	}
	t.Logf("%d terms, %d overlaps in %v", len(res.Terms), len(res.Overlaps), time.Since(t0).Round(time.Millisecond))
}
