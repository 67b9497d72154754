package reports

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/source"
)

// Boundary values of the start cursor and the token counter: where int32, uint32 and
// float64's exact integers end, and (for tokens) the top of int64.
var (
	boundaryCursors = []int64{0, 9, 1<<31 - 1, 1 << 31, 1 << 32, 1<<53 - 1000, 1 << 53}
	boundaryTokens  = []int64{0, 1 << 31, 1 << 32, 1 << 53, math.MaxInt64 - 1000}
)

// genRun is one generated run: how it was made and what its store was made to hold.
type genRun struct {
	seed               uint64
	fenced             bool
	startTok, startCur int64
	// damage is done to the final sink after the run: "" none, "lose" drops an event,
	// "duplicate" applies one twice, "both" does both.
	damage string
}

func (g genRun) String() string {
	return fmt.Sprintf("seed %d fenced %v start token %d cursor %d damage %q", g.seed, g.fenced, g.startTok, g.startCur, g.damage)
}

// genPlan draws a fault schedule: faults of random kinds at random times, apart enough
// that each heals before the next.
func genPlan(rng *rand.Rand) []simFault {
	kinds := []string{"pause", "kill", "stop", "partition-reset", "partition-blackhole", "delay", "clock", "redis-restart"}
	var plan []simFault
	for at := int64(3000) + rng.Int64N(2000); at < 37000; at += 4500 + rng.Int64N(2500) {
		k := kinds[rng.IntN(len(kinds))]
		target := "leader"
		switch {
		case k == "redis-restart":
			target = "redis"
		case rng.IntN(4) == 0:
			target = fmt.Sprintf("n%d", 1+rng.IntN(3))
		}
		hold := 1000 + rng.Int64N(3000)
		if k == "redis-restart" {
			hold = 200 + rng.Int64N(400)
		}
		plan = append(plan, simFault{at: at, kind: k, target: target, hold: hold})
	}
	return plan
}

// generate simulates g, writes its run directory under dir and checks it with the real
// checker as a chaos run is checked (the start cursor is the initial cursor).
func (g genRun) generate(t *testing.T, dir string) (*history.Run, *checker.Result) {
	t.Helper()
	s := newSimFrom(g.seed, g.fenced, g.startTok, g.startCur)
	s.plan = genPlan(rand.New(rand.NewPCG(g.seed, 11)))
	s.play()
	if g.damage == "lose" || g.damage == "both" {
		if len(s.sink) > 3 {
			s.sink = slices.Delete(s.sink, 2, 3)
		}
	}
	if g.damage == "duplicate" || g.damage == "both" {
		if len(s.sink) > 0 {
			s.sink = slices.Insert(s.sink, 1, s.sink[0])
		}
	}
	variant := "reference"
	if !g.fenced {
		variant = "no-fence"
	}
	if err := s.write(dir, variant); err != nil {
		t.Fatal(err)
	}
	run, err := history.LoadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	start := run.Info.StartCursor
	res, err := checker.Check(context.Background(), run, checker.Options{OutDir: dir, InitialCursor: start,
		ExpectedBalances: func(upTo int64) map[string]int64 { return source.BalancesBetween(start, upTo) }})
	if err != nil {
		t.Fatal(err)
	}
	return run, res
}

// genRuns draws the runs of the property test: every boundary start at least once,
// fenced and not, with and without damage to the sink.
func genRuns(n int) []genRun {
	rng := rand.New(rand.NewPCG(22, 4))
	damages := []string{"", "", "lose", "duplicate", "both"}
	var out []genRun
	for i := range n {
		g := genRun{seed: rng.Uint64(), fenced: i%4 != 3,
			startCur: boundaryCursors[i%len(boundaryCursors)], startTok: boundaryTokens[i%len(boundaryTokens)],
			damage: damages[rng.IntN(len(damages))]}
		if i >= len(boundaryCursors)*2 { // then anywhere, boundaries included
			g.startCur = rng.Int64N(1 << 53)
			if rng.IntN(2) == 0 {
				g.startCur = boundaryCursors[rng.IntN(len(boundaryCursors))]
			}
		}
		out = append(out, g)
	}
	return out
}

