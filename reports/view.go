package reports

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/history"
)

// ErrNilInput is returned when a run or a result is missing.
var ErrNilInput = errors.New("reports: nil run or result")

// view is what every renderer shows, derived once from a run and its result. All
// renderers read it, so report.md, index.html, results.json and the terminal summary
// cannot disagree.
type view struct {
	run *history.Run
	res *checker.Result
	// start is the time origin of every relative time; end the end of the timeline.
	start, end int64
	// nodes are the timeline's lanes, in the run's order.
	nodes []string
	// faults are the injected faults paired with their heals, in injection order.
	faults []faultSpan
	// changes are the leader changes as the store saw them, in time order.
	changes []change
	// rejections are the commits the store rejected with a stale token, in time order.
	rejections []rejection
	// commits are the completion times of accepted commits, sorted.
	commits []int64
	// opCounts counts the operations of each kind by outcome (an invoke with no
	// completion is unknown); step-downs count only in total.
	opCounts map[history.Kind]*opCount
	// files are the raw files of the run directory that exist (slash-separated,
	// relative to the run directory), sorted.
	files []string
	// sinkLost and sinkDup count the events of StartCursor+1..cursor missing from the
	// store's sink and its repeated entries (see sinkCounts).
	sinkLost, sinkDup int64
	// limit is the list limit of results.json (-1: none); full is FullResultsFile when
	// it is written, else "" (see setOptions).
	limit int
	full  string
}

// faultSpan is one fault from its injection to its heal.
type faultSpan struct {
	ID, Kind, Target string
	Inject           int64
	// Heal is when the fault was healed; 0 when it never was.
	Heal int64
	// Failed is set when the injection was recorded as failed (it did not happen).
	Failed bool
	// Err is the error recorded by the injection or the heal; Detail what the heal did.
	Err, Detail string
}

// held is how long the fault held, or -1 if it was never healed.
func (f faultSpan) held() time.Duration {
	if f.Heal == 0 {
		return -1
	}
	return time.Duration(f.Heal - f.Inject)
}

// change is a leader change: the first commit accepted under a token higher than every
// token accepted before it.
type change struct {
	At                 int64 // completion of the first commit under NewToken
	LastOld            int64 // completion of the last commit under OldToken
	OldNode, NewNode   string
	OldToken, NewToken int64
	// Window is the failover window the checker attributed to a fault, if any.
	Window *checker.Window
	// Cause is the checker's attribution of the change (the one the
	// unexplained-leader-change check judges); nil in a result stored before the
	// checker attributed changes, where the window's fault stands in.
	Cause *checker.LeaderChange
}

// rejection is a commit the store rejected because its token was stale.
type rejection struct {
	// At is the completion time the node saw, or the invoke time for a commit whose
	// outcome only the audit stream knows.
	At         int64
	Node, Op   string
	Token      int64
	From, To   int64
	StoreToken int64  // highest token the store had accepted before it; 0 if unknown
	SeenBy     string // "node": the node was told; "audit": only the audit stream shows it
}

func newView(run *history.Run, res *checker.Result) (*view, error) {
	if run == nil || res == nil {
		return nil, ErrNilInput
	}
	v := &view{run: run, res: res}
	v.faults = pairFaults(run)
	v.timeBounds()
	v.nodes = slices.Clone(run.Info.Nodes)
	if len(v.nodes) == 0 {
		seen := map[string]bool{}
		for i := range run.Events.Len() {
			if e := run.Events.At(i); e.Kind != history.KindFault && !seen[e.Node] {
				seen[e.Node] = true
				v.nodes = append(v.nodes, e.Node)
			}
		}
		slices.Sort(v.nodes)
	}
	v.storeHistory()
	if st := run.Store; st != nil {
		v.sinkLost, v.sinkDup = sinkCounts(st.Sink, run.Info.StartCursor, st.Cursor)
	}
	v.files = rawFiles(run.Dir)
	v.setOptions(Options{})
	return v, nil
}

