package checker

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/fenceline/fenceline/history"
)

// maxOffending caps CheckResult.Offending.
const maxOffending = 5

// okByRet returns the indices of the operations answered ok (accepted commits and
// writes, and ok loads), sorted by return time. It is computed once, and is safe for concurrent use.
func (p *parsed) okByRet() []int32 {
	p.byRetOnce.Do(func() {
		p.byRet = make([]int32, 0, p.counts.OK)
		for i := range p.ops {
			if o := &p.ops[i]; o.out == outOK && o.ret != never {
				p.byRet = append(p.byRet, int32(i))
			}
		}
		slices.SortStableFunc(p.byRet, func(a, b int32) int { return cmpInt(p.ops[a].ret, p.ops[b].ret) })
	})
	return p.byRet
}

func acceptedCommit(o *op) bool { return o.kind == kCommit && o.out == outOK && !o.final }

// acceptedToken reports whether o is a commit or a write the store acknowledged: its
// token became the highest accepted.
func acceptedToken(o *op) bool { return o.kind != kLoad && o.out == outOK && !o.final }

// cursorAfter is the cursor an ok operation left: a load's, or a commit's to. A write
// says nothing of the cursor: math.MinInt64.
func (o *op) cursorAfter() int64 {
	switch o.kind {
	case kCommit:
		return o.b
	case kWrite:
		return math.MinInt64
	}
	return o.a
}

// staleWrite: the store never accepted a commit or a write whose token is lower than
// one it had already accepted. In the audit stream (the store's own order), and in the
// histories: a commit or write acknowledged before another was invoked precedes it in
// any order. A write whose body failed after the check was accepted: its token stands.
//
// In the audit it also holds the store to the answer it owes a stale writer: a commit
// is rejected as stale-token exactly when its token is below one accepted before it,
// whatever its cursor. A stale writer told cursor-conflict instead reloads the cursor
// and writes again, as a leader would (the listener's Run does), and a fence whose token
// comparison is wrong answers so before it lets one through: a late write whose cursor
// is also out of date shows it where nothing was accepted yet. (Not on PostgreSQL,
// whose audit order is not the order of its rejections.)
func staleWrite(p *parsed) CheckResult {
	cr := CheckResult{Name: CheckStaleWrite, Verdict: Valid}
	if in := p.run.Info; in.NoFence {
		// A store without a fence accepts any token: "never a stale write" is not its
		// claim, and a pass here would be a fake one. What its writes did to the cursor
		// and the sink is judged by cursor-monotonic and exactly-once.
		cr.Verdict = NotApplicable
		cr.Message = fmt.Sprintf("not applicable, no fence: target %s writes the cursor without a fencing token", in.Target)
		return cr
	}
	var bad []finding
	misanswered := 0
	// Redis's script audits every attempt in the order it ran them. A PostgreSQL audit
	// row takes its sequence number when it is inserted, and a rejection's row can follow
	// that of an accepted commit whose transaction it did not see yet: there the reasons
	// are not in the store's order.
	reasons := p.run.Info.Store != "postgres"
	if st := p.run.Store; st != nil {
		maxTok, at := int64(math.MinInt64), -1
		for i := range st.AuditLen() {
			a := st.AuditAt(i)
			stale := a.Token < maxTok
			switch {
			case !reasons && a.Result != "ok":
				continue
			case a.Result == history.ErrCursorConflict && a.Kind == history.KindWrite:
				bad = append(bad, finding{answerTime(p, a), fmt.Sprintf("audit #%d: %s write op %s with token %d was rejected as %s, but a write moves no cursor (%s)",
					i, a.Node, a.Op, a.Token, a.Result, acceptedSoFar(maxTok, at))})
				misanswered++
				continue
			case a.Result == history.ErrCursorConflict && stale:
				bad = append(bad, finding{answerTime(p, a), fmt.Sprintf("audit #%d: %s op %s with token %d was rejected as %s, not %s, after audit #%d (op %s) accepted token %d",
					i, a.Node, a.Op, a.Token, a.Result, history.ErrStaleToken, at, st.AuditOp(int(at)), maxTok)})
				misanswered++
				continue
			case a.Result == history.ErrStaleToken && !stale:
				bad = append(bad, finding{answerTime(p, a), fmt.Sprintf("audit #%d: %s op %s was rejected as %s, but its token %d is at least every token accepted before it (%s)",
					i, a.Node, a.Op, a.Result, a.Token, acceptedSoFar(maxTok, at))})
				misanswered++
				continue
			case a.Result != "ok" && a.Result != history.AuditBodyFailed:
				continue
			}
			if stale {
				bad = append(bad, finding{p.commitTime(a.Op), fmt.Sprintf("audit #%d: %s op %s accepted with token %d after audit #%d (op %s) accepted token %d",
					i, a.Node, a.Op, a.Token, at, st.AuditOp(int(at)), maxTok)})
				continue
			}
			maxTok, at = a.Token, i
		}
	}
	byRet := p.okByRet()
	k, maxTok, at, acked := 0, int64(math.MinInt64), int32(-1), 0
	for i := range p.ops {
		o := &p.ops[i]
		if !acceptedToken(o) || o.ret == never {
			continue
		}
		acked++
		for ; k < len(byRet) && p.ops[byRet[k]].ret < o.call; k++ {
			if q := &p.ops[byRet[k]]; acceptedToken(q) && q.token > maxTok {
				maxTok, at = q.token, byRet[k]
			}
		}
		if o.token < maxTok {
			bad = append(bad, finding{o.opTime(), fmt.Sprintf("%s, although %s was acknowledged before it was invoked", p.describe(o), p.describe(&p.ops[at]))})
		}
	}
	switch {
	case len(bad) > 0:
		cr.Verdict = Invalid
		var parts []string
		if n := len(bad) - misanswered; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s accepted with a token lower than one already accepted", n, fencedNoun(p, "or")))
		}
		if misanswered > 0 {
			parts = append(parts, fmt.Sprintf("%d rejections whose reason contradicts the tokens accepted before them", misanswered))
		}
		cr.Message = strings.Join(parts, "; ")
		cr.setOffending(bad, maxOffending, p.runEnd())
	case p.run.Store == nil:
		cr.Verdict = Unknown
		cr.Message = "no final store read, so no audit stream: the histories show no stale write, but only acknowledged " + fencedNoun(p, "and") + " were compared"
	default:
		cr.Message = fmt.Sprintf("%d audit entries and %d acknowledged %s: every accepted token is at least every token accepted before it",
			p.run.Store.AuditLen(), acked, fencedNoun(p, "and"))
		if reasons {
			cr.Message += ", and every lower one was rejected as stale"
		}
	}
	return cr
}

