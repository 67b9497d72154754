package checker

import (
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fenceline/fenceline/history"
)

// ErrBadHistory is returned (wrapped, with a message naming the problem) when a run's
// history is malformed or inconsistent, for example a completion without an invoke.
var ErrBadHistory = errors.New("checker: bad history")

// never is the return time of an operation that never completed.
const never = math.MaxInt64

type opKind uint8

const (
	kLoad opKind = iota
	kCommit
	kWrite // a fenced write that moves no cursor: only its token is recorded
)

// outcome is what a store operation returned.
type outcome uint8

const (
	outOK        outcome = iota // commit accepted, or load returned (cursor, token)
	outStale                    // commit rejected: stale token
	outConflict                 // commit rejected: cursor conflict
	outOtherFail                // failed for another reason: certainly did not happen
	outUnknown                  // info, or no completion at all
)

// resolution is what the audit stream says about an operation of unknown outcome.
type resolution uint8

const (
	resNone     resolution = iota // not resolved
	resApplied                    // the audit shows it accepted
	resRejected                   // the audit shows it rejected
	resAbsent                     // absent from a complete audit: it never reached the store
)

// op is a store operation (load, commit or write): an invoke and its completion.
type op struct {
	call, ret int64 // ret is never when there was no completion
	token     int64 // commit, write: the writer's token
	a, b      int64 // commit: from, to; ok load: cursor, token; write: 0, 0
	ev        int32 // index of the invoke event in parsed.evs
	done      int32 // index of the completion event, -1 if none
	node      int32
	audit     int32 // commit: its first entry in the audit stream, -1 if none (see resolve)
	kind      opKind
	out       outcome
	res       resolution
	final     bool // the final store read, not a recorded operation
	bodyErr   bool // an ok write whose body failed after the token check (history.ErrBodyFailed)
}

// elOp is an election operation: acquire, renew or release.
type elOp struct {
	kind      history.Kind
	node      int32
	call, ret int64
	typ       history.Type // completion type; Info if there was none
	token     int64
	ev        int32
	malformed string // why the reply broke its protocol: a malformed reply, or a refusal the run did not ask for
	notHeld   bool   // completed fail with not-held: the server answered that the lock is not the caller's
}

type stepDown struct {
	node   int32
	time   int64
	token  int64
	reason string
	id     string
	lease  int64 // the lease the term counted on (history.Event.Lease); 0 if not said
}

type fault struct {
	id, kind, node string
	inject, heal   int64 // heal 0: never healed
	failed         bool  // the injection was recorded as failed
	// inEffectFrom..inEffectTo: when the fault was surely in effect throughout
	// (history.Event.InEffectFrom); 0 when the harness did not know.
	inEffectFrom, inEffectTo int64
}

// parsed is a run turned into operations.
type parsed struct {
	run       *history.Run
	evs       history.Events
	start     int64
	end       int64 // latest event time
	nodes     []string
	nodeIdx   map[string]int32
	ops       []op // store operations, in invoke order
	el        []elOp
	stepDowns []stepDown
	// takeovers maps a term to the lock value its acquire took over from a holder whose
	// connection had closed (history.ReasonTakeover); absent for an ordinary acquire.
	takeovers map[termKey]string
	// adoptedTakeovers maps a term whose takeover's answer was lost, and which its node
	// adopted (the adoption names the takeover), to when that takeover was sent: the
	// call of the node's latest acquire of unknown outcome before the adoption.
	adoptedTakeovers map[termKey]int64
	faults           []fault
	counts           OpCounts

	// audit
	auditComplete bool
	volatile      bool      // a Redis restart without persistence happened
	auditIssues   []finding // contradictions between the histories and the audit
	// storeMalformed are the store operations answered outside the fence's protocol
	// (history.ErrMalformedReply): the store's side broke it, whatever the audit says.
	storeMalformed []finding
	auditMissing   []finding // acknowledged commits missing from the audit

	byRet          []int32          // see okByRet
	byRetOnce      sync.Once        // makes byRet
	commitByID     map[string]int32 // see commitTime
	commitByIDOnce sync.Once        // makes commitByID
}

func badf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadHistory}, args...)...)
}

