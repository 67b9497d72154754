package checker

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
)

// linOp is an operation as the linearizability check sees it (kept small: there is
// one per load and commit of the run).
type linOp struct {
	call, ret int64
	token     int64 // commit: the writer's token
	a, b      int64 // commit: from, to; load: the cursor and token it returned
	src       int32 // index in parsed.ops
	node      int32
	commit    bool    // a commit or a write: a fenced operation
	write     bool    // a write that moves no cursor (a, b are 0)
	out       outcome // commit: outOK (accepted), outStale, outConflict, outUnknown
}

func (o *linOp) input() regInput {
	if !o.commit {
		return regInput{}
	}
	return regInput{commit: true, write: o.write, token: o.token, from: o.a, to: o.b}
}

func (o *linOp) output() regOutput {
	if !o.commit {
		return regOutput{out: outOK, cursor: o.a, token: o.b}
	}
	return regOutput{out: o.out}
}

// sideEffect reports whether the operation may change the register's state.
func (o *linOp) sideEffect() bool {
	return o.commit && (o.out == outOK || o.out == outUnknown)
}

// linOps selects the operations the register model judges, in invoke order:
//   - ok loads; loads that failed or whose outcome is unknown observed nothing;
//   - commits answered accepted, stale-token or cursor-conflict;
//   - commits of unknown outcome the audit shows accepted, as accepted commits that
//     never returned;
//   - commits of unknown outcome the audit does not resolve, as unknown commits that
//     never returned.
//
// Commits that certainly did not happen are left out: those failed for another reason,
// and unknown ones the audit shows rejected or absent from a complete audit stream.
func linOps(p *parsed) []linOp {
	out := make([]linOp, 0, len(p.ops))
	for i := range p.ops {
		o := &p.ops[i]
		l := linOp{call: o.call, ret: o.ret, a: o.a, b: o.b, src: int32(i), node: o.node, out: outOK}
		if o.kind == kLoad {
			if o.out != outOK {
				continue
			}
		} else {
			l.commit, l.write, l.token = true, o.kind == kWrite, o.token
			switch o.out {
			case outOK, outStale, outConflict:
				l.out = o.out
			case outUnknown:
				switch o.res {
				case resApplied:
					l.out, l.ret = outOK, never
				case resNone:
					l.out, l.ret = outUnknown, never
				default:
					continue
				}
			default:
				continue
			}
		}
		out = append(out, l)
	}
	// p.ops are in invoke order but for the final read: usually no sort is needed.
	if !slices.IsSortedFunc(out, func(a, b linOp) int { return cmpInt(a.call, b.call) }) {
		slices.SortStableFunc(out, func(a, b linOp) int { return cmpInt(a.call, b.call) })
	}
	return out
}

