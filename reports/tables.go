package reports

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/history"
)

// table is one table of the report, independent of how it is rendered.
type table struct {
	// ID is the HTML anchor; Title the heading; Intro one sentence under it.
	ID, Title, Intro string
	Header           []string
	// Right marks the columns that hold numbers (right-aligned).
	Right []bool
	Rows  [][]string
	// Empty is shown instead of the table when it has no rows.
	Empty string
	// More counts the rows left out: of a long list, the table shows the first and the
	// last rows with a "… N more" row between them. Rest names the file that lists
	// them all ("" if none does).
	More int
	Rest string
}

// MoreNote says how many rows the table leaves out and where they are.
func (t table) MoreNote() string {
	if t.Rest == "" {
		return fmt.Sprintf("… and %d more, not listed (the histories have them).", t.More)
	}
	return fmt.Sprintf("… and %d more (see %s).", t.More, t.Rest)
}

// Caps on the rows of the long tables: the first and the last maxChangeRows leader
// changes are shown, and so on. results.json lists more (see Options.ListLimit).
const (
	maxChangeRows    = 25
	maxRejectionRows = 25
	maxFaultRows     = 30
	maxOverlapRows   = 10
)

// headTailRows adds to t the rows row(i) of the first n and the last n of total items,
// with a "… N more" row between them when it leaves some out, and sets t.More and
// t.Rest.
func (v *view) headTailRows(t *table, total, n int, row func(i int) []string) {
	if total <= 2*n {
		for i := range total {
			t.Rows = append(t.Rows, row(i))
		}
		return
	}
	for i := range n {
		t.Rows = append(t.Rows, row(i))
	}
	t.More = total - 2*n
	gap := make([]string, len(t.Header))
	gap[0] = "…"
	if len(gap) > 1 {
		gap[1] = fmt.Sprintf("%d more", t.More)
	}
	t.Rows = append(t.Rows, gap)
	for i := total - n; i < total; i++ {
		t.Rows = append(t.Rows, row(i))
	}
	t.Rest = v.restIn(total)
}

// restIn names the file that lists every item of a list of total items: results.json
// if it is short enough, else results-full.json.gz if it is written, else "".
func (v *view) restIn(total int) string {
	if v.limit < 0 || total <= 2*v.limit {
		return ResultsFile
	}
	return v.full
}

// tables returns the report's tables in the order every renderer shows them.
func (v *view) tables() []table {
	return []table{
		v.runTable(), v.checksTable(), v.failoverTable(), v.gapTable(), v.throughputTable(), v.changesTable(),
		v.rejectionsTable(), v.faultsTable(), v.overlapsTable(), v.opsTable(),
	}
}

func (v *view) runTable() table {
	in := v.run.Info
	t := table{ID: "run", Title: "Run", Header: []string{"field", "value"}}
	add := func(k, val string) { t.Rows = append(t.Rows, []string{k, val}) }
	add("seed", strconv.FormatInt(in.Seed, 10))
	add("workload", orDash(in.Workload))
	add("variant", cmp.Or(in.Variant, "reference"))
	if in.Target != "" {
		fence := "fenced"
		if in.NoFence {
			fence = "no fence"
		}
		add("target", in.Target+" ("+fence+")")
	}
	add("backend", orDash(in.Backend))
	add("nodes", fmt.Sprintf("%d (%s)", len(v.nodes), strings.Join(v.nodes, ", ")))
	add("lease TTL", dur(in.LeaseTTL))
	add("chaos duration", dur(in.Duration))
	nem := strings.Join(in.Nemeses, ", ")
	if nem == "" {
		nem = "none"
	}
	add("faults", nem)
	pers := "append-only file"
	if !in.Persistence {
		pers = "none (tokens may repeat after a Redis restart)"
	}
	add("redis persistence", pers)
	if in.Election != "" {
		add("election", in.Election)
	}
	if in.Start > 0 {
		add("start", time.Unix(0, in.Start).UTC().Format(time.RFC3339Nano))
	}
	add("length", dur(time.Duration(v.end-v.start)))
	if in.HealTime > 0 {
		add("final heal", v.at(in.HealTime))
	}
	if in.Interrupted != "" {
		add("interrupted", in.Interrupted)
	}
	if in.StoppedAtViolation != "" {
		add("stopped at violation", in.StoppedAtViolation)
	}
	for _, k := range sortedKeys(in.Versions) {
		add("version of "+k, in.Versions[k])
	}
	if st := v.run.Store; st != nil {
		add("final store", fmt.Sprintf("cursor %d, highest token %d, token counter %d, %d events in the sink, %d audit entries",
			st.Cursor, st.MaxToken, st.TokenCounter, len(st.Sink), st.AuditLen()))
	} else {
		add("final store", "not read")
	}
	return t
}