func sortedByTime(evs []history.Event) []history.Event {
	if slices.IsSortedFunc(evs, func(a, b history.Event) int { return cmpInt(a.Time, b.Time) }) {
		return evs
	}
	c := slices.Clone(evs)
	history.SortByTime(c)
	return c
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// parse turns run into operations and resolves unknown commits from the audit stream.
func parse(run *history.Run) (*parsed, error) {
	p := &parsed{run: run, evs: run.Events.SortByTime(), nodeIdx: map[string]int32{}}
	// The audit's index (a long run's largest map) is built on another core while the
	// events are walked here.
	var (
		audit *auditIndex
		dups  [][2]int32
		wg    sync.WaitGroup
	)
	defer wg.Wait()
	if st := run.Store; st != nil {
		wg.Go(func() { audit, dups = indexAudit(st) })
	}
	if err := run.Info.Validate(); err != nil {
		return nil, badf("%v", err)
	}
	for _, n := range run.Info.Nodes {
		p.node(n)
	}
	p.start = run.Info.Start
	if p.start == 0 && p.evs.Len() > 0 {
		p.start = p.evs.Time(0)
	}
	p.end = p.start // with no event at all, the run ends where it starts
	if err := p.parseFaults(run.Faults, "faults"); err != nil {
		return nil, err
	}
	type pend struct {
		el  bool
		idx int32
	}
	nops, nel := 1, 0 // one more op for the final store read
	for i := range p.evs.Len() {
		if p.evs.Type(i) == history.Invoke {
			switch p.evs.Kind(i) {
			case history.KindLoad, history.KindCommit, history.KindWrite:
				nops++
			case history.KindAcquire, history.KindRenew, history.KindRelease:
				nel++
			}
		}
	}
	p.ops, p.el = make([]op, 0, nops), make([]elOp, 0, nel)
	pending := map[string]pend{}
	lostAcquire := map[int32]int64{} // node: the call of its latest acquire of unknown outcome
	var faultEvs []history.Event
	for i := range p.evs.Len() {
		e := p.evs.At(i)
		if err := e.Validate(); err != nil {
			return nil, badf("event %d (id %q)%s: %v", i, e.ID, p.where(e.ID), err)
		}
		p.end = max(p.end, e.Time)
		switch e.Kind {
		case history.KindFault:
			faultEvs = append(faultEvs, e)
			continue
		case history.KindStepDown:
			p.stepDowns = append(p.stepDowns, stepDown{node: p.node(e.Node), time: e.Time, token: e.Token, reason: e.Reason, id: e.ID, lease: e.Lease})
			p.counts.StepDowns++
			continue
		}
		if e.Type == history.Invoke {
			if _, dup := pending[e.ID]; dup {
				return nil, badf("%s %s invoked twice with id %q (second at %s) before completing%s", e.Node, e.Kind, e.ID, p.t(e.Time), p.where(e.ID))
			}
			n := p.node(e.Node)
			switch e.Kind {
			case history.KindLoad, history.KindCommit, history.KindWrite:
				o := op{call: e.Time, ret: never, ev: int32(i), done: -1, node: n, out: outUnknown, audit: -1}
				switch e.Kind {
				case history.KindCommit:
					o.kind, o.token, o.a, o.b = kCommit, e.Token, e.From, e.To
				case history.KindWrite:
					o.kind, o.token = kWrite, e.Token
				}
				pending[e.ID] = pend{idx: int32(len(p.ops))}
				p.ops = append(p.ops, o)
			default:
				pending[e.ID] = pend{el: true, idx: int32(len(p.el))}
				p.el = append(p.el, elOp{kind: e.Kind, node: n, call: e.Time, ret: never, typ: history.Info, token: e.Token, ev: int32(i)})
			}
			continue
		}
		pd, ok := pending[e.ID]
		if !ok {
			return nil, badf("completion without invoke: %s %s %s id %q at %s%s", e.Node, e.Kind, e.Type, e.ID, p.t(e.Time), p.where(e.ID))
		}
		delete(pending, e.ID)
		var inv history.Event
		if pd.el {
			inv = p.evs.At(int(p.el[pd.idx].ev))
		} else {
			inv = p.evs.At(int(p.ops[pd.idx].ev))
		}
		if inv.Kind != e.Kind || inv.Node != e.Node {
			return nil, badf("id %q: invoked as %s %s, completed as %s %s at %s%s", e.ID, inv.Node, inv.Kind, e.Node, e.Kind, p.t(e.Time), p.where(e.ID))
		}
		if pd.el {
			l := &p.el[pd.idx]
			l.ret, l.typ = e.Time, e.Type
			l.notHeld = e.Type == history.Fail && e.Error == history.ErrNotHeld
			if e.Type == history.Info && strings.HasPrefix(e.Error, history.ErrMalformedReply) {
				l.malformed = e.Error
			}
			if e.Type == history.Fail && e.Kind == history.KindAcquire && e.Error == history.ErrNotPresent && !p.run.Info.TakeoverOnDisconnect {
				// The acquire script answers so only when asked to require the node's
				// presence, which only takeover on disconnect does.
				l.malformed = history.ErrNotPresent + " in a run without takeover on disconnect"
			}
			if e.Token != 0 {
				l.token = e.Token
			}
			if e.Kind == history.KindAcquire && e.Type == history.Info {
				lostAcquire[l.node] = l.call
			}
			if from, ok := strings.CutPrefix(e.Reason, history.ReasonTakeover+" "); ok && e.Kind == history.KindAcquire && e.Type == history.OK {
				if p.takeovers == nil {
					p.takeovers = map[termKey]string{}
				}
				k := termKey{l.node, l.token}
				p.takeovers[k] = from
				if sent, lost := lostAcquire[l.node]; lost && inv.Token != 0 {
					if p.adoptedTakeovers == nil {
						p.adoptedTakeovers = map[termKey]int64{}
					}
					p.adoptedTakeovers[k] = sent
				}
			}
			continue
		}
		o := &p.ops[pd.idx]
		o.ret, o.done = e.Time, int32(i)
		switch e.Type {
		case history.OK:
			o.out = outOK
			if o.kind == kLoad {
				o.a, o.b = e.Cursor, e.Token
			}
			o.bodyErr = o.kind == kWrite && e.Error == history.ErrBodyFailed
		case history.Fail:
			o.out = outOtherFail
			if o.kind != kLoad {
				switch e.Error {
				case history.ErrStaleToken:
					o.out = outStale
				case history.ErrCursorConflict:
					o.out = outConflict
				}
			}
		case history.Info:
			o.out = outUnknown
			if strings.HasPrefix(e.Error, history.ErrMalformedReply) {
				p.storeMalformed = append(p.storeMalformed, finding{e.Time, fmt.Sprintf("%s's %s %s at %s was answered outside the fence's protocol (%s)",
					e.Node, e.Kind, e.ID, p.t(e.Time), e.Error)})
			}
			o.ret = never // the outcome may lie anywhere in the future
		}
	}
	if err := p.parseFaults(faultEvs, "histories"); err != nil {
		return nil, err
	}
	slices.SortStableFunc(p.faults, func(a, b fault) int { return cmpInt(a.inject, b.inject) })
	p.count()
	wg.Wait()
	p.resolve(audit, dups)
	return p, nil
}

// where names the file lines of operation id for an error message: " at
// dir/history/n1.jsonl:7, dir/history/n1.jsonl:9", or "" for a run not read from files.
func (p *parsed) where(id string) string {
	if locs := p.run.Locate(id); len(locs) > 0 {
		return " (" + strings.Join(locs, ", ") + ")"
	}
	return ""
}

func (p *parsed) node(name string) int32 {
	if i, ok := p.nodeIdx[name]; ok {
		return i
	}
	i := int32(len(p.nodes))
	p.nodes = append(p.nodes, name)
	p.nodeIdx[name] = i
	return i
}

// parseFaults pairs fault events: invoke = injected, a later ok or info = healed (an
// info right after the invoke says the injection failed, perhaps half way; the harness
// still heals it later).
func (p *parsed) parseFaults(evs []history.Event, where string) error {
	open := map[string]int{}
	for i, e := range sortedByTime(evs) {
		if err := e.Validate(); err != nil {
			return badf("%s: fault event %d (id %q)%s: %v", where, i, e.ID, p.where(e.ID), err)
		}
		if e.Kind != history.KindFault {
			return badf("%s: event %q of kind %s among the faults%s", where, e.ID, e.Kind, p.where(e.ID))
		}
		if e.Type == history.Invoke {
			if _, dup := open[e.ID]; dup {
				return badf("fault %q injected twice%s", e.ID, p.where(e.ID))
			}
			open[e.ID] = len(p.faults)
			p.faults = append(p.faults, fault{id: e.ID, kind: e.Fault, node: e.Node, inject: e.Time})
			continue
		}
		j, ok := open[e.ID]
		if !ok {
			return badf("fault %q (%s on %s) healed at %s but never injected%s", e.ID, e.Fault, e.Node, p.t(e.Time), p.where(e.ID))
		}
		f := &p.faults[j]
		if e.Type == history.Fail {
			f.failed = true
		}
		f.heal = e.Time
		if e.InEffectFrom != 0 && (e.InEffectFrom < f.inject || e.InEffectTo > e.Time) {
			return badf("fault %q (%s on %s): in effect from %s to %s, outside its injection at %s and heal at %s%s",
				e.ID, e.Fault, e.Node, p.t(e.InEffectFrom), p.t(e.InEffectTo), p.t(f.inject), p.t(e.Time), p.where(e.ID))
		}
		f.inEffectFrom, f.inEffectTo = e.InEffectFrom, e.InEffectTo
	}
	return nil
}

func (p *parsed) count() {
	c := &p.counts
	for i := range p.ops {
		o := &p.ops[i]
		switch o.kind {
		case kLoad:
			c.Loads++
		case kCommit:
			c.Commits++
		case kWrite:
			c.Writes++
		}
		switch o.out {
		case outOK:
			c.OK++
		case outUnknown:
			c.Unknown++
			if o.kind != kLoad {
				c.UnknownCommits++
			}
		default:
			c.Fail++
		}
	}
	for _, l := range p.el {
		switch l.kind {
		case history.KindAcquire:
			c.Acquires++
		case history.KindRenew:
			c.Renews++
		case history.KindRelease:
			c.Releases++
		}
		switch l.typ {
		case history.OK:
			c.OK++
		case history.Fail:
			c.Fail++
		default:
			c.Unknown++
		}
	}
	c.Total = len(p.ops) + len(p.el)
	for _, f := range p.faults {
		if !f.failed {
			c.Faults++
		}
	}
}

// resolve matches commits with the audit stream, notes contradictions, and resolves
// unknown outcomes. "Absent from the audit" means "never reached the store" only when
// the audit is complete: the final read happened, no Redis restart without persistence
// could have dropped entries, and every commit a node saw answered is there.
func (p *parsed) resolve(auditOf *auditIndex, dups [][2]int32) {
	st := p.run.Store
	if st == nil {
		return
	}
	for _, f := range p.faults {
		if !f.failed && (f.kind == "redis-restart-volatile" || (strings.HasPrefix(f.kind, "redis-restart") && !p.run.Info.Persistence)) {
			p.volatile = true
		}
	}
	for _, d := range dups {
		j, i := d[0], d[1]
		a := st.AuditAt(int(i))
		p.auditIssues = append(p.auditIssues, finding{p.commitTime(a.Op), fmt.Sprintf("op %s (%s) reached the store twice: audit #%d (%s) and #%d (%s)",
			a.Op, a.Node, j, st.AuditAt(int(j)).Result, i, a.Result)})
	}
	matched := make([]bool, st.AuditLen())
	missing := 0
	// The store's order is nearly the order the commits were invoked in: the entry after
	// the last one matched is tried before the index (a million random lookups in a map
	// that fits no cache). It is the answer exactly when it holds the id and is the
	// first entry that does.
	second := make(map[int32]bool, len(dups))
	for _, d := range dups {
		second[d[1]] = true
	}
	guess := int32(0)
	for i := range p.ops {
		o := &p.ops[i]
		if o.kind == kLoad {
			continue
		}
		id := p.evs.ID(int(o.ev))
		j, found := guess, int(guess) < st.AuditLen() && st.AuditOp(int(guess)) == id && !second[guess]
		if !found {
			j, found = auditOf.get(id)
		}
		if found {
			guess = j + 1
		}
		if !found {
			if o.out == outOK || o.out == outStale || o.out == outConflict {
				missing++
				p.auditMissing = append(p.auditMissing, finding{o.opTime(), fmt.Sprintf("%s: answered, but absent from the audit stream", p.describe(o))})
			}
			continue
		}
		o.audit = j
		if matched[j] {
			p.auditIssues = append(p.auditIssues, finding{o.opTime(), fmt.Sprintf("operation id %s is used by two commits", id)})
			continue
		}
		matched[j] = true
		a := st.AuditAt(int(j))
		if a.Token != o.token || a.From != o.a || a.To != o.b || a.Node != p.nodes[o.node] || (a.Kind == history.KindWrite) != (o.kind == kWrite) {
			p.auditIssues = append(p.auditIssues, finding{o.opTime(), fmt.Sprintf("%s: audit #%d records it as %s", p.describe(o), j, describeAudit(a))})
		}
		want := ""
		switch o.out {
		case outOK:
			want = "ok"
			if o.bodyErr {
				want = history.AuditBodyFailed
			}
		case outStale:
			want = history.ErrStaleToken
		case outConflict:
			want = history.ErrCursorConflict
		case outOtherFail:
			if a.Result == "ok" {
				p.auditIssues = append(p.auditIssues, finding{o.opTime(), fmt.Sprintf("%s: recorded as failed, but audit #%d shows it accepted", p.describe(o), j)})
			}
		}
		if want != "" && a.Result != want {
			p.auditIssues = append(p.auditIssues, finding{o.opTime(), fmt.Sprintf("%s: audit #%d shows %s", p.describe(o), j, a.Result)})
		}
	}
	for j := range st.AuditLen() {
		a := st.AuditAt(j)
		if !matched[j] {
			if k, _ := auditOf.get(a.Op); int(k) != j {
				continue // a second processing, reported above
			}
			p.auditIssues = append(p.auditIssues, finding{0, fmt.Sprintf("audit #%d (op %s, %s: %s) matches no recorded commit or write",
				j, a.Op, describeAudit(a), a.Result)})
		}
	}
	p.auditComplete = !p.volatile && missing == 0
	for i := range p.ops {
		o := &p.ops[i]
		if o.kind == kLoad || o.out != outUnknown {
			continue
		}
		if j := o.audit; j >= 0 {
			if r := st.AuditAt(int(j)).Result; r == "ok" || r == history.AuditBodyFailed {
				o.res = resApplied
			} else {
				o.res = resRejected
			}
		} else if p.auditComplete {
			o.res = resAbsent
		}
		if o.res != resNone {
			p.counts.ResolvedByAudit++
		}
	}
}

// forgetAbsence takes back what absence from the audit stream resolved: the store was
// read while the run went on (Options.NoFinalRead), and a commit in flight then may be
// applied after the read, so its absence proves nothing. A make mutants run stopped a
// reference-equivalent mutant's run at a false linearizability violation this way: a
// commit of unknown outcome, absent from the snapshot, that a later load had seen.
func (p *parsed) forgetAbsence() {
	if !p.auditComplete {
		return
	}
	p.auditComplete = false
	for i := range p.ops {
		if o := &p.ops[i]; o.res == resAbsent {
			o.res = resNone
			p.counts.ResolvedByAudit--
		}
	}
}

// describeAudit says what an audit entry records: "n1 token=3 4→6", or "n1 write
// token=3" for a write that moves no cursor.
func describeAudit(a history.AuditEntry) string {
	if a.Kind == history.KindWrite {
		return fmt.Sprintf("%s write token=%d", a.Node, a.Token)
	}
	return fmt.Sprintf("%s token=%d %d→%d", a.Node, a.Token, a.From, a.To)
}

// t formats a time relative to the run's start.
func (p *parsed) t(ns int64) string {
	if ns == never {
		return "∞"
	}
	return "t+" + time.Duration(ns-p.start).Round(time.Microsecond).String()
}

// describe says what an operation was, for a human.
func (p *parsed) describe(o *op) string {
	if o.final {
		return fmt.Sprintf("final store read: cursor=%d token=%d", o.a, o.b)
	}
	e := p.evs.At(int(o.ev))
	var b strings.Builder
	switch o.kind {
	case kLoad:
		fmt.Fprintf(&b, "%s load %s", e.Node, e.ID)
	case kCommit:
		fmt.Fprintf(&b, "%s commit %s token=%d %d→%d", e.Node, e.ID, o.token, o.a, o.b)
	case kWrite:
		fmt.Fprintf(&b, "%s write %s token=%d", e.Node, e.ID, o.token)
	}
	b.WriteString(": ")
	switch o.out {
	case outOK:
		switch {
		case o.kind == kLoad:
			fmt.Fprintf(&b, "cursor=%d token=%d", o.a, o.b)
		case o.bodyErr:
			b.WriteString("accepted, its body failed")
		default:
			b.WriteString("accepted")
		}
	case outStale:
		b.WriteString("rejected " + history.ErrStaleToken)
	case outConflict:
		b.WriteString("rejected " + history.ErrCursorConflict)
	case outOtherFail:
		b.WriteString("failed")
		if o.done >= 0 && p.evs.At(int(o.done)).Error != "" {
			b.WriteString(" (" + p.evs.At(int(o.done)).Error + ")")
		}
	case outUnknown:
		b.WriteString("unknown")
		if o.done < 0 {
			b.WriteString(" (no completion)")
		}
		switch o.res {
		case resApplied:
			b.WriteString(", audit: accepted")
		case resRejected:
			b.WriteString(", audit: rejected")
		case resAbsent:
			b.WriteString(", audit: never reached the store")
		}
	}
	end := o.ret
	if o.done >= 0 {
		end = p.evs.Time(int(o.done))
	}
	fmt.Fprintf(&b, " [%s, %s]", p.t(o.call), p.t(end))
	return b.String()
}

// indexAudit maps op ids to their first audit entry: a long run's largest map, so it
// lives only while resolve runs, and each commit keeps its entry's index. dups lists
// the entries whose op an earlier entry has, each with that first entry.
func indexAudit(st *history.Store) (x *auditIndex, dups [][2]int32) {
	x = newAuditIndex(st)
	for i := range st.AuditLen() {
		if j, dup := x.add(int32(i)); dup {
			dups = append(dups, [2]int32{j, int32(i)})
		}
	}
	return x, dups
}

// auditIndex finds the first audit entry of an operation id. It is keyed by a seeded
// 64-bit hash of the id: a map of a million fixed-size keys fills and answers several
// times faster than one of strings. Ids whose hash an earlier id already has (never
// seen in practice: the seed is random) are kept by their string.
type auditIndex struct {
	st     *history.Store
	hash   func(string) uint64
	byHash map[uint64]int32
	other  map[string]int32
}

func newAuditIndex(st *history.Store) *auditIndex {
	seed := maphash.MakeSeed()
	return &auditIndex{st: st, hash: func(s string) uint64 { return maphash.String(seed, s) },
		byHash: make(map[uint64]int32, st.AuditLen())}
}

// add indexes audit entry j, unless its op id is already indexed: then it returns the
// entry that holds it, and true.
func (x *auditIndex) add(j int32) (first int32, dup bool) {
	id := x.st.AuditOp(int(j))
	h := x.hash(id)
	k, ok := x.byHash[h]
	switch {
	case !ok:
		x.byHash[h] = j
		return j, false
	case x.st.AuditOp(int(k)) == id:
		return k, true
	}
	if k, ok := x.other[id]; ok {
		return k, true
	}
	if x.other == nil {
		x.other = map[string]int32{}
	}
	x.other[id] = j
	return j, false
}

// get returns the first audit entry of op id.
func (x *auditIndex) get(id string) (int32, bool) {
	if k, ok := x.byHash[x.hash(id)]; ok && x.st.AuditOp(int(k)) == id {
		return k, true
	}
	k, ok := x.other[id]
	return k, ok
}