// boundUnknowns narrows the window of every commit that never returned (Return =
// MaxInt64) without changing whether the history is linearizable, so that the history
// can be cut after it.
//
// In the model the highest accepted token never decreases. An operation W that
// returned at R_W and showed the highest token above t (an accepted commit or a load
// with a token above t, a stale-token rejection of a token ≥ t) proves that from W's
// linearization point on, no commit with token t can apply. So a commit U with token t
// that applies at all applies before R_W; and if it does not apply, it can be placed
// right after W, where it is a no-op. Hence U's window [call, ∞) can become
// [call, max(call, min R_W)], with the same verdict for both an unknown outcome and an
// accepted one.
//
// When no commit of the history moves the cursor back (to ≥ from), the cursor never
// decreases in the model either, and an operation that showed a cursor above U's from
// (an accepted commit's to, a load's cursor) is such a W too: U's cursor check can no
// longer pass.
func boundUnknowns(ops []linOp) (bounded int) {
	open, monotone := 0, true
	for i := range ops {
		if o := &ops[i]; o.commit {
			monotone = monotone && o.b >= o.a
			if o.ret == never && o.sideEffect() {
				open++
			}
		}
	}
	if open == 0 {
		return 0
	}
	type witness struct{ obs, ret int64 } // the token (cursor) is ≥ obs from the op's point on
	toks := make([]witness, 0, len(ops))
	var curs []witness
	if monotone {
		curs = make([]witness, 0, len(ops))
	}
	for i := range ops {
		o := &ops[i]
		if o.ret == never {
			continue
		}
		switch {
		case !o.commit:
			toks = append(toks, witness{o.b, o.ret})
			if monotone {
				curs = append(curs, witness{o.a, o.ret})
			}
		case o.out == outOK:
			toks = append(toks, witness{o.token, o.ret})
			if monotone && !o.write {
				curs = append(curs, witness{o.b, o.ret})
			}
		case o.out == outStale && o.token < math.MaxInt64:
			toks = append(toks, witness{o.token + 1, o.ret})
		}
	}
	// first returns the earliest return among witnesses with obs > v.
	first := func(ws []witness) func(v int64) int64 {
		slices.SortFunc(ws, func(a, b witness) int { return cmpInt(a.obs, b.obs) })
		for i := len(ws) - 2; i >= 0; i-- {
			ws[i].ret = min(ws[i].ret, ws[i+1].ret) // suffix minimum, in place
		}
		return func(v int64) int64 {
			j := sort.Search(len(ws), func(k int) bool { return ws[k].obs > v })
			if j == len(ws) {
				return never
			}
			return ws[j].ret
		}
	}
	byTok, byCur := first(toks), first(curs)
	for i := range ops {
		o := &ops[i]
		if o.ret != never || !o.sideEffect() {
			continue // only accepted and unknown outcomes: the argument above is theirs
		}
		r := byTok(o.token)
		if !o.write { // a write has no cursor check to fail
			r = min(r, byCur(o.a))
		}
		if r != never {
			o.ret = max(o.call, r)
			bounded++
		}
	}
	if bounded > 0 {
		slices.SortStableFunc(ops, func(a, b linOp) int { return cmpInt(a.call, b.call) })
	}
	return bounded
}

// piece is ops[lo:hi] of a history sorted by invoke time, to be checked from init.
// A sequential piece has no two overlapping operations: its only linearization is
// the order of the operations, so replaying the model decides it exactly as porcupine
// would, at no cost.
type piece struct {
	lo, hi int
	init   regState
	seq    bool
}

// forEachCut calls emit for the pieces between consecutive points where the history
// may soundly be cut: the finest cutting.
//
// A cut between ops[i] and ops[i+1] is sound when (1) no operation is in flight: every
// operation up to i returned strictly before ops[i+1] was invoked (porcupine's
// intervals are closed), so every linearization orders all of the prefix before all of
// the suffix; and (2) every linearization of the prefix ends in the same state, which
// becomes the suffix's initial state. Then the whole history is linearizable exactly
// when the prefix is (from its initial state) and the suffix is (from that state).
//
// Only commits and writes that were accepted or whose outcome is unknown change the
// state ("commit" below means either). Since
// the last cut, (2) holds when:
//   - no such commit was invoked: the state is the piece's initial state;
//   - the latest-invoked one, D, was an accepted commit (not a write, which leaves the
//     cursor as it found it) and every other one returned before D was invoked: D is
//     linearized after all of them, so the state is (D.to, D.token);
//   - the latest-invoked ok load L was invoked after every such commit returned: the
//     state is what L returned.
//
// (If the prefix is not linearizable, the whole is not either, whatever the suffix's
// initial state: so any piece found not linearizable proves the history is not.)
func forEachCut(ops []linOp, init regState, emit func(piece)) {
	lo := 0
	maxRet := int64(math.MinInt64)
	lastSE, lastLoad := -1, -1
	prevSERet, maxSERet := int64(math.MinInt64), int64(math.MinInt64)
	seq := true
	for i := range ops {
		o := &ops[i]
		if i > lo && maxRet >= o.call {
			seq = false
		}
		if o.sideEffect() {
			if lastSE >= 0 {
				prevSERet = max(prevSERet, ops[lastSE].ret)
			}
			lastSE = i
			maxSERet = max(maxSERet, o.ret)
		} else if !o.commit {
			lastLoad = i
		}
		maxRet = max(maxRet, o.ret)
		if i+1 == len(ops) || maxRet >= ops[i+1].call {
			continue
		}
		var st regState
		switch {
		case lastSE < 0:
			st = init
		case ops[lastSE].out == outOK && !ops[lastSE].write && prevSERet < ops[lastSE].call:
			st = regState{cursor: ops[lastSE].b, token: ops[lastSE].token}
		case lastLoad >= 0 && maxSERet < ops[lastLoad].call:
			st = regState{cursor: ops[lastLoad].a, token: ops[lastLoad].b}
		default:
			continue
		}
		emit(piece{lo: lo, hi: i + 1, init: init, seq: seq})
		lo, init, seq = i+1, st, true
		maxRet = math.MinInt64
		lastSE, lastLoad = -1, -1
		prevSERet, maxSERet = math.MinInt64, math.MinInt64
	}
	if lo < len(ops) || len(ops) == 0 {
		emit(piece{lo: lo, hi: len(ops), init: init, seq: seq})
	}
}

