package checker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

func TestRegStep(t *testing.T) {
	s := regState{cursor: 10, token: 5}
	commit := func(tok, from, to int64) regInput { return regInput{commit: true, token: tok, from: from, to: to} }
	cases := []struct {
		name string
		in   regInput
		out  outcome
		ok   bool
		next regState
	}{
		{"accepted same token", commit(5, 10, 12), outOK, true, regState{12, 5}},
		{"accepted newer token", commit(6, 10, 11), outOK, true, regState{11, 6}},
		{"accepted stale: illegal", commit(4, 10, 11), outOK, false, s},
		{"accepted conflicting: illegal", commit(6, 9, 11), outOK, false, s},
		{"stale", commit(4, 10, 11), outStale, true, s},
		{"stale but fresh: illegal", commit(5, 10, 11), outStale, false, s},
		{"conflict", commit(5, 9, 11), outConflict, true, s},
		{"conflict but stale: illegal", commit(4, 9, 11), outConflict, false, s},
		{"conflict but cursor matches: illegal", commit(5, 10, 11), outConflict, false, s},
		{"unknown applies", commit(5, 10, 11), outUnknown, true, regState{11, 5}},
		{"unknown no-op", commit(4, 10, 11), outUnknown, true, s},
	}
	for _, c := range cases {
		ok, next := regStep(s, c.in, regOutput{out: c.out})
		if ok != c.ok || (ok && next != c.next) {
			t.Errorf("%s: got %v %+v, want %v %+v", c.name, ok, next, c.ok, c.next)
		}
	}
	if ok, _ := regStep(s, regInput{}, regOutput{out: outOK, cursor: 10, token: 5}); !ok {
		t.Error("load of the current state refused")
	}
	if ok, _ := regStep(s, regInput{}, regOutput{out: outOK, cursor: 9, token: 5}); ok {
		t.Error("load of an old cursor accepted")
	}
}

// randomHistory simulates a few clients on a fenced register with overlapping
// operations, unknown outcomes (applied or not) and, half of the time, one corrupted
// output. Ops are sorted by invoke time.
func randomHistory(rng *rand.Rand) ([]linOp, regState) {
	init := regState{cursor: rng.Int64N(3), token: rng.Int64N(3)}
	backwards := rng.IntN(5) == 0 // some commits move the cursor back: no cursor witnesses
	n := 2 + rng.IntN(16)
	span := int64(n) * (1 + rng.Int64N(12))
	gs := windows(rng, n, span, 4, func() int64 { return rng.Int64N(1 + rng.Int64N(16)) })
	st := init
	ops := make([]linOp, 0, n)
	for _, g := range gs {
		o := g.op
		if rng.IntN(3) == 0 {
			o.out, o.a, o.b = outOK, st.cursor, st.token
			ops = append(ops, o)
			continue
		}
		tok := st.token + []int64{-1, 0, 0, 1, 1}[rng.IntN(5)]
		from := st.cursor
		if rng.IntN(10) < 3 {
			from += []int64{-1, 1}[rng.IntN(2)]
		}
		o.commit, o.token, o.a, o.b = true, tok, from, from+1+rng.Int64N(2)
		if backwards && rng.IntN(3) == 0 {
			o.b = from - 1 - rng.Int64N(2)
		}
		// Unknown outcomes, 7 in 20: 3 happened as the store decided, 2 never reached
		// the store, 2 the audit shows accepted.
		st = settle(rng, &o, st, 20, [3]int{3, 5, 7})
		ops = append(ops, o)
	}
	corruptOne(rng, ops, 2, []outcome{outOK, outStale, outConflict})
	numbered(ops)
	return ops, init
}

// gen is a generated operation and the moment in its window at which it takes effect.
type gen struct {
	lin int64
	op  linOp
}

// windows generates n operation windows: each called in [0, span], lasting dur(), on one
// of nodes nodes, taking effect at a random moment of it; sorted by that moment.
func windows(rng *rand.Rand, n int, span int64, nodes int, dur func() int64) []gen {
	gs := make([]gen, n)
	for i := range gs {
		call := rng.Int64N(span + 1)
		d := dur()
		gs[i] = gen{lin: call + rng.Int64N(d+1), op: linOp{call: call, ret: call + d, node: int32(rng.IntN(nodes))}}
	}
	slices.SortFunc(gs, func(a, b gen) int { return cmpInt(a.lin, b.lin) })
	return gs
}