// wantSinkCounts counts, without sinkCounts, the events start+1..cursor missing from
// the sink and the sink entries among them that repeat an earlier one.
func wantSinkCounts(st *history.Store, start int64) (lost, dup int64) {
	seen := map[int64]bool{}
	for _, id := range st.Sink {
		if id > start && id <= st.Cursor && seen[id] {
			dup++
		}
		seen[id] = true
	}
	for e := start + 1; e <= st.Cursor && e > start; e++ {
		if !seen[e] {
			lost++
		}
	}
	return lost, dup
}

// appliedThrice reports whether an event appears three times or more in the sink.
func appliedThrice(st *history.Store) bool {
	n := map[int64]int{}
	for _, id := range st.Sink {
		if n[id]++; n[id] >= 3 {
			return true
		}
	}
	return false
}

// mdTable returns the rows of the Markdown table under the heading title, as maps from
// column name to cell.
func mdTable(t *testing.T, md, title string) []map[string]string {
	t.Helper()
	i := strings.Index(md, "\n## "+title+"\n")
	if i < 0 {
		t.Fatalf("report.md has no section %q", title)
	}
	sec, _, _ := strings.Cut(md[i+len(title)+5:], "\n## ")
	var header []string
	var rows []map[string]string
	for line := range strings.Lines(sec) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for k := range cells {
			cells[k] = strings.TrimSpace(cells[k])
		}
		switch {
		case header == nil:
			header = cells
		case strings.HasPrefix(cells[0], ":-") || strings.HasPrefix(cells[0], "-"):
		default:
			row := map[string]string{}
			for k, h := range header {
				if k < len(cells) {
					row[h] = cells[k]
				}
			}
			rows = append(rows, row)
		}
	}
	return rows
}

var exactlyOnceLost = regexp.MustCompile(`: (\d+) lost, (\d+) duplicated`)

// TestReportsAgreeWithTheHistory is a property test over generated runs: random seeds,
// fault schedules, start cursors and start tokens (boundary values among them), fenced
// and not, some with a sink damaged after the run. Each is checked by the real checker
// and rendered; results.json, report.md and junit.xml must agree with the history and
// with the verdicts.
func TestReportsAgreeWithTheHistory(t *testing.T) {
	n := 20
	if testing.Short() {
		n = 8
	}
	for i, g := range genRuns(n) {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			dir := t.TempDir()
			run, res := g.generate(t, dir)
			t.Log(g)
			checkAgreement(t, run, res)
		})
	}
}