// maxSeqPiece bounds the sequential pieces so that they spread over the workers.
const maxSeqPiece = 1 << 16

// cutPieces cuts ops (sorted by invoke time) at sound points (see forEachCut) and
// merges consecutive pieces: sequential ones into sequential pieces, the others into
// pieces of at most size operations (a piece that cannot be cut may be larger).
func cutPieces(ops []linOp, init regState, size int) []piece {
	var out []piece
	forEachCut(ops, init, func(p piece) {
		if n := len(out); n > 0 {
			u := &out[n-1]
			if u.seq == p.seq && u.hi == p.lo && ((p.seq && u.hi-u.lo < maxSeqPiece) || (!p.seq && p.hi-u.lo <= size)) {
				u.hi = p.hi
				return
			}
		}
		out = append(out, p)
	})
	return out
}

// replay checks a sequential piece by stepping the model through it in order.
func replay(ops []linOp, init regState) porcupine.CheckResult {
	st := init
	for i := range ops {
		ok, next := regStep(st, ops[i].input(), ops[i].output())
		if !ok {
			return porcupine.Illegal
		}
		st = next
	}
	return porcupine.Ok
}

// checkPiece decides one piece.
func checkPiece(ops []linOp, pc piece, timeout time.Duration) porcupine.CheckResult {
	if pc.seq {
		return replay(ops[pc.lo:pc.hi], pc.init)
	}
	return porcupine.CheckOperationsTimeout(registerModel(pc.init, nil), toPorcupine(ops[pc.lo:pc.hi]), timeout)
}

// toPorcupine converts ops to porcupine operations. Metadata is the index in ops.
// Client ids are lanes: a node's operations share a lane until one overlaps the
// previous (an operation that never returned overlaps everything after it), and then
// move to a new one, as the visualization needs.
func toPorcupine(ops []linOp) []porcupine.Operation {
	type lane struct {
		id   int
		last int64
	}
	lanes := map[int32][]lane{}
	next := 0
	out := make([]porcupine.Operation, len(ops))
	for i := range ops {
		o := &ops[i]
		id := -1
		ls := lanes[o.node]
		for k := range ls {
			if ls[k].last < o.call {
				id = ls[k].id
				ls[k].last = o.ret
				break
			}
		}
		if id < 0 {
			id = next
			next++
			lanes[o.node] = append(ls, lane{id: id, last: o.ret})
		}
		out[i] = porcupine.Operation{ClientId: id, Input: o.input(), Call: o.call, Output: o.output(), Return: o.ret, Metadata: i}
	}
	return out
}

// linResult is the outcome of checking the pieces.
type linResult struct {
	verdict  Verdict
	pieces   []piece
	results  []porcupine.CheckResult // "" for a piece not checked
	notes    []string                // why a piece was not checked
	illegal  int                     // first illegal piece, -1 if none
	largest  int                     // largest piece checked with porcupine
	seqOps   int                     // operations in sequential pieces
	bounded  int
	unknowns int
}

