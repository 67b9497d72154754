package checker

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// coarsen rounds every finite time of ops down to a multiple of q (a coarse clock),
// keeping the invoke-time order.
func coarsen(ops []linOp, q int64) {
	for i := range ops {
		ops[i].call -= ops[i].call % q
		if ops[i].ret != never {
			ops[i].ret -= ops[i].ret % q
		}
	}
}

// TestChainAgreesWithPorcupine is the differential test of decideChain: on many
// random small histories (heavy concurrency, coarse clocks, many unknown outcomes,
// corrupted outcomes), whenever decideChain decides, porcupine on the whole uncut
// history agrees. FENCELINE_DIFF_N=n runs a longer soak with a new seed.
func TestChainAgreesWithPorcupine(t *testing.T) {
	n, rng := diffRNG(t, 20000, 3000, testing.Short(), 20261203, 11)
	decided := map[Verdict]int{}
	var undecided, coarse int
	why := map[string]int{}
	for i := range n {
		ops, init := randomHistory(rng)
		if rng.IntN(3) == 0 {
			coarsen(ops, 2+rng.Int64N(8))
			coarse++
		}
		v, reason, _ := decideChain(ops, init)
		if v == Unknown {
			undecided++
			why[reason[:min(len(reason), 40)]]++
			continue
		}
		decided[v]++
		ok := porcupine.CheckOperations(registerModel(init, nil), toPorcupine(ops))
		if (v == Valid) != ok {
			t.Fatalf("history %d: decideChain says %s (%s), porcupine says linearizable=%v\n%s", i, v, reason, ok, dumpOps(ops, init))
		}
	}
	t.Logf("%d histories (%d with coarse clocks): %d valid and %d invalid decided, %d left to porcupine", n, coarse, decided[Valid], decided[Invalid], undecided)
	for r, c := range why {
		t.Logf("  undecided %5d: %s", c, r)
	}
	if decided[Valid] < n/10 || decided[Invalid] < n/10 {
		t.Errorf("too few histories decided: %v of %d", decided, n)
	}
}

// registerHistory simulates the register workload on a small scale: clients load and
// commit concurrently against one store (the model, stepped at random points inside
// each operation's window), tokens from a shared counter, commits of unknown outcome
// (applied or never arrived), optionally a corrupted outcome. Heavier concurrency and
// longer spans than randomHistory.
func registerHistory(rng *rand.Rand, n int) ([]linOp, regState) {
	init := regState{cursor: rng.Int64N(5), token: rng.Int64N(3)}
	span := int64(n) * (1 + rng.Int64N(6))
	gs := windows(rng, n, span, 6, func() int64 { return rng.Int64N(2 + rng.Int64N(int64(n)*3)) })
	st := init
	counter := init.token
	seen := []regState{init} // states a client may have loaded earlier
	ops := make([]linOp, 0, n)
	for _, g := range gs {
		o := g.op
		if rng.IntN(5) < 2 {
			o.out, o.a, o.b = outOK, st.cursor, st.token
			seen = append(seen, st)
			ops = append(ops, o)
			continue
		}
		base := seen[len(seen)-1-rng.IntN(min(len(seen), 3))]
		tok := base.token
		switch rng.IntN(4) {
		case 0:
			counter++
			tok = counter
		case 1:
			tok = counter
		}
		o.commit, o.token, o.a, o.b = true, tok, base.cursor, base.cursor+1+rng.Int64N(4)
		st = settle(rng, &o, st, 10, [3]int{2, 3, 4})
		ops = append(ops, o)
	}
	corruptOne(rng, ops, 3, []outcome{outOK, outStale, outConflict, outUnknown})
	if rng.IntN(2) == 0 {
		coarsen(ops, 1+rng.Int64N(int64(n)))
	}
	numbered(ops)
	return ops, init
}

// TestChainAgreesWithPorcupineRegister is TestChainAgreesWithPorcupine on simulated
// register-workload histories of up to 40 operations with coarse clocks.
func TestChainAgreesWithPorcupineRegister(t *testing.T) {
	n, rng := diffRNG(t, 2000, 200, testing.Short() || raceEnabled, 20261204, 13)
	decided := map[Verdict]int{}
	var undecided, timedOut int
	why := map[string]int{}
	for i := range n {
		ops, init := registerHistory(rng, 5+rng.IntN(26))
		v, reason, _ := decideChain(ops, init)
		if v == Unknown {
			undecided++
			why[reason[:min(len(reason), 40)]]++
			continue
		}
		res := porcupine.CheckOperationsTimeout(registerModel(init, nil), toPorcupine(ops), time.Second)
		if res == porcupine.Unknown {
			timedOut++
			continue
		}
		decided[v]++
		if (v == Valid) != (res == porcupine.Ok) {
			t.Fatalf("history %d: decideChain says %s (%s), porcupine says %s\n%s", i, v, reason, res, dumpOps(ops, init))
		}
	}
	t.Logf("%d histories: %d valid and %d invalid decided and confirmed, %d left to porcupine, %d porcupine could not finish", n, decided[Valid], decided[Invalid], undecided, timedOut)
	for r, c := range why {
		t.Logf("  undecided %5d: %s", c, r)
	}
	if decided[Valid] < n/10 || decided[Invalid] < n/10 {
		t.Errorf("too few histories decided: %v of %d", decided, n)
	}
}