// fencedNoun names the fenced operations of the run for a message: "commits", or
// "commits and writes" (conj "and" or "or") when it holds writes that move no cursor.
func fencedNoun(p *parsed, conj string) string {
	if p.counts.Writes == 0 {
		return "commits"
	}
	return "commits " + conj + " writes"
}

// answerTime is when the store gave the answer of audit entry a: its own clock (Redis's
// TIME, the host's clock as the nodes' stamps are), and never before the commit's
// invoke. A late commit's answer comes long after its invoke.
func answerTime(p *parsed, a history.AuditEntry) int64 {
	return max(p.commitTime(a.Op), a.ServerTime*int64(time.Microsecond))
}

// acceptedSoFar says which token the audit had accepted last, for a message.
func acceptedSoFar(maxTok int64, at int) string {
	if at < 0 {
		return "none yet"
	}
	return fmt.Sprintf("%d, audit #%d", maxTok, at)
}

// uniqueTokens: each token was acquired once, by one node, and every accepted commit
// carries a token that its own node acquired.
func uniqueTokens(p *parsed, opts Options) CheckResult {
	cr := CheckResult{Name: CheckUniqueTokens, Verdict: Valid}
	type acq struct {
		node int32
		at   int64
	}
	owners := map[int64][]acq{}
	var bad []finding
	maxAcq := int64(0)
	for _, l := range p.el {
		if l.kind == history.KindAcquire && l.malformed != "" {
			// The script ran (it may have taken the lock and counted a token) and answered
			// with no usable token: no lost reply or fault does that.
			bad = append(bad, finding{l.ret, fmt.Sprintf("%s's acquire at %s was answered outside the protocol (%s)",
				p.nodes[l.node], p.t(l.ret), l.malformed)})
		}
		if l.kind != history.KindAcquire || l.typ != history.OK {
			continue
		}
		if prev := owners[l.token]; len(prev) > 0 {
			bad = append(bad, finding{l.ret, fmt.Sprintf("token %d acquired by %s at %s and again by %s at %s",
				l.token, p.nodes[prev[0].node], p.t(prev[0].at), p.nodes[l.node], p.t(l.ret))})
		}
		owners[l.token] = append(owners[l.token], acq{l.node, l.ret})
		maxAcq = max(maxAcq, l.token)
	}
	checked := 0
	for i := range p.ops {
		o := &p.ops[i]
		if o.kind != kCommit || o.final || !(o.out == outOK || o.res == resApplied) {
			continue
		}
		checked++
		own := owners[o.token]
		if !slices.ContainsFunc(own, func(a acq) bool { return a.node == o.node }) {
			who := "no node acquired it"
			if len(own) > 0 {
				who = p.nodes[own[0].node] + " acquired it"
			}
			bad = append(bad, finding{o.opTime(), fmt.Sprintf("%s: accepted with token %d, but %s", p.describe(o), o.token, who)})
		}
	}
	if len(bad) > 0 {
		cr.Verdict = Invalid
		cr.Message = fmt.Sprintf("%d violations: a token acquired twice, an acquire answered outside the protocol, or an accepted commit under a token its node did not acquire", len(bad))
		cr.setOffending(bad, maxOffending, p.runEnd())
	} else {
		cr.Message = fmt.Sprintf("%d tokens acquired, each once; all %d accepted commits carry a token their node acquired", len(owners), checked)
	}
	if st := p.run.Store; st != nil && !opts.NoFinalRead && st.TokenCounter < maxAcq {
		cr.Message += fmt.Sprintf("; the token counter went back: it reads %d after token %d was issued", st.TokenCounter, maxAcq)
	}
	return cr
}