// timeBounds sets start and end: the run's own bounds, widened to every recorded time so
// that an interrupted run (no End) still has a timeline.
func (v *view) timeBounds() {
	lo, hi := int64(math.MaxInt64), int64(0)
	see := func(t int64) {
		if t > 0 {
			lo, hi = min(lo, t), max(hi, t)
		}
	}
	for i := range v.run.Events.Len() {
		see(v.run.Events.Time(i))
	}
	for _, f := range v.faults {
		see(f.Inject)
		see(f.Heal)
	}
	for _, t := range v.res.Terms {
		see(t.Start)
		see(t.End)
	}
	v.start = cmp.Or(v.run.Info.Start, v.res.Start)
	if v.start == 0 && lo != math.MaxInt64 {
		v.start = lo
	}
	v.end = max(v.run.Info.End, hi)
	if v.end <= v.start {
		v.end = v.start + int64(time.Second)
	}
}

// pairFaults pairs each fault's injection with its last completion. Faults may be in
// the fault log or, as the checker also accepts, among the nodes' events.
func pairFaults(run *history.Run) []faultSpan {
	evs := slices.Clone(run.Faults)
	for i := range run.Events.Len() {
		if run.Events.Kind(i) == history.KindFault {
			evs = append(evs, run.Events.At(i))
		}
	}
	history.SortByTime(evs)
	idx := map[string]int{}
	var out []faultSpan
	for _, e := range evs {
		if e.Type == history.Invoke {
			idx[e.ID] = len(out)
			out = append(out, faultSpan{ID: e.ID, Kind: e.Fault, Target: e.Node, Inject: e.Time, Detail: e.Reason, Err: e.Error})
			continue
		}
		i, ok := idx[e.ID]
		if !ok {
			continue // a heal without an injection: the checker reports the history as bad
		}
		f := &out[i]
		f.Heal = e.Time
		if e.Type == history.Fail {
			f.Failed = true
		}
		if e.Error != "" {
			f.Err = strings.TrimPrefix(f.Err+"; "+e.Error, "; ")
		}
		if e.Reason != "" {
			f.Detail = e.Reason
		}
	}
	slices.SortStableFunc(out, func(a, b faultSpan) int { return cmp.Compare(a.Inject, b.Inject) })
	return out
}

// opCount counts operations of one kind.
type opCount struct{ total, ok, fail, unknown int }