// settle decides the commit o as a store in state st does (ok, stale token, cursor
// conflict) and returns the state after it. Drawing r in [0, of), it makes the outcome
// unknown: below u[0] as the store decided, below u[1] (if it could apply) as never
// arrived, below u[2] (if it could apply) applied, as the audit would show.
func settle(rng *rand.Rand, o *linOp, st regState, of int, u [3]int) regState {
	can := o.token >= st.token && o.a == st.cursor
	switch {
	case can:
		o.out = outOK
	case o.token < st.token:
		o.out = outStale
	default:
		o.out = outConflict
	}
	switch r := rng.IntN(of); {
	case r < u[0]:
		o.out, o.ret = outUnknown, never
	case r < u[1] && can:
		o.out, o.ret, can = outUnknown, never, false
	case r < u[2] && can:
		o.ret = never
	}
	if can {
		return regState{cursor: o.b, token: o.token}
	}
	return st
}

// corruptOne, one time in every, corrupts one operation's output: a load's cursor or
// token by one, or a commit's outcome to one of outs.
func corruptOne(rng *rand.Rand, ops []linOp, every int, outs []outcome) {
	if rng.IntN(every) != 0 {
		return
	}
	o := &ops[rng.IntN(len(ops))]
	switch {
	case !o.commit && rng.IntN(2) == 0:
		o.a += []int64{-1, 1}[rng.IntN(2)]
	case !o.commit:
		o.b += []int64{-1, 1}[rng.IntN(2)]
	default:
		o.out = outs[rng.IntN(len(outs))]
	}
}

// numbered sorts ops by invoke time and numbers them in that order.
func numbered(ops []linOp) {
	slices.SortStableFunc(ops, func(a, b linOp) int { return cmpInt(a.call, b.call) })
	for i := range ops {
		ops[i].src = int32(i)
	}
}

// diffRNG gives a differential test its number of random histories, n (short when
// quick), and their generator, seeded with seed on stream. FENCELINE_DIFF_N=n runs n
// histories with a new seed instead, which it logs: a long soak.
func diffRNG(t *testing.T, n, short int, quick bool, seed, stream uint64) (int, *rand.Rand) {
	t.Helper()
	if quick {
		n = short
	}
	if v, err := strconv.Atoi(os.Getenv("FENCELINE_DIFF_N")); err == nil {
		n, seed = v, uint64(time.Now().UnixNano())
		t.Logf("seed %d", seed)
	}
	return n, rand.New(rand.NewPCG(seed, stream))
}

// TestCutAgreesWithPorcupine is the differential test of the cut: on many random
// small histories, bounding unknown outcomes and checking the pieces gives exactly
// porcupine's verdict on the whole, uncut history with every unknown outcome open.
func TestCutAgreesWithPorcupine(t *testing.T) {
	n, rng := diffRNG(t, 6000, 1000, testing.Short(), 20240601, 7)
	var cut, invalid, cutInvalid, bounded, multiUnknown int
	for i := range n {
		ops, init := randomHistory(rng)
		whole := porcupine.CheckOperations(registerModel(init, nil), toPorcupine(ops))
		cp := slices.Clone(ops)
		opts := Options{PieceOps: 1 + rng.IntN(3), MaxPieceOps: 1000, PieceTimeout: time.Minute, Parallelism: 2}
		lr := checkLinearizable(context.Background(), cp, init, opts)
		want := Invalid
		if whole {
			want = Valid
		}
		if lr.verdict != want {
			t.Fatalf("history %d: porcupine on the whole history says %v, the cut check says %s (%d pieces)\n%s",
				i, whole, lr.verdict, len(lr.pieces), dumpOps(ops, init))
		}
		if len(lr.pieces) > 1 {
			cut++
		}
		if !whole {
			invalid++
			if len(lr.pieces) > 1 {
				cutInvalid++
			}
		}
		if lr.bounded > 0 {
			bounded++
		}
		if lr.unknowns > 1 {
			multiUnknown++
		}
	}
	t.Logf("%d histories: %d cut into several pieces, %d invalid (%d of them cut), %d with bounded unknowns, %d with several unknowns",
		n, cut, invalid, cutInvalid, bounded, multiUnknown)
	if cut < n/4 || invalid < n/10 || invalid > n*9/10 || cutInvalid < n/20 || bounded < n/10 {
		t.Errorf("the generator does not exercise the cut enough: %d cut, %d invalid, %d bounded of %d", cut, invalid, bounded, n)
	}
}

func dumpOps(ops []linOp, init regState) string {
	s := fmt.Sprintf("init %+v\n", init)
	for _, o := range ops {
		ret := fmt.Sprint(o.ret)
		if o.ret == never {
			ret = "∞"
		}
		s += fmt.Sprintf("  node %d [%d, %s] %s\n", o.node, o.call, ret, describeRegOp(o.input(), o.output()))
	}
	return s
}