// sinkExact reports whether sink is exactly events lo..hi in order (hi >= lo-1): what
// a valid run's sink is, decided in one pass before sorting a copy to find what is wrong.
func sinkExact(sink []int64, lo, hi int64) bool {
	if len(sink) == 0 {
		return hi == lo-1
	}
	for i, id := range sink {
		if id != lo+int64(i) {
			return false
		}
	}
	return sink[len(sink)-1] == hi
}

// exactlyOnce: the sink holds events InitialCursor+1..Store.Cursor, each once and in
// order, and the balances are those the events imply.
func exactlyOnce(p *parsed, opts Options) CheckResult {
	cr := CheckResult{Name: CheckExactlyOnce, Verdict: Valid}
	st := p.run.Store
	if st == nil {
		cr.Verdict, cr.Message = Unknown, "no final store read"
		return cr
	}
	lo, hi := opts.InitialCursor+1, st.Cursor
	// Violations seen only in the final read are timed by the commit that wrote the sink
	// position or moved the cursor past the event, when the audit stream tells; else by
	// the final read itself.
	final := p.runEnd()
	var bad []finding
	var groups [][]finding // lost, duplicated, beyond the cursor: capped apart
	if hi < lo-1 {
		bad = append(bad, finding{final, fmt.Sprintf("the final cursor %d is below the initial cursor %d", hi, opts.InitialCursor)})
	} else if !sinkExact(st.Sink, lo, hi) {
		// Cost O(m log m) for a sink of m entries, whatever the cursor: the sink's
		// positions are sorted by event id, so duplicates are neighbours and the lost
		// events are the gaps between the ids present, reported as ranges.
		// The writers' index is only built for a violation to time.
		var sw func(int) int64
		var sp func(int64) int64
		index := func() {
			if sw == nil {
				sw, sp = p.sinkWriters(opts.InitialCursor)
			}
		}
		wrote := func(i int) int64 { index(); return cmp.Or(sw(i), final) }
		passed := func(e int64) int64 { index(); return cmp.Or(sp(e), final) }
		var lost, dup, outside []finding
		var nLost uint64
		firstMisplaced := -1
		in := make([]int, 0, len(st.Sink))
		for i, id := range st.Sink {
			if firstMisplaced < 0 && id != lo+int64(i) {
				firstMisplaced = i
			}
			if id < lo || id > hi {
				outside = append(outside, finding{wrote(i), fmt.Sprintf("event %d at sink position %d is beyond the cursor range %d..%d", id, i, lo, hi)})
				continue
			}
			in = append(in, i)
		}
		slices.SortFunc(in, func(a, b int) int {
			return cmp.Or(cmp.Compare(st.Sink[a], st.Sink[b]), cmp.Compare(a, b))
		})
		gap := func(a, b int64) { // events a..b (a <= b) are missing
			nLost += uint64(b) - uint64(a) + 1
			if a == b {
				lost = append(lost, finding{passed(a), fmt.Sprintf("event %d lost: below the cursor %d but not in the sink", a, hi)})
				return
			}
			lost = append(lost, finding{passed(a), fmt.Sprintf("events %d..%d lost (%d events): below the cursor %d but not in the sink", a, b, uint64(b)-uint64(a)+1, hi)})
		}
		next, full := lo, false // next: the smallest event id not yet accounted for
		for k, pos := range in {
			id := st.Sink[pos]
			if k > 0 && st.Sink[in[k-1]] == id {
				if k == 1 || st.Sink[in[k-2]] != id {
					dup = append(dup, finding{wrote(pos), fmt.Sprintf("event %d applied twice (again at sink position %d)", id, pos)})
				}
				continue
			}
			if id > next {
				gap(next, id-1)
			}
			if id == hi {
				full = true // id+1 could overflow
			} else {
				next = id + 1
			}
		}
		if !full && next <= hi {
			gap(next, hi)
		}
		for _, g := range [][]finding{lost, dup, outside} {
			if len(g) > 0 {
				groups = append(groups, g)
			}
		}
		if len(lost)+len(dup)+len(outside) == 0 && firstMisplaced >= 0 {
			bad = append(bad, finding{wrote(firstMisplaced), fmt.Sprintf("events out of order: sink position %d holds event %d, expected %d", firstMisplaced, st.Sink[firstMisplaced], lo+int64(firstMisplaced))})
		}
		if len(bad)+len(lost)+len(dup)+len(outside) > 0 {
			cr.Message = fmt.Sprintf("the sink (%d entries) is not events %d..%d once each in order: %d lost, %d duplicated, %d beyond the cursor",
				len(st.Sink), lo, hi, nLost, len(dup), len(outside))
		}
	}
	balances := "balances not checked (no expected balances given)"
	switch {
	case opts.ExpectedBalances == nil:
	case hi > opts.InitialCursor+int64(len(st.Sink)):
		// ExpectedBalances costs O(hi): call it only when the input bounds hi. A cursor
		// beyond the sink's length has lost events already, reported above.
		balances = fmt.Sprintf("balances not checked: the cursor %d is beyond the %d sink entries", hi, len(st.Sink))
		if cr.Message != "" {
			cr.Message += "; " + balances
		}
	default:
		want := opts.ExpectedBalances(hi)
		keys := slices.Sorted(maps.Keys(want))
		for k := range st.Balances {
			if _, ok := want[k]; !ok {
				keys = append(keys, k)
			}
		}
		var diff []finding
		for _, k := range keys {
			if got, exp := st.Balances[k], want[k]; got != exp {
				diff = append(diff, finding{final, fmt.Sprintf("balance of %q is %d, events %d..%d imply %d", k, got, lo, hi, exp)})
			}
		}
		if len(diff) > 0 {
			groups = append(groups, diff)
			if cr.Message == "" {
				cr.Message = fmt.Sprintf("%d balances differ from those events %d..%d imply", len(diff), lo, hi)
			} else {
				cr.Message += fmt.Sprintf("; %d balances differ", len(diff))
			}
		}
		balances = fmt.Sprintf("%d balances match", len(want))
	}
	if len(bad) > 0 || len(groups) > 0 {
		cr.Verdict = Invalid
		cr.setGroupedOffending(append(groups, bad), 3, 8, final)
		return cr
	}
	cr.Message = fmt.Sprintf("the sink holds events %d..%d once each, in order; %s", lo, hi, balances)
	return cr
}