// storeHistory derives from the history what the result does not list: the leader
// changes, the fencing rejections, the commit times and the operation counts, in one
// pass over the events.
func (v *view) storeHistory() {
	v.opCounts = map[history.Kind]*opCount{}
	count := func(k history.Kind) *opCount {
		c := v.opCounts[k]
		if c == nil {
			c = &opCount{}
			v.opCounts[k] = c
		}
		return c
	}
	// pending holds the operations in flight (a node has few, so the map stays small
	// however long the run); unanswered the commits that never had an ok or a fail.
	pending := map[string]int{}
	unanswered := map[string]history.Event{}
	cur, curNode, lastOld := int64(math.MinInt64), "", int64(0)
	evs := v.run.Events
	v.commits = make([]int64, 0, min(max(v.res.Ops.Commits, 0), evs.Len())) // at most: a long run has a million
	for i := range evs.Len() {
		e := evs.At(i)
		switch {
		case e.Kind == history.KindFault:
			continue
		case e.Kind == history.KindStepDown:
			count(e.Kind).total++
			continue
		case e.Type == history.Invoke:
			pending[e.ID] = i
			count(e.Kind).total++
			continue
		}
		j, ok := pending[e.ID]
		if !ok {
			continue
		}
		delete(pending, e.ID)
		inv := evs.At(j)
		switch e.Type {
		case history.OK:
			count(inv.Kind).ok++
		case history.Fail:
			count(inv.Kind).fail++
		default:
			count(inv.Kind).unknown++
			if inv.Kind == history.KindCommit {
				unanswered[e.ID] = inv
			}
		}
		if e.Kind != history.KindCommit || inv.Kind != history.KindCommit {
			continue
		}
		switch {
		case e.Type == history.OK:
			v.commits = append(v.commits, e.Time)
			switch {
			case inv.Token == cur:
				lastOld = e.Time
			case inv.Token > cur:
				if cur != math.MinInt64 {
					v.changes = append(v.changes, change{At: e.Time, LastOld: lastOld, OldNode: curNode, OldToken: cur,
						NewNode: inv.Node, NewToken: inv.Token})
				}
				cur, curNode, lastOld = inv.Token, inv.Node, e.Time
			}
		case e.Type == history.Fail && e.Error == history.ErrStaleToken:
			v.rejections = append(v.rejections, rejection{At: e.Time, Node: inv.Node, Op: inv.ID, Token: inv.Token,
				From: inv.From, To: inv.To, SeenBy: "node"})
		}
	}
	for id, j := range pending { // no completion: unknown
		inv := evs.At(j)
		count(inv.Kind).unknown++
		if inv.Kind == history.KindCommit {
			unanswered[id] = inv
		}
	}
	// Windows by change, so that a run of 100,000 changes is not quadratic; the first
	// window of a change wins.
	type changeKey struct{ old, new, at int64 }
	windows := make(map[changeKey]*checker.Window, len(v.res.Windows))
	for j := range v.res.Windows {
		w := &v.res.Windows[j]
		if k := (changeKey{w.OldToken, w.NewToken, w.FirstNew}); windows[k] == nil {
			windows[k] = w
		}
	}
	causes := make(map[int64]*checker.LeaderChange, len(v.res.Changes))
	for j := range v.res.Changes {
		causes[v.res.Changes[j].NewToken] = &v.res.Changes[j]
	}
	for i := range v.changes {
		c := &v.changes[i]
		c.Window = windows[changeKey{c.OldToken, c.NewToken, c.At}]
		c.Cause = causes[c.NewToken]
	}
	st := v.run.Store
	if st == nil {
		return
	}
	// The audit stream is the store's own order: the highest token accepted before a
	// rejected attempt is exact there. It also shows rejections the node never heard of.
	storeTok := map[string]int64{}
	maxTok := int64(0)
	for ai := range st.AuditLen() {
		a := st.AuditAt(ai)
		switch a.Result {
		case "ok":
			maxTok = max(maxTok, a.Token)
		case history.ErrStaleToken:
			if _, dup := storeTok[a.Op]; !dup {
				storeTok[a.Op] = maxTok
			}
			if inv, ok := unanswered[a.Op]; ok {
				v.rejections = append(v.rejections, rejection{At: inv.Time, Node: inv.Node, Op: inv.ID, Token: inv.Token,
					From: inv.From, To: inv.To, SeenBy: "audit"})
			}
		}
	}
	for i := range v.rejections {
		v.rejections[i].StoreToken = storeTok[v.rejections[i].Op]
	}
	slices.SortStableFunc(v.rejections, func(a, b rejection) int { return cmp.Compare(a.At, b.At) })
}

// rawFiles lists the run's own files that exist, for links.
func rawFiles(dir string) []string {
	if dir == "" {
		return nil
	}
	var out []string
	isFile := func(name string) bool {
		st, err := os.Stat(filepath.Join(dir, name))
		return err == nil && !st.IsDir()
	}
	// A record compressed when the run was kept (X.gz) is listed instead of X; when
	// both exist, X is the one that counts (harness.CompressRun).
	for _, name := range []string{history.RunInfoFile, "schedule.json", history.FaultsFile, history.AuditFile, history.StoreFile} {
		switch {
		case isFile(name):
			out = append(out, name)
		case isFile(name + gzSuffix):
			out = append(out, name+gzSuffix)
		}
	}
	for _, pat := range []string{filepath.Join(history.HistoryDir, "*.jsonl"), filepath.Join(history.HistoryDir, "*.jsonl"+gzSuffix),
		filepath.Join(history.LogsDir, "*.log")} {
		m, _ := filepath.Glob(filepath.Join(dir, pat)) // the pattern is well formed
		for _, f := range m {
			if plain, ok := strings.CutSuffix(f, gzSuffix); ok {
				if st, err := os.Stat(plain); err == nil && !st.IsDir() {
					continue
				}
			}
			if rel, err := filepath.Rel(dir, f); err == nil {
				out = append(out, filepath.ToSlash(rel))
			}
		}
	}
	slices.Sort(out)
	return out
}