// checkLinearizable cuts ops and checks the pieces in parallel. A piece that is not
// checked (too large, timed out, context done) makes the verdict Unknown, never Valid.
func checkLinearizable(ctx context.Context, ops []linOp, init regState, opts Options) *linResult {
	lr := &linResult{illegal: -1}
	for i := range ops {
		if ops[i].ret == never && ops[i].commit && ops[i].out == outUnknown {
			lr.unknowns++
		}
	}
	lr.bounded = boundUnknowns(ops)
	lr.pieces = cutPieces(ops, init, opts.PieceOps)
	lr.results = make([]porcupine.CheckResult, len(lr.pieces))
	lr.notes = make([]string, len(lr.pieces))
	for _, pc := range lr.pieces {
		if pc.seq {
			lr.seqOps += pc.hi - pc.lo
		} else {
			lr.largest = max(lr.largest, pc.hi-pc.lo)
		}
	}
	var next atomic.Int64
	var firstIllegal atomic.Int64
	firstIllegal.Store(math.MaxInt64)
	var wg sync.WaitGroup
	for range min(opts.Parallelism, len(lr.pieces)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(lr.pieces) {
					return
				}
				if int64(i) > firstIllegal.Load() {
					lr.notes[i] = "not checked: an earlier piece is not linearizable"
					continue
				}
				pc := lr.pieces[i]
				if n := pc.hi - pc.lo; n > opts.MaxPieceOps && !pc.seq {
					lr.notes[i] = fmt.Sprintf("not checked: %d operations with no sound cut point exceed MaxPieceOps %d", n, opts.MaxPieceOps)
					continue
				}
				timeout := opts.PieceTimeout
				if dl, ok := ctx.Deadline(); ok {
					timeout = min(timeout, time.Until(dl))
				}
				if ctx.Err() != nil || timeout <= 0 {
					lr.notes[i] = "not checked: the check was cancelled or ran out of time"
					continue
				}
				res := checkPiece(ops, pc, timeout)
				lr.results[i] = res
				if res == porcupine.Unknown {
					lr.notes[i] = fmt.Sprintf("timed out after %v", timeout)
				}
				if res == porcupine.Illegal {
					for {
						cur := firstIllegal.Load()
						if int64(i) >= cur || firstIllegal.CompareAndSwap(cur, int64(i)) {
							break
						}
					}
				}
			}
		})
	}
	wg.Wait()
	lr.verdict = Valid
	for i, r := range lr.results {
		switch {
		case r == porcupine.Illegal:
			if lr.illegal < 0 {
				lr.illegal = i
			}
			lr.verdict = Invalid
		case r != porcupine.Ok && lr.verdict == Valid:
			lr.verdict = Unknown
		}
	}
	return lr
}