// TestCutPoints checks the cut rule on hand-made histories.
func TestCutPoints(t *testing.T) {
	c := func(call, ret, tok, from, to int64, out outcome) linOp {
		return linOp{call: call, ret: ret, commit: true, token: tok, a: from, b: to, out: out}
	}
	l := func(call, ret, cur, tok int64) linOp {
		return linOp{call: call, ret: ret, out: outOK, a: cur, b: tok}
	}
	cases := []struct {
		name string
		ops  []linOp
		want []regState // initial states of the pieces
	}{
		{"sequential commits", []linOp{c(0, 1, 1, 0, 1, outOK), c(2, 3, 1, 1, 2, outOK), l(4, 5, 2, 1)},
			[]regState{{0, 0}, {1, 1}, {2, 1}}},
		{"overlap: no cut inside", []linOp{c(0, 3, 1, 0, 1, outOK), c(2, 4, 1, 1, 2, outOK), l(5, 6, 2, 1)},
			[]regState{{0, 0}}},
		{"closed intervals: touching ops overlap", []linOp{c(0, 2, 1, 0, 1, outOK), c(2, 4, 1, 1, 2, outOK)},
			[]regState{{0, 0}}},
		{"rejections do not change the state", []linOp{c(0, 1, 1, 0, 1, outOK), c(2, 3, 0, 1, 2, outStale), c(4, 5, 1, 5, 6, outConflict)},
			[]regState{{0, 0}, {1, 1}, {1, 1}}},
		{"open unknown blocks every later cut", []linOp{c(0, never, 1, 0, 1, outUnknown), l(2, 3, 1, 1), l(4, 5, 1, 1)},
			[]regState{{0, 0}}},
		{"load after concurrent commits determines the state", []linOp{
			c(0, 3, 1, 0, 1, outOK), c(1, 4, 1, 1, 2, outOK), l(5, 6, 2, 1), l(7, 8, 2, 1)},
			[]regState{{0, 0}, {2, 1}}},
	}
	for _, tc := range cases {
		var got []regState
		forEachCut(tc.ops, regState{}, func(p piece) { got = append(got, p.init) })
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: pieces start in %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestBoundUnknowns checks that an open commit is bounded by the first operation that
// shows a higher token, and left open without one.
func TestBoundUnknowns(t *testing.T) {
	ops := []linOp{
		{call: 0, ret: never, commit: true, token: 1, a: 0, b: 1, out: outUnknown},
		{call: 1, ret: never, commit: true, token: 3, a: 0, b: 1, out: outUnknown},
		{call: 5, ret: 9, commit: true, token: 1, a: 0, b: 1, out: outStale}, // highest ≥ 2
		{call: 10, ret: 12, out: outOK, a: 0, b: 2},
		{call: 20, ret: 22, commit: true, token: 3, a: 0, b: 1, out: outOK}, // cursor 1 > 0
	}
	if n := boundUnknowns(slices.Clone(ops[:4])); n != 1 {
		t.Fatalf("bounded %d, want 1", n)
	}
	b := slices.Clone(ops[:4])
	boundUnknowns(b)
	if b[0].ret != 9 || b[1].ret != never {
		t.Errorf("returns %d, %d; want 9, open", b[0].ret, b[1].ret)
	}
	// With the cursor witness (all commits move the cursor forward), the accepted commit
	// 0→1 at [20, 22] shows the cursor above 0: the token-3 commit from 0 is bounded.
	boundUnknowns(ops)
	if ops[1].ret != 22 {
		t.Errorf("cursor witness: return %d, want 22", ops[1].ret)
	}
}

// TestUndecidedIsNotValid: a piece too large to check, a timeout, or a cancelled
// context give Unknown, never Valid.
func TestUndecidedIsNotValid(t *testing.T) {
	var ops []linOp
	for i := range 50 {
		ops = append(ops, linOp{call: int64(i), ret: int64(i + 5), out: outOK})
	}
	lr := checkLinearizable(context.Background(), slices.Clone(ops), regState{}, Options{PieceOps: 1, MaxPieceOps: 10, PieceTimeout: time.Minute, Parallelism: 1})
	if lr.verdict != Unknown {
		t.Errorf("oversized piece: %s, want unknown", lr.verdict)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	lr = checkLinearizable(ctx, slices.Clone(ops), regState{}, Options{PieceOps: 1, MaxPieceOps: 100, PieceTimeout: time.Minute, Parallelism: 1})
	if lr.verdict != Unknown {
		t.Errorf("cancelled: %s, want unknown", lr.verdict)
	}
}

func TestCombine(t *testing.T) {
	for _, c := range []struct {
		in   []Verdict
		want Verdict
	}{
		{nil, Valid},
		{[]Verdict{Valid, Valid}, Valid},
		{[]Verdict{Valid, Unknown}, Unknown},
		{[]Verdict{Unknown, Invalid, Valid}, Invalid},
		{[]Verdict{"bogus"}, Unknown},
	} {
		if got := Combine(c.in...); got != c.want {
			t.Errorf("Combine(%v) = %s, want %s", c.in, got, c.want)
		}
	}
}