// gzSuffix ends the name of a record compressed after the run (history/n1.jsonl.gz).
const gzSuffix = ".gz"

// rel is t relative to the run's start.
func (v *view) rel(t int64) time.Duration { return time.Duration(t - v.start) }

// at formats a time as the checker's messages do: "t+1.234s".
func (v *view) at(t int64) string { return "t+" + dur(v.rel(t)) }

// dur formats a duration for people: milliseconds for anything above one, "—" for a
// negative (unknown) one.
func dur(d time.Duration) string {
	switch {
	case d < 0:
		return "—"
	case d == 0:
		return "0s"
	case d >= time.Millisecond:
		return d.Round(time.Millisecond).String()
	case d >= time.Microsecond:
		return d.Round(time.Microsecond).String()
	}
	return d.String()
}

// failing returns the checks that did not pass: invalid first, then unknown, each in
// the result's order.
func (v *view) failing() []checker.CheckResult {
	var inv, unk []checker.CheckResult
	for _, c := range v.res.Checks {
		switch c.Verdict {
		case checker.Valid, checker.NotApplicable:
		case checker.Invalid:
			c.Offending = shownOffending(c.Offending)
			inv = append(inv, c)
		default:
			c.Offending = shownOffending(c.Offending)
			unk = append(unk, c)
		}
	}
	return append(inv, unk...)
}

// verdict is the run's verdict. A run that was interrupted, or whose result holds no
// check at all, is never a pass.
func (v *view) verdict() checker.Verdict { return Verdict(v.run, v.res) }

// headline says in one sentence what the verdict rests on.
func (v *view) headline() string {
	n := len(v.res.Checks)
	var inv, unk []string
	for _, c := range v.failing() {
		if c.Verdict == checker.Invalid {
			inv = append(inv, c.Name)
		} else {
			unk = append(unk, c.Name)
		}
	}
	var parts []string
	switch {
	case n == 0:
		parts = append(parts, "No check ran.")
	case len(inv) > 0:
		parts = append(parts, fmt.Sprintf("%d of %d checks failed: %s.", len(inv), n, strings.Join(inv, ", ")))
	case len(unk) == 0:
		parts = append(parts, fmt.Sprintf("All %d checks passed.", n))
	}
	if len(unk) > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d checks could not decide: %s.", len(unk), n, strings.Join(unk, ", ")))
	}
	if v.run.Info.Interrupted != "" {
		parts = append(parts, "The run was not completed: "+v.run.Info.Interrupted+".")
	}
	if f := v.run.Info.StoppedAtViolation; f != "" {
		parts = append(parts, "The chaos phase was stopped early, at a violation found while it ran ("+f+").")
		if len(inv) == 0 {
			parts = append(parts, "The complete check did not confirm it: the run is undecided.")
		}
	}
	if i := v.run.Info; i.ShrunkFrom > 0 {
		parts = append(parts, fmt.Sprintf("Shrunk from %d faults to %d (fenceline shrink of %s).", i.ShrunkFrom, i.ShrunkTo, i.ShrunkFromRun))
	}
	return strings.Join(parts, " ")
}

// condition is what a fault does to its target node, for the timeline; "" for faults
// that do not act on one node.
func condition(kind string) string {
	switch {
	case kind == "kill" || kind == "stop":
		return "down"
	case kind == "pause":
		return "paused"
	case strings.HasPrefix(kind, "partition"):
		return "cut off"
	case kind == "delay":
		return "slow"
	case kind == "clock":
		return "clock skewed"
	}
	return ""
}

// isNode reports whether target is one of the lanes.
func (v *view) isNode(target string) bool { return slices.Contains(v.nodes, target) }