// linearizability runs the linearizability check and explains its result.
func linearizability(ctx context.Context, p *parsed, opts Options) (cr CheckResult) {
	cr = CheckResult{Name: CheckLinearizability}
	ops := linOps(p)
	init := regState{cursor: opts.InitialCursor, token: opts.InitialToken}
	// The chain decision first (chain.go): near-linear, and decisive wherever its
	// argument applies. Porcupine, on pieces, decides what it leaves open, and explains
	// a violation (the operations that cannot be ordered, and the visualization).
	chain, why, blame := decideChain(ops, init)
	blamed := make([]linOp, len(blame)) // copied: checkLinearizable reorders ops
	for k, i := range blame {
		blamed[k] = ops[i]
	}
	if chain == Valid && !opts.CrossCheck {
		cr.Verdict = Valid
		cr.Stats = map[string]int64{
			"ops":               int64(len(ops)),
			"decided_by_chain":  1,
			"unknown_outcomes":  int64(p.counts.UnknownCommits),
			"resolved_by_audit": int64(p.counts.ResolvedByAudit),
		}
		cr.Message = fmt.Sprintf("linearizable: %d loads and commits %s (no search); %d commits of unknown outcome, %d resolved by the audit stream",
			len(ops), why, p.counts.UnknownCommits, p.counts.ResolvedByAudit)
		return cr
	}
	if chain == Invalid {
		// Porcupine only explains: it need not run long.
		opts.PieceTimeout = min(opts.PieceTimeout, 10*time.Second)
	}
	lr := checkLinearizable(ctx, ops, init, opts)
	cr.Verdict = lr.verdict
	defer func() {
		switch {
		case chain == Unknown:
		case chain == Invalid && lr.verdict != Invalid:
			// Porcupine could not find the violation (it ran out of time, or the two
			// disagree): the chain's proof stands; a false pass is the worst outcome.
			cr.Verdict = Invalid
			cr.Message = fmt.Sprintf("not linearizable: %s (porcupine's verdict on the pieces: %s). %s", why, lr.verdict, cr.Message)
			cr.Offending = nil
			cr.Visualization = ""
			cr.FirstViolation = p.runEnd()
			for k := range blamed {
				cr.Offending = append(cr.Offending, "cannot be linearized: "+p.describeLin(&blamed[k]))
				if l := &blamed[k]; l.ret != never {
					cr.FirstViolation = min(cr.FirstViolation, l.ret)
				}
			}
			explainChain(p, ops, lr, blamed, opts, &cr)
		case chain == Valid && lr.verdict == Invalid:
			cr.Message += " (the chain decision found it linearizable: the two disagree)"
		}
		cr.Stats["decided_by_chain"] = 0
		if chain != Unknown {
			cr.Stats["decided_by_chain"] = 1
		}
	}()
	cr.Stats = map[string]int64{
		"ops":               int64(len(ops)),
		"pieces":            int64(len(lr.pieces)),
		"largest_piece":     int64(lr.largest),
		"sequential_ops":    int64(lr.seqOps),
		"unknown_outcomes":  int64(p.counts.UnknownCommits),
		"resolved_by_audit": int64(p.counts.ResolvedByAudit),
		"open_unknowns":     int64(lr.unknowns),
		"bounded":           int64(lr.bounded),
	}
	what := "loads and commits"
	if p.counts.Writes > 0 {
		what = "loads, commits and writes"
	}
	summary := fmt.Sprintf("%d %s in %d pieces (%d operations with no concurrency replayed; the largest piece for porcupine has %d); %d %s of unknown outcome, %d resolved by the audit stream",
		len(ops), what, len(lr.pieces), lr.seqOps, lr.largest, p.counts.UnknownCommits, fencedNoun(p, "and"), p.counts.ResolvedByAudit)
	if p.run.Store != nil && !p.auditComplete {
		summary += " (the audit stream is incomplete: absence proves nothing)"
	}
	switch lr.verdict {
	case Valid:
		cr.Message = "linearizable: " + summary
		return cr
	case Unknown:
		var why []string
		for i, n := range lr.notes {
			if n != "" && lr.results[i] != porcupine.Ok {
				pc := lr.pieces[i]
				why = append(why, fmt.Sprintf("piece %d (%d ops from %s): %s", i, pc.hi-pc.lo, p.t(ops[pc.lo].call), n))
			}
		}
		cr.Message = fmt.Sprintf("undecided: %d of %d pieces not decided; %s", len(why), len(lr.pieces), summary)
		cr.Offending = capList(why, 5)
		return cr
	}
	explainIllegal(p, ops, lr, opts, &cr, summary)
	return cr
}

// explainIllegal narrows the first illegal piece to its first illegal sub-piece (cut at
// every sound point), names the operations that cannot be linearized and writes the
// visualization of that sub-piece.
func explainIllegal(p *parsed, ops []linOp, lr *linResult, opts Options, cr *CheckResult, summary string) {
	pc := lr.pieces[lr.illegal]
	sub, found := pc, false
	forEachCut(ops[pc.lo:pc.hi], pc.init, func(s piece) {
		s.lo += pc.lo
		s.hi += pc.lo
		if !found && checkPiece(ops, s, opts.PieceTimeout) == porcupine.Illegal {
			sub, found = s, true
		}
	})
	sops := ops[sub.lo:sub.hi]
	describe := func(meta any) string {
		i, ok := meta.(int)
		if !ok || i < 0 || i >= len(sops) {
			return ""
		}
		return p.describeLin(&sops[i])
	}
	model := registerModel(sub.init, describe)
	res, info := porcupine.CheckOperationsVerbose(model, toPorcupine(sops), opts.PieceTimeout)
	first, after, longest := blockers(model, sops, info)
	cr.Message = fmt.Sprintf("not linearizable: %d operations from %s to %s (starting from cursor=%d token=%d) have no linearization; the longest linearizable prefix has %d of them%s. %s",
		len(sops), p.t(sops[0].call), p.t(lastReturn(sops)), sub.init.cursor, sub.init.token, longest, after, summary)
	for _, i := range first {
		cr.Offending = append(cr.Offending, "cannot be linearized: "+p.describeLin(&sops[i]))
	}
	// The earliest operation that cannot be linearized (blockers come earliest return
	// first); failing that, the end of the piece, by which it is certainly illegal.
	cr.FirstViolation = lastReturn(sops)
	if len(first) > 0 {
		cr.FirstViolation = p.ops[sops[first[0]].src].opTime()
		if l := &sops[first[0]]; l.ret != never {
			cr.FirstViolation = l.ret
		}
	}
	if res != porcupine.Illegal {
		cr.Offending = append(cr.Offending, fmt.Sprintf("(verbose re-check of the piece returned %s)", res))
	}
	if opts.OutDir == "" {
		return
	}
	info.AddAnnotations(p.faultAnnotations(sops[0].call, lastReturn(sops)))
	name := fmt.Sprintf("linearizability-piece-%d.html", lr.illegal)
	if err := porcupine.VisualizePath(model, info, filepath.Join(opts.OutDir, name)); err != nil {
		cr.Message += fmt.Sprintf(" (visualization not written: %v)", err)
		return
	}
	cr.Visualization = name
}