// checkAgreement renders run and res and holds the figures of results.json, report.md
// and junit.xml to the history and the verdicts.
func checkAgreement(t *testing.T, run *history.Run, res *checker.Result) {
	t.Helper()
	rj, md, ju := render(t, WriteResults, run, res), render(t, Markdown, run, res), render(t, JUnit, run, res)
	var r Results
	if err := json.Unmarshal(rj, &r); err != nil {
		t.Fatal(err)
	}
	start := run.Info.StartCursor

	// The verdicts: the run's and each check's, in the checker's order.
	if r.Verdict != Verdict(run, res) || len(r.Checks) != len(res.Checks) {
		t.Fatalf("results.json: verdict %s with %d checks; the checker: %s with %d", r.Verdict, len(r.Checks), res.Verdict, len(res.Checks))
	}
	for i, c := range r.Checks {
		cr := res.Checks[i]
		if c.Name != cr.Name || c.Verdict != cr.Verdict {
			t.Errorf("check %d: %s %s, the checker's %s %s", i, c.Name, c.Verdict, cr.Name, cr.Verdict)
		}
		// The checker dates every violation; results.json carries the date.
		switch {
		case cr.Verdict == checker.Invalid && cr.FirstViolation == 0:
			t.Errorf("%s: invalid, and the checker gives no first violation", cr.Name)
		case cr.Verdict == checker.Invalid && (c.FirstViolationAtNS == nil || int64(*c.FirstViolationAtNS) != cr.FirstViolation-run.Info.Start):
			t.Errorf("%s: first_violation_at_ns %v, the checker's %d", c.Name, c.FirstViolationAtNS, cr.FirstViolation-run.Info.Start)
		case cr.Verdict != checker.Invalid && c.FirstViolationAtNS != nil:
			t.Errorf("%s: %s with a first violation at %v", c.Name, c.Verdict, *c.FirstViolationAtNS)
		}
	}
	if fv, ok := res.FirstViolation(); ok != (r.FirstViolation != nil) ||
		ok && (r.FirstViolation.Check != fv.Check || r.FirstViolation.AtNS == nil || int64(*r.FirstViolation.AtNS) != fv.Time-run.Info.Start) {
		t.Errorf("first_violation %+v, the checker's %+v (%v)", r.FirstViolation, fv, ok)
	}

	// Lost and duplicated events count from the start cursor; exactly-once valid
	// implies none of either.
	if r.Store == nil {
		t.Fatal("results.json has no store")
	}
	lost, dup := wantSinkCounts(run.Store, start)
	if int64(r.Store.SinkLost) != lost || int64(r.Store.SinkDuplicated) != dup {
		t.Errorf("store: %d lost, %d duplicated; the sink (start cursor %d, cursor %d) has %d lost, %d duplicated",
			r.Store.SinkLost, r.Store.SinkDuplicated, start, run.Store.Cursor, lost, dup)
	}
	eo := res.Check(checker.CheckExactlyOnce)
	if eo == nil {
		t.Fatal("no exactly-once check")
	}
	if eo.Verdict == checker.Valid && (r.Store.SinkLost != 0 || r.Store.SinkDuplicated != 0) {
		t.Errorf("exactly-once is valid, and results.json says %d events lost, %d duplicated", r.Store.SinkLost, r.Store.SinkDuplicated)
	}
	if (lost > 0 || dup > 0) && eo.Verdict != checker.Invalid {
		t.Errorf("the sink lost %d and repeated %d events, and exactly-once is %s", lost, dup, eo.Verdict)
	}
	if m := exactlyOnceLost.FindStringSubmatch(eo.Message); m != nil {
		if m[1] != strconv.FormatInt(int64(r.Store.SinkLost), 10) {
			t.Errorf("exactly-once says %s lost, results.json %d", m[1], r.Store.SinkLost)
		}
		// The check counts events applied more than once; results.json the repeats,
		// which are as many unless an event was applied three times.
		if m[2] != strconv.FormatInt(int64(r.Store.SinkDuplicated), 10) && !appliedThrice(run.Store) {
			t.Errorf("exactly-once says %s duplicated, results.json %d", m[2], r.Store.SinkDuplicated)
		}
	}

	// Failover windows per fault kind: results.json, report.md's table and the
	// windows listed agree.
	rows := mdTable(t, string(md), "Failover windows per fault kind")
	if len(rows) != len(r.Failover) {
		t.Errorf("report.md's failover table has %d rows, results.json %d fault kinds", len(rows), len(r.Failover))
	}
	perKind := map[string]int{}
	for _, w := range res.Windows {
		perKind[w.Fault]++
	}
	for i, f := range r.Failover {
		if i >= len(rows) {
			break
		}
		row := rows[i]
		if row["fault"] != mdText(faultLabel(f.Fault)) || row["injected"] != strconv.Itoa(f.Injected) || row["windows"] != strconv.Itoa(f.Windows) {
			t.Errorf("report.md's failover row %v; results.json %s: %d injected, %d windows", row, f.Fault, f.Injected, f.Windows)
		}
		if f.ToNewToken.Count != f.Windows || f.Gap.Count != f.Windows || perKind[f.Fault] != f.Windows {
			t.Errorf("%s: %d windows, distributions over %d and %d, %d windows listed", f.Fault, f.Windows, f.ToNewToken.Count, f.Gap.Count, perKind[f.Fault])
		}
		// Each percentile carries its n: beside it in results.json, in the cell when
		// it rests on fewer than 5 windows.
		if f.ToNewToken.N != f.Windows || f.Gap.N != f.Windows || f.ToNewToken.FewSamples != (f.Windows > 0 && f.Windows < minSamples) {
			t.Errorf("%s: n %d and %d (fewer than 5: %v) for %d windows", f.Fault, f.ToNewToken.N, f.Gap.N, f.ToNewToken.FewSamples, f.Windows)
		}
		for _, col := range []string{"p50", "p90", "p99"} {
			marked := strings.Contains(row[col], fmt.Sprintf("(n=%d, fewer than 5", f.Windows))
			if marked != f.ToNewToken.FewSamples {
				t.Errorf("%s: report.md's %s cell %q for %d windows", f.Fault, col, row[col], f.Windows)
			}
		}
	}

	// Leader changes: the checker's count, listed in full, one per term that the store
	// accepted commits from, but the first. Where the fence held (no stale write was
	// accepted) that is every committing term minus one; where it did not, a stale
	// term's commits change no leader, so there are at most that many.
	committing := 0
	for _, tm := range res.Terms {
		if tm.Commits > 0 {
			committing++
		}
	}
	if r.LeaderChanges != res.LeaderChanges || r.Totals.Changes != res.LeaderChanges {
		t.Errorf("leader changes %d (listed %d), the checker's %d", r.LeaderChanges, r.Totals.Changes, res.LeaderChanges)
	}
	if sw := res.Check(checker.CheckStaleWrite); sw != nil && sw.Verdict == checker.Valid {
		if r.LeaderChanges != committing-1 {
			t.Errorf("%d leader changes, %d terms committed: want terms minus one", r.LeaderChanges, committing)
		}
	} else if r.LeaderChanges > max(committing-1, 0) {
		t.Errorf("%d leader changes, more than the %d committing terms minus one", r.LeaderChanges, committing)
	}
	if !strings.Contains(string(md), fmt.Sprintf(" %d leader changes,", r.LeaderChanges)) {
		t.Errorf("report.md does not say %d leader changes", r.LeaderChanges)
	}
	// The report attributes each change as the unexplained-leader-change check does:
	// one function decides both, so a valid check leaves no change unattributed in
	// results.json or report.md, and an invalid one leaves some.
	unattributed := 0
	for _, c := range r.Changes {
		if c.Cause == "" {
			unattributed++
		}
	}
	if uc := res.Check(checker.CheckUnexplainedLeaderChange); uc != nil {
		if (uc.Verdict == checker.Valid) != (unattributed == 0) {
			t.Errorf("unexplained-leader-change is %s, and results.json leaves %d changes unattributed", uc.Verdict, unattributed)
		}
		if strings.Contains(string(md), "none: unexplained") != (unattributed > 0) {
			t.Errorf("report.md's changes table and results.json disagree on unattributed changes (%d)", unattributed)
		}
	}

	// junit.xml: one case per check, failures and errors as the verdicts say.
	var jd junitSuites
	if err := xml.Unmarshal(ju, &jd); err != nil {
		t.Fatalf("junit.xml: %v", err)
	}
	if len(jd.Suites) != 1 {
		t.Fatalf("junit.xml: %d suites", len(jd.Suites))
	}
	s := jd.Suites[0]
	invalid, unknown := 0, 0
	for _, c := range res.Checks {
		switch c.Verdict {
		case checker.Invalid:
			invalid++
		case checker.Valid, checker.NotApplicable:
		default:
			unknown++
		}
	}
	if s.Failures != invalid || jd.Failures != invalid || len(s.Cases) < len(res.Checks) {
		t.Errorf("junit.xml: %d failures in %d cases; %d checks, %d invalid", s.Failures, len(s.Cases), len(res.Checks), invalid)
	}
	if Verdict(run, res) == checker.Valid && s.Failures+s.Errors != 0 || Verdict(run, res) != checker.Valid && s.Failures+s.Errors == 0 {
		t.Errorf("junit.xml: %d failures, %d errors for a %s run", s.Failures, s.Errors, Verdict(run, res))
	}
	props := map[string]string{}
	for _, p := range s.Properties {
		props[p.Name] = p.Value
	}
	if props["leader_changes"] != strconv.Itoa(r.LeaderChanges) || props["verdict"] != string(r.Verdict) {
		t.Errorf("junit.xml properties: leader_changes %q, verdict %q", props["leader_changes"], props["verdict"])
	}
	// The suite's time is the run's length; the failover percentiles and their n, and
	// the Redis-loss finding, are results.json's.
	if want := fmt.Sprintf("%.3f", float64(run.Info.End-run.Info.Start)/1e9); s.Time != want {
		t.Errorf("junit.xml: suite time %s, the run took %s s", s.Time, want)
	}
	for _, f := range r.Failover {
		k := "failover." + f.Fault
		if props[k+".n"] != strconv.Itoa(f.ToNewToken.N) {
			t.Errorf("junit.xml: %s.n %q, results.json %d", k, props[k+".n"], f.ToNewToken.N)
		}
		if f.ToNewToken.N > 0 && (props[k+".p50_ns"] != strconv.FormatInt(int64(f.ToNewToken.P50), 10) || props[k+".p99_ns"] != strconv.FormatInt(int64(f.ToNewToken.P99), 10)) {
			t.Errorf("junit.xml: %s p50 %q p99 %q, results.json %d %d", k, props[k+".p50_ns"], props[k+".p99_ns"], f.ToNewToken.P50, f.ToNewToken.P99)
		}
	}
	if props["redis_lost_acknowledged_writes"] != strconv.FormatBool(r.RedisLostAcknowledgedWrites) {
		t.Errorf("junit.xml: redis_lost_acknowledged_writes %q, results.json %v", props["redis_lost_acknowledged_writes"], r.RedisLostAcknowledgedWrites)
	}
	names := map[string]bool{}
	for _, c := range s.Cases {
		if names[c.Name] || c.Classname != "fenceline."+orDefault(run.Info.Variant, "reference")+".single.redis" {
			t.Errorf("junit.xml: case %q of class %q repeats or is misnamed", c.Name, c.Classname)
		}
		names[c.Name] = true
	}
	if s.Errors < unknown {
		t.Errorf("junit.xml: %d errors for %d undecided checks", s.Errors, unknown)
	}
	// The files Write puts in the run directory: the same, and the HTML page with the
	// way back and the Redis-loss badge exactly where the verdict and finding call for
	// them, and every marked percentile with its n.
	if err := Write(run, res); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		name string
		b    []byte
	}{{ResultsFile, rj}, {MarkdownFile, md}, {JUnitFile, ju}} {
		if !bytes.Equal(readFile(t, filepath.Join(run.Dir, f.name)), f.b) {
			t.Errorf("%s written by Write differs from its renderer's", f.name)
		}
	}
	validateJUnit(t, filepath.Join(run.Dir, JUnitFile))
	page := string(readFile(t, filepath.Join(run.Dir, HTMLFile)))
	failed := r.Verdict != checker.Valid
	replay := "fenceline-chaos chaos --replay " + shellQuote(run.Dir)
	if strings.Contains(page, `id="way-back"`) != failed || strings.Contains(string(md), replay) != failed {
		t.Errorf("a %s run: the way back in index.html %v, in report.md %v", r.Verdict,
			strings.Contains(page, `id="way-back"`), strings.Contains(string(md), replay))
	}
	if strings.Contains(page, `id="redis-loss"`) != r.RedisLostAcknowledgedWrites {
		t.Errorf("index.html's Redis-loss badge: %v, results.json %v", !r.RedisLostAcknowledgedWrites, r.RedisLostAcknowledgedWrites)
	}
	for _, f := range r.Failover {
		if d := f.ToNewToken; d.FewSamples && !strings.Contains(page, ">"+htmlEscape(pctCell(d.P99, 0.99, d.N))+"<") {
			t.Errorf("index.html lacks %s's p99 with its n", f.Fault)
		}
	}
}