func (v *view) checksTable() table {
	t := table{ID: "checks", Title: "Checks", Header: []string{"check", "verdict", "message"},
		Empty: "No check ran."}
	for _, c := range v.res.Checks {
		t.Rows = append(t.Rows, []string{c.Name, verdictMark(c.Verdict), c.Message})
	}
	return t
}

// minSamples is the fewest samples a percentile is shown without a mark: over fewer,
// a nearest-rank percentile is one of a handful of samples (p99 of 2 is the maximum).
const minSamples = 5

// distCells renders a distribution's min, p50, p90, p99 and max. Each percentile over
// fewer than minSamples samples says so, with its n and which sample it is: "1.2s (n=2,
// fewer than 5: the maximum)". The row's windows column is n for the others.
func distCells(d checker.Distribution) []string {
	if d.Count == 0 {
		return []string{"—", "—", "—", "—", "—"}
	}
	return []string{dur(d.Min), pctCell(d.P50, 0.50, d.Count), pctCell(d.P90, 0.90, d.Count), pctCell(d.P99, 0.99, d.Count), dur(d.Max)}
}

// pctCell renders the percentile q of n samples, marked when n < minSamples.
func pctCell(p time.Duration, q float64, n int) string {
	if n >= minSamples {
		return dur(p)
	}
	return fmt.Sprintf("%s (n=%d, fewer than %d: %s)", dur(p), n, minSamples, rankName(q, n))
}

// rankName says which of n sorted samples the nearest-rank percentile q is.
func rankName(q float64, n int) string {
	k := nearestRank(q, n)
	switch {
	case n == 1:
		return "the only sample"
	case k == n:
		return "the maximum"
	case k == 1:
		return "the minimum"
	}
	return fmt.Sprintf("sample %d of %d", k, n)
}

// nearestRank is the 1-based rank of the percentile q of n samples, as
// checker.Summarize takes it: the smallest rank not below q·n.
func nearestRank(q float64, n int) int {
	return min(max(int(math.Ceil(q*float64(n))), 1), n)
}

func (v *view) failoverTable() table {
	t := table{ID: "failover", Title: "Failover windows per fault kind",
		Intro:  "From the fault's injection to the first commit the store accepted under a new token. Only faults that displaced the leader open a window. Percentiles are nearest-rank over the row's windows (n); over fewer than 5 each says which sample it is.",
		Header: []string{"fault", "injected", "windows", "min", "p50", "p90", "p99", "max"},
		Right:  []bool{false, true, true, true, true, true, true, true},
		Empty:  "No fault was injected."}
	for _, f := range v.res.Failover {
		t.Rows = append(t.Rows, append([]string{faultLabel(f.Fault), strconv.Itoa(f.Injected), strconv.Itoa(f.Windows)}, distCells(f.ToNewToken)...))
	}
	return t
}

func (v *view) gapTable() table {
	t := table{ID: "gap", Title: "Commit gap across failovers",
		Intro:  "From the last commit accepted under the old token to the first accepted under the new one: how long the store accepted nothing. Percentiles as above: over the row's windows (n).",
		Header: []string{"fault", "windows", "min", "p50", "p90", "p99", "max"},
		Right:  []bool{false, true, true, true, true, true, true},
		Empty:  "No fault was injected."}
	for _, f := range v.res.Failover {
		t.Rows = append(t.Rows, append([]string{faultLabel(f.Fault), strconv.Itoa(f.Windows)}, distCells(f.Gap)...))
	}
	return t
}