// faultAnnotations marks the faults that overlap [lo, hi] on a visualization.
func (p *parsed) faultAnnotations(lo, hi int64) []porcupine.Annotation {
	var anns []porcupine.Annotation
	for _, f := range p.faults {
		end := f.heal
		if end == 0 {
			end = max(hi, f.inject)
		}
		if f.inject > hi || end < lo {
			continue
		}
		anns = append(anns, porcupine.Annotation{
			Tag:             "faults",
			Start:           f.inject,
			End:             end,
			Description:     f.kind + " " + f.node,
			Details:         fmt.Sprintf("fault %s: %s on %s, injected %s, healed %s", f.id, f.kind, f.node, p.t(f.inject), p.t(f.heal)),
			BackgroundColor: "#f6c8c8",
		})
	}
	return anns
}

// The windows explainChain tries: the largest sound sub-piece it shows whole, and the
// neighbours on each side of the blamed operation, fewer at each attempt.
const chainWindow = 200

var chainNeighbours = []int{16, 8, 4, 2, 0}

// chainVisualization is the file explainChain writes into Options.OutDir.
const chainVisualization = "linearizability-violation.html"

// explainChain gives a violation that the chain decision proved, and that porcupine did
// not confirm (a piece too large, or out of time), porcupine's view of a small piece
// around it. Porcupine is slowest on exactly these histories (to call one illegal it
// must rule out every order), so it tries, each for a bounded time: the smallest sound
// sub-piece holding every blamed operation, when it is small; then the operations
// around the blamed one invoked last, fewer each time, from the state after the last
// commit accepted before them (a guess: no sound cut is there). What porcupine made of
// the window it shows (illegal, linearizable, or not finished: then the visualization
// holds its partial linearizations) is said in the message, and so is a visualization
// that was not written.
func explainChain(p *parsed, ops []linOp, lr *linResult, blamed []linOp, opts Options, cr *CheckResult) {
	var at []int // positions of the blamed operations in ops, which checkLinearizable reordered
	for k := range blamed {
		for i := range ops {
			if ops[i].src == blamed[k].src {
				at = append(at, i)
				break
			}
		}
	}
	if len(at) == 0 || len(lr.pieces) == 0 {
		cr.Message += ". No visualization: the chain decision names no operation to show."
		return
	}
	slices.Sort(at)
	first, last := at[0], at[len(at)-1]
	k := sort.Search(len(lr.pieces), func(k int) bool { return lr.pieces[k].hi > last })
	pc := lr.pieces[k]
	sub := pc
	forEachCut(ops[pc.lo:pc.hi], pc.init, func(s piece) {
		if s.lo+pc.lo <= last && last < s.hi+pc.lo {
			sub = piece{lo: s.lo + pc.lo, hi: s.hi + pc.lo, init: s.init}
		}
	})
	type window struct {
		lo, hi int
		init   regState
		from   string
	}
	var tries []window
	if sub.lo <= first && sub.hi-sub.lo <= chainWindow {
		tries = append(tries, window{sub.lo, sub.hi, sub.init, "where the sound sub-piece holding them starts"})
	}
	for _, n := range chainNeighbours {
		w := window{lo: max(sub.lo, last-n), hi: min(sub.hi, last+n+1), init: sub.init, from: "where the sound sub-piece holding them starts"}
		if w.lo > sub.lo {
			w.from = "the sub-piece's initial state: no commit accepted before them in it"
			best := -1
			for j := sub.lo; j < w.lo; j++ {
				if o := &ops[j]; o.commit && !o.write && o.out == outOK && o.ret < ops[w.lo].call && (best < 0 || o.b > ops[best].b) {
					best = j
				}
			}
			if best >= 0 {
				w.init, w.from = regState{cursor: ops[best].b, token: ops[best].token}, "after the last commit accepted before them, a guess: no sound cut is there"
			}
		}
		tries = append(tries, w)
	}
	timeout := min(opts.PieceTimeout, 2*time.Second)
	var (
		res   porcupine.CheckResult
		info  porcupine.LinearizationInfo
		model porcupine.Model
		w     window
	)
	for _, w = range tries {
		sops := ops[w.lo:w.hi]
		model = registerModel(w.init, func(meta any) string {
			if i, ok := meta.(int); ok && i >= 0 && i < len(sops) {
				return p.describeLin(&sops[i])
			}
			return ""
		})
		if res, info = porcupine.CheckOperationsVerbose(model, toPorcupine(sops), timeout); res != porcupine.Unknown {
			break
		}
	}
	sops := ops[w.lo:w.hi]
	if !strings.HasSuffix(cr.Message, ".") {
		cr.Message += "."
	}
	shown := fmt.Sprintf("%d operations from %s to %s around them, from cursor=%d token=%d (%s)",
		len(sops), p.t(sops[0].call), p.t(lastReturn(sops)), w.init.cursor, w.init.token, w.from)
	switch res {
	case porcupine.Illegal:
		cr.Message += " Porcupine finds the " + shown + " not linearizable."
	case porcupine.Ok:
		cr.Message += " Porcupine linearizes the " + shown + ": the violation reaches beyond them."
	default:
		cr.Message += fmt.Sprintf(" Porcupine did not finish even the %s within %v: the visualization shows the partial linearizations it found.", shown, timeout)
	}
	if opts.OutDir == "" {
		return
	}
	info.AddAnnotations(p.faultAnnotations(sops[0].call, lastReturn(sops)))
	if err := porcupine.VisualizePath(model, info, filepath.Join(opts.OutDir, chainVisualization)); err != nil {
		cr.Message += fmt.Sprintf(" (visualization not written: %v)", err)
		return
	}
	cr.Visualization = chainVisualization
}