// cursorMonotonic: the cursor never moves backwards, neither in the store's order (the
// audit stream's accepted entries) nor in real time (an answered load or commit never
// finds a cursor below one an operation acknowledged before it was invoked).
func cursorMonotonic(p *parsed, opts Options) CheckResult {
	cr := CheckResult{Name: CheckCursorMonotonic, Verdict: Valid}
	var bad []finding
	if st := p.run.Store; st != nil {
		cur, at := opts.InitialCursor, -1
		for i := range st.AuditLen() {
			a := st.AuditAt(i)
			if a.Result != "ok" || a.Kind == history.KindWrite {
				continue
			}
			prev := func() string {
				if at < 0 {
					return "the initial cursor"
				}
				return fmt.Sprintf("audit #%d (op %s)", at, st.AuditOp(int(at)))
			}
			switch {
			case a.To < cur || a.To < a.From:
				bad = append(bad, finding{p.commitTime(a.Op), fmt.Sprintf("audit #%d: %s op %s moved the cursor back from %d (%s) to %d", i, a.Node, a.Op, cur, prev(), a.To)})
			case a.From != cur:
				bad = append(bad, finding{p.commitTime(a.Op), fmt.Sprintf("audit #%d: %s op %s expecting cursor %d was accepted while the cursor was %d (%s)", i, a.Node, a.Op, a.From, cur, prev())})
			}
			cur, at = a.To, i
		}
	}
	byRet := p.okByRet()
	k, maxCur, at, answered := 0, opts.InitialCursor, int32(-1), 0
	for i := range p.ops {
		o := &p.ops[i]
		if o.out != outOK || o.ret == never || o.kind == kWrite {
			continue
		}
		answered++
		for ; k < len(byRet) && p.ops[byRet[k]].ret < o.call; k++ {
			if c := p.ops[byRet[k]].cursorAfter(); c > maxCur {
				maxCur, at = c, byRet[k]
			}
		}
		seen := o.a // a load's cursor, or the cursor a commit found
		if o.kind == kCommit && o.b < o.a {
			bad = append(bad, finding{o.opTime(), fmt.Sprintf("%s: moves the cursor back", p.describe(o))})
		}
		if seen < maxCur {
			prev := "the initial cursor"
			if at >= 0 {
				prev = p.describe(&p.ops[at])
			}
			bad = append(bad, finding{o.opTime(), fmt.Sprintf("%s: found cursor %d after %d was acknowledged by %s", p.describe(o), seen, maxCur, prev)})
		}
	}
	if st := p.run.Store; st != nil && !opts.NoFinalRead {
		for ; k < len(byRet); k++ {
			if c := p.ops[byRet[k]].cursorAfter(); c > maxCur {
				maxCur, at = c, byRet[k]
			}
		}
		if st.Cursor < maxCur && at >= 0 {
			// Observed at the final read, which follows every operation.
			bad = append(bad, finding{p.runEnd(), fmt.Sprintf("the final store read found cursor %d after %d was acknowledged by %s", st.Cursor, maxCur, p.describe(&p.ops[at]))})
		}
	}
	switch {
	case len(bad) > 0:
		cr.Verdict = Invalid
		cr.Message = fmt.Sprintf("the cursor moved backwards or skipped %d times", len(bad))
		cr.setOffending(bad, maxOffending, p.runEnd())
	case p.run.Store == nil:
		cr.Verdict = Unknown
		cr.Message = fmt.Sprintf("no final store read, so no audit stream; %d answered loads and commits never found the cursor behind an acknowledged one", answered)
	default:
		cr.Message = fmt.Sprintf("the cursor only moves forward: %d audit entries in the store's order and %d answered loads and commits in real time",
			p.run.Store.AuditLen(), answered)
	}
	return cr
}