func (v *view) throughputTable() table {
	t := table{ID: "throughput", Title: "Commit throughput",
		Intro: fmt.Sprintf("Events the store accepted per second: in the fault-free warm-up (after the first catch-up, until the first fault) and in the chaos phase outside every fault window (a fault's injection to one lease TTL after its heal). Flagged, not judged, below half the warm-up's or half the source's rate (%s).",
			rateText(v.sourceRate())),
		Header: []string{"span", "time", "events", "events/s", "terms started", "of the warm-up"},
		Right:  []bool{false, true, true, true, true, true},
		Empty:  "Not measured: no fault-free warm-up with commits, or no final heal."}
	tp := v.res.Throughput
	if tp == nil {
		return t
	}
	ratio := "—"
	if r, ok := tp.Ratio(); ok {
		ratio = fmt.Sprintf("%.0f%%", 100*r)
	}
	t.Rows = [][]string{
		{"warm-up", dur(tp.Warmup), strconv.FormatInt(tp.WarmupEvents, 10), fmt.Sprintf("%.0f", tp.WarmupRate()), "—", "100%"},
		{"outside fault windows", dur(tp.Outside), strconv.FormatInt(tp.OutsideEvents, 10), fmt.Sprintf("%.0f", tp.OutsideRate()), strconv.Itoa(tp.OutsideTerms), ratio},
	}
	return t
}

func (v *view) sourceRate() float64 {
	if tp := v.res.Throughput; tp != nil {
		return tp.SourceRate
	}
	return v.run.Info.SourceRate
}

func rateText(r float64) string {
	if r <= 0 {
		return "the source's rate is not recorded"
	}
	return fmt.Sprintf("the source produces %.0f events/s", r)
}

func (v *view) changesTable() table {
	t := table{ID: "leader-changes", Title: "Leader changes",
		Intro: fmt.Sprintf("%d leader changes: the store accepted a commit under a token higher than every token before it.",
			v.res.LeaderChanges),
		Header: []string{"#", "at", "from", "to", "commit gap", "fault", "fault → new token"},
		Right:  []bool{true, true, false, false, true, false, true},
		Empty:  "The store never changed leader."}
	v.headTailRows(&t, len(v.changes), maxChangeRows, func(i int) []string {
		c := v.changes[i]
		fault, to := v.changeCause(c), "—"
		if w := c.Window; w != nil {
			to = dur(w.ToNewToken)
		}
		return []string{strconv.Itoa(i + 1), v.at(c.At),
			fmt.Sprintf("%s (token %d)", c.OldNode, c.OldToken), fmt.Sprintf("%s (token %d)", c.NewNode, c.NewToken),
			dur(time.Duration(c.At - c.LastOld)), fault, to}
	})
	return t
}

func (v *view) rejectionsTable() table {
	t := table{ID: "fencing-rejections", Title: "Fencing rejections",
		Intro: fmt.Sprintf("%d commits rejected for a stale token, %d for a cursor conflict. A rejection is the fence doing its job: a deposed leader tried to write.",
			v.res.FencingRejections, v.res.CursorConflicts),
		Header: []string{"at", "node", "op", "token", "write", "store's token", "known from"},
		Right:  []bool{true, false, false, true, false, true, false},
		Empty:  "No commit was rejected for a stale token."}
	v.headTailRows(&t, len(v.rejections), maxRejectionRows, func(i int) []string {
		r := v.rejections[i]
		storeTok := "—"
		if r.StoreToken > 0 {
			storeTok = strconv.FormatInt(r.StoreToken, 10)
		}
		known := "the node"
		if r.SeenBy == "audit" {
			known = "audit stream (outcome unknown to the node)"
		}
		return []string{v.at(r.At), r.Node, r.Op, strconv.FormatInt(r.Token, 10),
			fmt.Sprintf("%d→%d", r.From, r.To), storeTok, known}
	})
	return t
}

func (v *view) faultsTable() table {
	t := table{ID: "faults", Title: "Fault schedule",
		Intro:  "Every fault as it was injected and healed (faults.jsonl); times since the start of the run.",
		Header: []string{"#", "at", "fault", "target", "held for", "note"},
		Right:  []bool{true, true, false, false, true, false},
		Empty:  "No fault was injected."}
	v.headTailRows(&t, len(v.faults), maxFaultRows, func(i int) []string {
		f := v.faults[i]
		var note []string
		if f.Failed {
			note = append(note, "injection failed")
		}
		if f.Heal == 0 {
			note = append(note, "never healed")
		}
		if f.Err != "" {
			note = append(note, f.Err)
		}
		return []string{strconv.Itoa(i + 1), v.at(f.Inject), f.Kind, f.Target, dur(f.held()), strings.Join(note, "; ")}
	})
	return t
}