// blockers finds, from porcupine's longest partial linearization, the operations that
// could not be added to it: those not linearized, earliest return first (up to 3).
func blockers(model porcupine.Model, ops []linOp, info porcupine.LinearizationInfo) (first []int, after string, longest int) {
	var best []porcupine.Operation
	if parts := info.PartialLinearizationsOperations(); len(parts) > 0 {
		for _, l := range parts[0] {
			if len(l) > len(best) {
				best = l
			}
		}
	}
	in := make([]bool, len(ops))
	st := model.Init()
	for _, o := range best {
		if i, ok := o.Metadata.(int); ok && i >= 0 && i < len(ops) {
			in[i] = true
		}
		_, st = model.Step(st, o.Input, o.Output)
	}
	if len(best) > 0 {
		after = fmt.Sprintf(", ending in state %s", model.DescribeState(st))
	}
	var rest []int
	for i := range ops {
		if !in[i] {
			rest = append(rest, i)
		}
	}
	slices.SortStableFunc(rest, func(a, b int) int { return cmpInt(ops[a].ret, ops[b].ret) })
	return rest[:min(3, len(rest))], after, len(best)
}

func lastReturn(ops []linOp) int64 {
	var hi int64
	for i := range ops {
		if ops[i].ret != never {
			hi = max(hi, ops[i].ret)
		}
		hi = max(hi, ops[i].call)
	}
	return hi
}

// describeLin describes an operation as the model judged it.
func (p *parsed) describeLin(l *linOp) string {
	s := p.describe(&p.ops[l.src])
	if l.ret != never && p.ops[l.src].ret == never {
		s += fmt.Sprintf(" (window bounded at %s)", p.t(l.ret))
	}
	return s
}

func capList(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	out := slices.Clone(s[:n])
	return append(out, fmt.Sprintf("… and %d more", len(s)-n))
}