// progress: a commit invoked after the final heal is accepted within opts.ProgressBound.
func progress(p *parsed, opts Options) CheckResult {
	cr := CheckResult{Name: CheckProgress, Verdict: Valid}
	info := &p.run.Info
	heal := info.HealTime
	if heal == 0 {
		cr.Verdict = Unknown
		cr.Message = "the run never reached its final heal"
		if info.Interrupted != "" {
			cr.Message += " (interrupted: " + info.Interrupted + ")"
		}
		return cr
	}
	first := -1
	for i := range p.ops {
		o := &p.ops[i]
		if acceptedCommit(o) && o.call >= heal && o.ret != never && (first < 0 || o.ret < p.ops[first].ret) {
			first = i
		}
	}
	end := info.End
	if end == 0 {
		end = p.end
	}
	bound := opts.ProgressBound
	switch {
	case first >= 0 && time.Duration(p.ops[first].ret-heal) <= bound:
		cr.Message = fmt.Sprintf("a commit was accepted %v after the final heal (bound %v)", time.Duration(p.ops[first].ret-heal).Round(time.Millisecond), bound)
	case first >= 0:
		cr.Verdict = Invalid
		cr.Message = fmt.Sprintf("the first commit after the final heal was accepted %v after it, beyond the bound %v", time.Duration(p.ops[first].ret-heal).Round(time.Millisecond), bound)
		cr.Offending = []string{p.describe(&p.ops[first])}
		cr.FirstViolation = heal + int64(bound) // when the bound ran out
	case info.Interrupted != "":
		cr.Verdict = Unknown
		cr.Message = "no commit accepted after the final heal, but the run was interrupted: " + info.Interrupted
	case time.Duration(end-heal) < bound:
		cr.Verdict = Unknown
		cr.Message = fmt.Sprintf("no commit accepted after the final heal, but the run ended %v after it, within the bound %v", time.Duration(end-heal).Round(time.Millisecond), bound)
	default:
		cr.Verdict = Invalid
		cr.Message = fmt.Sprintf("no commit accepted within %v of the final heal at %s (the run ended %v after it)", bound, p.t(heal), time.Duration(end-heal).Round(time.Millisecond))
		cr.FirstViolation = heal + int64(bound)
	}
	return cr
}