// topOverlaps returns the longest overlaps, longest first (earliest first among equal
// ones, then in the result's order). It keeps only the n it returns: a long register
// run has hundreds of thousands of overlaps, and sorting a copy of them all cost more
// than the rest of the table.
func (v *view) topOverlaps(n int) []checker.Overlap {
	before := func(a, b *checker.Overlap) bool { // strictly: equal ones keep their order
		return cmp.Or(cmp.Compare(b.Duration, a.Duration), cmp.Compare(a.Start, b.Start)) < 0
	}
	top := make([]checker.Overlap, 0, n+1)
	for i := range v.res.Overlaps {
		o := &v.res.Overlaps[i]
		if len(top) == n && (n == 0 || !before(o, &top[n-1])) {
			continue
		}
		k := len(top)
		for k > 0 && before(o, &top[k-1]) {
			k--
		}
		top = slices.Insert(top, k, *o)
		if len(top) > n {
			top = top[:n]
		}
	}
	return top
}

func (v *view) overlapsTable() table {
	var total time.Duration
	for _, o := range v.res.Overlaps {
		total += o.Duration
	}
	t := table{ID: "overlaps", Title: "Largest leadership overlaps",
		Intro: fmt.Sprintf("%d intervals in which two nodes each believed they led, %s in all. The lease-exclusion check judges each: a pause or clock fault of the first leader, the drift margin or a stall the harness did not inject must explain it.",
			len(v.res.Overlaps), dur(total)),
		Header: []string{"#", "duration", "from", "to", "first leader", "second leader"},
		Right:  []bool{true, true, true, true, false, false},
		Empty:  "No two nodes ever believed they led at the same time."}
	for i, o := range v.topOverlaps(maxOverlapRows) {
		t.Rows = append(t.Rows, []string{strconv.Itoa(i + 1), dur(o.Duration), v.at(o.Start), v.at(o.End),
			fmt.Sprintf("%s (token %d)", o.NodeA, o.TokenA), fmt.Sprintf("%s (token %d)", o.NodeB, o.TokenB)})
	}
	t.More = len(v.res.Overlaps) - len(t.Rows)
	if t.More > 0 {
		t.Rest = v.restIn(len(v.res.Overlaps))
	}
	return t
}

func (v *view) opsTable() table {
	o := v.res.Ops
	fenced := "commits"
	if o.Writes > 0 {
		fenced = "commits and writes"
	}
	t := table{ID: "operations", Title: "Operations",
		Intro: fmt.Sprintf("%d operations of the nodes (an invoke and its completion); %d %s of unknown outcome, %d of them resolved by the audit stream.",
			o.Total, o.UnknownCommits, fenced, o.ResolvedByAudit),
		Header: []string{"operation", "total", "ok", "fail", "unknown"},
		Right:  []bool{false, true, true, true, true},
		Empty:  "The history holds no operation."}
	counts := v.opCounts
	for _, k := range []history.Kind{history.KindLoad, history.KindCommit, history.KindWrite, history.KindAcquire, history.KindRenew, history.KindRelease} {
		if c := counts[k]; c != nil {
			t.Rows = append(t.Rows, []string{string(k), itoa(c.total), itoa(c.ok), itoa(c.fail), itoa(c.unknown)})
		}
	}
	if c := counts[history.KindStepDown]; c != nil {
		t.Rows = append(t.Rows, []string{string(history.KindStepDown), itoa(c.total), "", "", ""})
	}
	return t
}

func itoa(i int) string { return strconv.Itoa(i) }

func orDash(s string) string { return cmp.Or(s, "—") }

// verdictMark is a verdict with a sign that survives a black-and-white terminal.
func verdictMark(vd checker.Verdict) string {
	switch vd {
	case checker.Valid:
		return "✓ valid"
	case checker.Invalid:
		return "✗ invalid"
	case checker.NotApplicable:
		return "– not applicable"
	}
	return "? " + string(cmp.Or(vd, checker.Unknown))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// changeCause says what caused a leader change, as the checker attributed it.
func (v *view) changeCause(c change) string {
	kind, node, at := "", "", int64(0)
	switch {
	case c.Cause == nil && c.Window != nil: // a result stored before changes were attributed
		kind, node, at = c.Window.Fault, c.Window.FaultNode, c.Window.Injected
	case c.Cause == nil:
		return "none attributed"
	case c.Cause.Cause == checker.CauseFault:
		kind, node, at = c.Cause.Fault, c.Cause.FaultNode, c.Cause.FaultAt
	case c.Cause.Cause == checker.CauseStall:
		return "a stall no fault injected"
	case c.Cause.Cause == checker.CauseAfterHeal:
		return "after the final heal"
	default:
		return "none: unexplained"
	}
	s := faultLabel(kind)
	if node != "" {
		s += " on " + node
	}
	return s + " at " + v.at(at)
}
