package checker

import (
	"fmt"
	"math"
	"slices"
	"sort"
)

// edge is a commit that may apply: ops[i] moves the cursor from → to.
type edge struct {
	from, to int64
	i        int
}

// decideChain decides the linearizability of ops (the register's operations, sorted by
// invoke time, unknown windows not bounded) from init, in O(n log n) time and O(n)
// memory, without searching. It returns Valid or Invalid with a reason, or Unknown when
// the history is outside the cases its argument covers; the caller then asks porcupine.
//
// The argument. Suppose every commit that may have applied (accepted, or of unknown
// outcome) moves the cursor strictly forward (to > from). A commit applies only where
// the cursor equals its from, so along any linearization the cursor strictly increases:
// every state occurs at most once, and the accepted commits form one chain of states
// S0 = init, S1, ..., Sm, each Si = (cursor ci, token ki) written by commit wi.
//
//  1. The chain. Every accepted commit is on it, so two accepted commits with the same
//     from, or overlapping [from, to] spans, are not linearizable. Every cursor an ok
//     load returned is a state of it. Walking from init.cursor through these required
//     cursors in increasing order, each step is the accepted commit leaving the current
//     cursor or, when there is none, a commit of unknown outcome leaving it and not
//     overshooting the next required cursor and from which unknown commits reach it;
//     if there is no such commit the history is not linearizable. If there are
//     several, the chain is not determined: we guess (the fresh one with the lowest
//     token), and from then on a success is still a linearization (a witness) but a
//     failure proves nothing (Unknown). An unknown commit off the chain is linearized
//     after everything (its window is open: it returned never), where it is observed
//     by nobody. Each wi must be fresh (ti >= k(i-1)), so tokens are non-decreasing
//     along the chain. Unknown commits leaving Sm with a fresh token could also extend
//     the chain past every required cursor; that matters only to rejections that
//     returned after the last load of Sm was invoked, and then a failure proves
//     nothing either.
//  2. Placement. Each wi gets a point pi in its window, p1 <= ... <= pm, and block i is
//     [pi, pi+1] (p0 = -inf, pm+1 = +inf); an operation fits block i when its window
//     meets it (ties are ordered as needed: porcupine's intervals are closed). Ordering
//     operations by point, blocks in order and the write first in its block, gives a
//     sequential history consistent with real time, and conversely any linearization
//     gives such points. A load returning Si must lie in block i: pi <= ret, call <=
//     pi+1. A stale-token rejection of token t fits the blocks with ki > t, a suffix
//     [s, m]: ps <= ret. A cursor-conflict rejection of (t, f) fits the blocks with
//     ki <= t, a prefix [0, q], except the one block j with cj = f: call <= pq+1 when
//     there is no such j; with j, call <= pj or (pj+1 <= ret and call <= pq+1).
//  3. Every constraint but the last is a bound on one pi. With the chain order, bounds
//     are feasible exactly when the running maximum of the lower bounds never exceeds
//     the running minimum (from the right) of the upper bounds. A disjunction one side
//     of which is infeasible under those bounds forces the other; bounds only tighten,
//     so forcing is sound. When disjunctions stay open, the earliest and the latest
//     feasible points are two concrete placements: if either satisfies every open
//     disjunction it is a linearization; otherwise we give up.
//
// A history outside (1) — a commit that may apply without moving the cursor forward, or
// any write that moves no cursor — is also given up on. For a violation, blame names the operations behind it: the
// load, rejection or commit that fits no state, or the two operations whose bounds
// cross (one must follow a commit that the other must precede, and it returned before
// the other was invoked).
func decideChain(ops []linOp, init regState) (v Verdict, why string, blame []int) {
	nOK, nUnk, nLoad := 0, 0, 0
	for i := range ops {
		switch o := &ops[i]; {
		case o.write:
			// The argument needs every state change to move the cursor.
			return Unknown, "the history holds writes that move no cursor", blame
		case !o.commit:
			nLoad++
		case o.out == outOK:
			nOK++
		case o.out == outUnknown:
			nUnk++
		}
	}
	// The accepted commits as indices into ops (4 bytes each, where an edge takes 24: a
	// long run has a million of them); okEdge makes the edge of one.
	okEdges, unkEdges := make([]int32, 0, nOK), make([]edge, 0, nUnk)
	okEdge := func(k int) edge { i := okEdges[k]; return edge{ops[i].a, ops[i].b, int(i)} }
	required := make([]int64, 0, nLoad+2*nOK)
	for i := range ops {
		o := &ops[i]
		switch {
		case !o.commit:
			required = append(required, o.a)
		case o.out == outOK || o.out == outUnknown:
			if o.b <= o.a {
				return Unknown, "a commit that may apply does not move the cursor forward", blame
			}
			if o.out == outOK {
				okEdges = append(okEdges, int32(i))
				required = append(required, o.a, o.b)
			} else {
				unkEdges = append(unkEdges, edge{o.a, o.b, i})
			}
		}
	}
	byFrom := func(a, b edge) int { return cmpInt(a.from, b.from) }
	slices.SortStableFunc(okEdges, func(a, b int32) int { return cmpInt(ops[a].a, ops[b].a) })
	slices.SortStableFunc(unkEdges, byFrom)
	for k := 1; k < len(okEdges); k++ {
		if prev, e := okEdge(k-1), okEdge(k); e.from < prev.to {
			blame = []int{prev.i, e.i}
			return Invalid, fmt.Sprintf("accepted commits %d→%d and %d→%d cannot both be on one chain of cursors",
				prev.from, prev.to, e.from, e.to), blame
		}
	}
	slices.Sort(required)
	required = slices.Compact(required)
	if len(required) > 0 && required[0] < init.cursor {
		return Invalid, fmt.Sprintf("cursor %d is below the initial cursor %d", required[0], init.cursor), requiring(ops, required[0])
	}

	// extensible and guessed (see below) mean that a failure to place proves nothing:
	// Invalid becomes Unknown. A success is a linearization either way.
	extensible, guessed := false, false
	invalid := func(format string, args ...any) (Verdict, string, []int) {
		why := fmt.Sprintf(format, args...)
		switch {
		case extensible:
			return Unknown, "a commit of unknown outcome may extend the chain, and without it " + why, blame
		case guessed:
			return Unknown, "the chain had to guess between commits of unknown outcome, and with its guess " + why, blame
		}
		return Invalid, why, blame
	}

	// 1. The chain.
	cur := append(make([]int64, 0, nOK+1), init.cursor)
	tok := append(make([]int64, 0, nOK+1), init.token)
	writer := append(make([]int32, 0, nOK+1), -1)
	e, r := 0, 0 // next accepted edge, next required cursor
	var reach map[int64]bool
	reachFor := init.cursor // the required cursor reach is about (none yet: init is never "next")
	for {
		c := cur[len(cur)-1]
		for r < len(required) && required[r] <= c {
			if required[r] < c {
				blame = requiring(ops, required[r])
				if w := writer[len(writer)-1]; w >= 0 { // -1: the initial state, written by no operation
					blame = append(blame, int(w))
				}
				return invalid("cursor %d is required but the chain passes from below it to %d", required[r], c)
			}
			r++
		}
		if r == len(required) {
			break
		}
		next := required[r]
		var w edge
		if e < len(okEdges) && ops[okEdges[e]].a == c {
			w = okEdge(e)
			e++
		} else {
			if reachFor != next {
				reachFor, reach = next, reachable(unkEdges, c, next)
			}
			k := sort.Search(len(unkEdges), func(k int) bool { return unkEdges[k].from >= c })
			n := 0
			for ; k < len(unkEdges) && unkEdges[k].from == c; k++ {
				if u := unkEdges[k]; u.to == next || (u.to < next && reach[u.to]) {
					w = u
					n++
				}
			}
			switch n {
			case 0:
				blame = requiring(ops, next)
				return invalid("no commit leads from cursor %d to cursor %d", c, next)
			case 1:
			default:
				// Several paths of unknown commits lead to next, through states nobody
				// observed. Guess the fresh one with the lowest token (the most room for
				// the commits after it): a placement found with the guess is a
				// linearization; a failure proves nothing.
				guessed = true
				k := sort.Search(len(unkEdges), func(k int) bool { return unkEdges[k].from >= c })
				best := -1
				for ; k < len(unkEdges) && unkEdges[k].from == c; k++ {
					u := unkEdges[k]
					if t := ops[u.i].token; (u.to == next || (u.to < next && reach[u.to])) && t >= tok[len(tok)-1] && (best < 0 || t < ops[unkEdges[best].i].token) {
						best = k
					}
				}
				if best < 0 {
					return invalid("no fresh commit of unknown outcome leads from cursor %d", c)
				}
				w = unkEdges[best]
			}
		}
		o := &ops[w.i]
		if o.token < tok[len(tok)-1] {
			blame = []int{w.i}
			return invalid("the commit %d→%d with token %d would follow token %d", w.from, w.to, o.token, tok[len(tok)-1])
		}
		cur = append(cur, w.to)
		tok = append(tok, o.token)
		writer = append(writer, int32(w.i))
	}
	if e != len(okEdges) {
		w := okEdge(e)
		blame = []int{w.i}
		return invalid("the accepted commit %d→%d is off the chain of cursors", w.from, w.to)
	}
	m := len(cur) - 1
	block := func(c int64) int { // the block with cursor c, or -1
		i, ok := slices.BinarySearch(cur, c)
		if !ok {
			return -1
		}
		return i
	}

	// An unknown commit leaving the last state with a fresh token may extend the chain
	// past every required cursor, observed by no load but perhaps by a rejection (a
	// block after Sm could explain a stale-token rejection of a token above km). A
	// placement without such blocks is still a linearization (the unknown commits off
	// the chain go last, unobserved), so Valid stands; but a failure to place proves
	// nothing then: Invalid becomes Unknown. Such blocks start after every load of
	// block m was invoked, so they matter only to a rejection that returned after
	// that (none when the final store read, invoked after every event, is in block m).
	k := sort.Search(len(unkEdges), func(k int) bool { return unkEdges[k].from >= cur[m] })
	for ; k < len(unkEdges) && unkEdges[k].from == cur[m]; k++ {
		if ops[unkEdges[k].i].token >= tok[m] {
			lastCall := int64(math.MinInt64)
			for i := range ops {
				if o := &ops[i]; !o.commit && o.a == cur[m] {
					lastCall = max(lastCall, o.call)
				}
			}
			extensible = slices.ContainsFunc(ops, func(o linOp) bool {
				return o.commit && (o.out == outStale || o.out == outConflict) && o.ret >= lastCall
			})
			break
		}
	}
	// 2. Bounds on p1..pm (index 0 and m+1 are the fixed ends).
	lo := make([]int64, m+2)
	hi := make([]int64, m+2)
	for i := range lo {
		lo[i], hi[i] = math.MinInt64, math.MaxInt64
	}
	loBy, hiBy := make([]int32, m+2), make([]int32, m+2) // the operation behind each bound
	lower := func(i int, v int64, by int) {
		if i >= 1 && i <= m && v > lo[i] {
			lo[i], loBy[i] = v, int32(by)
		}
	}
	upper := func(i int, v int64, by int) {
		if i >= 1 && i <= m && v < hi[i] {
			hi[i], hiBy[i] = v, int32(by)
		}
	}
	for i := 1; i <= m; i++ {
		lower(i, ops[writer[i]].call, int(writer[i]))
		upper(i, ops[writer[i]].ret, int(writer[i]))
	}
	type disj struct{ x, j, q int }
	var open []disj
	for i := range ops {
		o := &ops[i]
		switch {
		case !o.commit:
			b := block(o.a)
			if b < 0 || tok[b] != o.b {
				// Blocks past Sm would not help: a load's cursor is a required one.
				extensible = false
				blame = []int{i}
				return invalid("a load returned cursor=%d token=%d, a state no chain of commits reaches", o.a, o.b)
			}
			upper(b, o.ret, i)
			lower(b+1, o.call, i)
		case o.out == outStale:
			s := sort.Search(len(tok), func(k int) bool { return tok[k] > o.token })
			if s == len(tok) {
				blame = []int{i}
				return invalid("a commit with token %d was rejected as stale, but no accepted token exceeds it", o.token)
			}
			upper(s, o.ret, i)
		case o.out == outConflict:
			q := sort.Search(len(tok), func(k int) bool { return tok[k] > o.token }) - 1
			if q < 0 {
				blame = []int{i}
				return invalid("a commit with token %d was rejected for a cursor conflict, but its token was never fresh", o.token)
			}
			j := block(o.a)
			switch {
			case j < 0 || j > q:
				lower(q+1, o.call, i)
			case j == 0 && q == 0:
				blame = []int{i}
				return invalid("a commit %d→%d with token %d was rejected for a cursor conflict, but the cursor was %d whenever its token was fresh", o.a, o.b, o.token, o.a)
			case j == 0:
				upper(1, o.ret, i)
				lower(q+1, o.call, i)
			case j == q:
				lower(q, o.call, i)
			default:
				open = append(open, disj{i, j, q})
			}
		}
	}

	// 3. Feasibility, forcing disjunctions until none is decided.
	// With no disjunction there is one round, and it propagates the bounds in place: a
	// copy is needed only to tighten the raw bounds between rounds.
	plo, phi, ploBy, phiBy := lo, hi, loBy, hiBy
	if len(open) > 0 {
		plo, phi = make([]int64, len(lo)), make([]int64, len(hi))
		ploBy, phiBy = make([]int32, len(loBy)), make([]int32, len(hiBy))
	}
	propagate := func() (bool, int) { // into the same four slices every round
		copy(plo, lo)
		copy(phi, hi)
		copy(ploBy, loBy)
		copy(phiBy, hiBy)
		for i := 2; i <= m; i++ {
			if plo[i-1] > plo[i] {
				plo[i], ploBy[i] = plo[i-1], ploBy[i-1]
			}
		}
		for i := m - 1; i >= 1; i-- {
			if phi[i+1] < phi[i] {
				phi[i], phiBy[i] = phi[i+1], phiBy[i+1]
			}
		}
		for i := 1; i <= m; i++ {
			if plo[i] > phi[i] {
				return false, i
			}
		}
		return true, 0
	}
	for round := 0; ; round++ {
		if round == 8 {
			return Unknown, fmt.Sprintf("%d cursor-conflict rejections still open after %d rounds", len(open), round), blame
		}
		ok, at := propagate()
		if !ok {
			// One operation must come after the commit that made state at, another
			// before it, and the second returned before the first was invoked.
			blame = []int{int(phiBy[at]), int(ploBy[at])}
			if blame[0] == blame[1] {
				blame = blame[:1]
			}
			return invalid("these operations cannot be ordered along the chain of cursors around the commit %d→%d (token %d)", cur[at-1], cur[at], tok[at])
		}
		if len(open) == 0 {
			return Valid, fmt.Sprintf("decided along the chain of %d applied commits", m), blame
		}
		var still []disj
		for _, d := range open {
			o := &ops[d.x]
			canA := o.call <= phi[d.j]
			canB := plo[d.j+1] <= o.ret && (d.q+1 > m || o.call <= phi[d.q+1])
			switch {
			case !canA && !canB:
				blame = []int{d.x}
				return invalid("a commit %d→%d with token %d was rejected for a cursor conflict, but its window meets no state where that holds", o.a, o.b, o.token)
			case canA && canB:
				still = append(still, d)
			case canA:
				lower(d.j, o.call, d.x)
			default:
				upper(d.j+1, o.ret, d.x)
				lower(d.q+1, o.call, d.x)
			}
		}
		if len(still) == len(open) {
			// Each open rejection fits on either side of its block j. The earliest and the
			// latest points that the bounds allow are two concrete placements of every
			// write: if either places every open rejection, it is a linearization.
			for _, p := range [][]int64{plo, phi} {
				if slices.IndexFunc(still, func(d disj) bool {
					o := &ops[d.x]
					return !(o.call <= p[d.j] || (p[d.j+1] <= o.ret && (d.q+1 > m || o.call <= p[d.q+1])))
				}) < 0 {
					return Valid, fmt.Sprintf("decided along the chain of %d applied commits", m), blame
				}
			}
			return Unknown, fmt.Sprintf("%d cursor-conflict rejections fit two sets of states", len(still)), blame
		}
		open = still
	}
}

// reachable returns the cursors in (c, next) from which commits of unknown outcome
// (edges, sorted by from) lead to next exactly. Cost O(k log k) for the k edges
// leaving [c, next): edges move the cursor forward, so a pass from the highest from
// down decides each cursor after every cursor above it.
func reachable(edges []edge, c, next int64) map[int64]bool {
	lo := sort.Search(len(edges), func(k int) bool { return edges[k].from >= c })
	hi := sort.Search(len(edges), func(k int) bool { return edges[k].from >= next })
	reach := map[int64]bool{}
	for k := hi - 1; k >= lo; k-- {
		if f, t := edges[k].from, edges[k].to; t == next || (t < next && reach[t]) {
			reach[f] = true
		}
	}
	return reach
}

// requiring returns the first operation that requires cursor c on the chain: a load
// that returned it, or an accepted commit that moved the cursor from or to it.
func requiring(ops []linOp, c int64) []int {
	for i := range ops {
		if o := &ops[i]; (!o.commit && o.a == c) || (o.commit && o.out == outOK && (o.a == c || o.b == c)) {
			return []int{i}
		}
	}
	return nil
}