// auditBadMessage says how many of the audit check's n findings are contradictions with
// the audit stream and how many replies outside the protocol.
func auditBadMessage(n, malformed int) string {
	if malformed == 0 {
		return fmt.Sprintf("%d contradictions between the histories and the audit stream", n)
	}
	return fmt.Sprintf("%d contradictions between the histories and the audit stream, and %d store replies outside the fence's protocol", n-malformed, malformed)
}

// auditConsistency: the nodes' records of their commits agree with the audit stream,
// and every answer of the store was one its protocol allows.
func auditConsistency(p *parsed, opts Options) CheckResult {
	cr := CheckResult{Name: CheckAudit, Verdict: Valid}
	st := p.run.Store
	if st == nil {
		if len(p.storeMalformed) > 0 {
			// No audit is needed to see a reply no correct store gives.
			cr.Verdict = Invalid
			cr.Message = fmt.Sprintf("%d store replies outside the fence's protocol (no final store read, so no audit stream)", len(p.storeMalformed))
			cr.setOffending(slices.Clone(p.storeMalformed), maxOffending, p.runEnd())
			return cr
		}
		cr.Verdict, cr.Message = Unknown, "no final store read, so no audit stream"
		return cr
	}
	bad := append(slices.Clone(p.auditIssues), p.storeMalformed...)
	if p.auditComplete {
		// The record holds the last accepted commit's cursor and the last accepted token,
		// a write's (one whose body failed included: its token stands) or a commit's.
		cur, tok, seen := opts.InitialCursor, opts.InitialToken, false
		for ai := range st.AuditLen() {
			a := st.AuditAt(ai)
			switch {
			case a.Kind == history.KindWrite && (a.Result == "ok" || a.Result == history.AuditBodyFailed):
				tok, seen = a.Token, true
			case a.Kind != history.KindWrite && a.Result == "ok":
				cur, tok, seen = a.To, a.Token, true
			}
		}
		if seen && (st.Cursor != cur || st.MaxToken != tok) {
			bad = append(bad, finding{p.runEnd(), fmt.Sprintf("the final store holds cursor=%d token=%d, but the audit's accepted entries wrote cursor=%d token=%d last", st.Cursor, st.MaxToken, cur, tok)})
		}
	}
	missing := slices.Clone(p.auditMissing)
	switch {
	case len(bad) > 0 && p.volatile:
		// The missing commits are explained by the truncation: listed, not timed.
		cr.Verdict = Invalid
		cr.Message = auditBadMessage(len(bad), len(p.storeMalformed))
		byTime(missing)
		cr.setOffending(bad, len(bad)+len(missing), p.runEnd())
		cr.Offending = capList(append(cr.Offending, texts(missing, len(missing))...), maxOffending)
	case len(bad) > 0:
		cr.Verdict = Invalid
		cr.Message = auditBadMessage(len(bad), len(p.storeMalformed))
		cr.setOffending(append(bad, missing...), maxOffending, p.runEnd())
	case len(missing) > 0 && p.volatile:
		cr.Verdict = Unknown
		cr.Message = fmt.Sprintf("%d answered commits are missing from the audit stream, which a Redis restart without persistence truncated", len(missing))
		byTime(missing)
		cr.Offending = texts(missing, maxOffending)
	case len(missing) > 0:
		cr.Verdict = Invalid
		cr.Message = fmt.Sprintf("%d answered commits are missing from the audit stream", len(missing))
		cr.setOffending(missing, maxOffending, p.runEnd())
	default:
		cr.Message = fmt.Sprintf("%d audit entries agree with the %d recorded commits; %d unknown outcomes resolved", st.AuditLen(), p.counts.Commits, p.counts.ResolvedByAudit)
	}
	return cr
}
