package reports

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/internal/testfiles"
)

// bigRun is a synthetic run of n leader changes: token i's node commits, then the node
// of token i-1 tries a stale commit and is rejected; each change follows a kill, opens
// a window and a term, and overlaps the previous term. The check "no-stale-write"
// names n offending operations.
func bigRun(t testing.TB, n int) (*history.Run, *checker.Result) {
	t.Helper()
	const step = int64(3 * time.Millisecond)
	base := time.Date(2026, 1, 5, 9, 30, 0, 0, time.UTC).UnixNano()
	nodes := []string{"n1", "n2", "n3"}
	node := func(tok int) string { return nodes[tok%len(nodes)] }
	run := &history.Run{Dir: t.TempDir(), Info: history.RunInfo{Seed: 7, Nodes: nodes, Workload: "register",
		Backend: "local", Nemeses: []string{"kill"}, LeaseTTL: time.Second, Duration: time.Duration(int64(n+1) * step),
		Start: base, End: base + int64(n+2)*step, Persistence: true, Election: "big"}}
	res := &checker.Result{Verdict: checker.Invalid, Start: base, LeaderChanges: n - 1, FencingRejections: n - 1}
	evs := make([]history.Event, 0, 4*n)
	for tok := 1; tok <= n; tok++ {
		at := base + int64(tok)*step
		id := fmt.Sprintf("c-%d", tok)
		evs = append(evs,
			history.Event{ID: id, Type: history.Invoke, Kind: history.KindCommit, Node: node(tok), Time: at, Token: int64(tok), From: int64(tok - 1), To: int64(tok)},
			history.Event{ID: id, Type: history.OK, Kind: history.KindCommit, Node: node(tok), Time: at + 1000})
		res.Terms = append(res.Terms, checker.Term{Node: node(tok), Token: int64(tok), Start: at - 500, End: at + step, EndReason: "kill",
			Commits: 1, FirstCommit: at + 1000, LastCommit: at + 1000})
		if tok == 1 {
			continue
		}
		stale := fmt.Sprintf("s-%d", tok)
		evs = append(evs,
			history.Event{ID: stale, Type: history.Invoke, Kind: history.KindCommit, Node: node(tok - 1), Time: at + 2000, Token: int64(tok - 1), From: int64(tok - 1), To: int64(tok)},
			history.Event{ID: stale, Type: history.Fail, Kind: history.KindCommit, Node: node(tok - 1), Time: at + 3000, Error: history.ErrStaleToken})
		fid := fmt.Sprintf("f-%d", tok)
		run.Faults = append(run.Faults,
			history.Event{ID: fid, Type: history.Invoke, Kind: history.KindFault, Fault: "kill", Node: node(tok - 1), Time: at - 1000},
			history.Event{ID: fid, Type: history.OK, Kind: history.KindFault, Fault: "kill", Node: node(tok - 1), Time: at + 500})
		res.Windows = append(res.Windows, checker.Window{Fault: "kill", FaultNode: node(tok - 1), Injected: at - 1000,
			OldNode: node(tok - 1), OldToken: int64(tok - 1), NewNode: node(tok), NewToken: int64(tok),
			LastOld: at - step + 1000, FirstNew: at + 1000, ToNewToken: 2000, Gap: time.Duration(step)})
		res.Overlaps = append(res.Overlaps, checker.Overlap{NodeA: node(tok - 1), TokenA: int64(tok - 1), NodeB: node(tok), TokenB: int64(tok),
			Start: at - 500, End: at, Duration: 500})
	}
	run.Events = history.Pack(evs)
	offending := make([]string, n)
	for i := range offending {
		offending[i] = fmt.Sprintf("audit #%d: n1 op s-%d accepted with token %d after a higher one", i, i, i)
	}
	res.Checks = []checker.CheckResult{
		{Name: checker.CheckStaleWrite, Verdict: checker.Invalid, Message: "many stale writes", Offending: offending},
		{Name: checker.CheckUniqueTokens, Verdict: checker.Valid, Message: "fine"},
	}
	res.Failover = []checker.FailoverStats{{Fault: "kill", Injected: n - 1, Windows: n - 1}}
	return run, res
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

func readResults(t testing.TB, path string) *Results {
	t.Helper()
	var r Results
	if err := json.Unmarshal(readFile(t, path), &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// listLens are the lengths of the long lists of r, in ListCounts' shape.
func listLens(r *Results) ListCounts {
	c := ListCounts{Windows: len(r.Windows), Changes: len(r.Changes), Rejections: len(r.Rejections),
		Terms: len(r.Terms), Overlaps: len(r.Overlaps), Faults: len(r.Faults)}
	for _, ch := range r.Checks {
		c.Offending += len(ch.Offending)
	}
	return c
}

func plus(a, b ListCounts) ListCounts {
	return ListCounts{a.Windows + b.Windows, a.Changes + b.Changes, a.Rejections + b.Rejections,
		a.Terms + b.Terms, a.Overlaps + b.Overlaps, a.Faults + b.Faults, a.Offending + b.Offending}
}

// TestReportsOfALongRunAreBounded: 100,000 leader changes and as many rejections give
// a results.json of at most 1 MB whose totals are the full counts, with the first and
// last items of each list; report.md and index.html stay bounded too. (The complete
// lists are left out here because compressing 10 MB under the race detector takes
// minutes; TestFullResults checks them.)
func TestReportsOfALongRunAreBounded(t *testing.T) {
	const n = 100_000
	run, res := bigRun(t, n)
	if err := WriteWithOptions(run, res, Options{NoFullResults: true}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(run.Dir, ResultsFile)
	if size := fileSize(t, path); size > 1<<20 {
		t.Errorf("results.json is %d bytes, more than 1 MB", size)
	}
	r := readResults(t, path)
	want := ListCounts{Windows: n - 1, Changes: n - 1, Rejections: n - 1, Terms: n, Overlaps: n - 1, Faults: n - 1, Offending: n}
	if r.Totals != want {
		t.Errorf("totals %+v, want %+v", r.Totals, want)
	}
	if r.LeaderChanges != n-1 || r.FencingRejections != n-1 {
		t.Errorf("leader changes %d, fencing rejections %d, want %d", r.LeaderChanges, r.FencingRejections, n-1)
	}
	if got := plus(listLens(r), r.Omitted); got != r.Totals {
		t.Errorf("listed + omitted = %+v, not the totals %+v", got, r.Totals)
	}
	if r.ListLimit != DefaultListLimit || len(r.Changes) != 2*DefaultListLimit || r.Checks[0].OffendingOmitted != n-2*DefaultListLimit {
		t.Errorf("limit %d, %d changes listed, %d offending omitted", r.ListLimit, len(r.Changes), r.Checks[0].OffendingOmitted)
	}
	if first, last := r.Changes[0], r.Changes[len(r.Changes)-1]; first.NewToken != 2 || last.NewToken != n {
		t.Errorf("changes listed run from token %d to %d, want the first (2) and the last (%d)", first.NewToken, last.NewToken, n)
	}
	if first, last := r.Rejections[0], r.Rejections[len(r.Rejections)-1]; first.Token != 1 || last.Token != n-1 {
		t.Errorf("rejections listed run from token %d to %d", first.Token, last.Token)
	}
	t.Logf("results.json %d bytes", fileSize(t, path))

	for _, f := range []struct {
		name string
		max  int64
	}{{MarkdownFile, 256 << 10}, {HTMLFile, 2 << 20}, {JUnitFile, 256 << 10}} {
		size := fileSize(t, filepath.Join(run.Dir, f.name))
		t.Logf("%s %d bytes", f.name, size)
		if size > f.max {
			t.Errorf("%s is %d bytes, more than %d", f.name, size, f.max)
		}
	}
	md := string(readFile(t, filepath.Join(run.Dir, MarkdownFile)))
	for _, s := range []string{"99949 more |", "| 99999 |", "not listed"} {
		if !strings.Contains(md, s) {
			t.Errorf("report.md lacks %q", s)
		}
	}
}

// TestListLimitOption: the limit is configurable, a negative one keeps everything, and
// a results-full.json.gz that no longer applies is removed.
func TestListLimitOption(t *testing.T) {
	run, res := bigRun(t, 40)
	if err := WriteWithOptions(run, res, Options{ListLimit: 3}); err != nil {
		t.Fatal(err)
	}
	r := readResults(t, filepath.Join(run.Dir, ResultsFile))
	if len(r.Changes) != 6 || r.Omitted.Changes != 39-6 || r.ListLimit != 3 || len(r.Checks[0].Offending) != 6 {
		t.Errorf("limit 3: %d changes listed, %d omitted, limit %d, %d offending", len(r.Changes), r.Omitted.Changes, r.ListLimit, len(r.Checks[0].Offending))
	}
	if r.Changes[2].NewToken != 4 || r.Changes[3].NewToken != 38 {
		t.Errorf("limit 3: the list is not the first 3 and the last 3: %+v", r.Changes)
	}
	if _, err := os.Stat(filepath.Join(run.Dir, FullResultsFile)); err != nil {
		t.Errorf("limit 3: %v", err)
	}
	if err := WriteWithOptions(run, res, Options{ListLimit: -1}); err != nil {
		t.Fatal(err)
	}
	r = readResults(t, filepath.Join(run.Dir, ResultsFile))
	if len(r.Changes) != 39 || r.Omitted != (ListCounts{}) || r.Full != "" || r.ListLimit != 0 {
		t.Errorf("no limit: %d changes, omitted %+v, full %q", len(r.Changes), r.Omitted, r.Full)
	}
	if _, err := os.Stat(filepath.Join(run.Dir, FullResultsFile)); !os.IsNotExist(err) {
		t.Errorf("no limit: a stale %s remains (%v)", FullResultsFile, err)
	}
	// The default keeps 40 items whole: nothing cut, no full file.
	if err := Write(run, res); err != nil {
		t.Fatal(err)
	}
	r = readResults(t, filepath.Join(run.Dir, ResultsFile))
	if r.Omitted != (ListCounts{}) || r.Full != "" || r.ListLimit != DefaultListLimit {
		t.Errorf("default: omitted %+v, full %q, limit %d", r.Omitted, r.Full, r.ListLimit)
	}
	if err := WriteWithOptions(run, res, Options{ListLimit: 3, NoFullResults: true}); err != nil {
		t.Fatal(err)
	}
	r = readResults(t, filepath.Join(run.Dir, ResultsFile))
	if _, err := os.Stat(filepath.Join(run.Dir, FullResultsFile)); !os.IsNotExist(err) || r.Full != "" || r.Omitted.Changes == 0 {
		t.Errorf("no full results: full %q, omitted %+v, stat %v", r.Full, r.Omitted, err)
	}
}

// TestFullResults: when a list is cut, results-full.json.gz holds every item, is
// linked from the reports, and its totals agree with results.json.
func TestFullResults(t *testing.T) {
	const n = 2_000
	run, res := bigRun(t, n)
	if err := Write(run, res); err != nil {
		t.Fatal(err)
	}
	r := readResults(t, filepath.Join(run.Dir, ResultsFile))
	want := ListCounts{Windows: n - 1, Changes: n - 1, Rejections: n - 1, Terms: n, Overlaps: n - 1, Faults: n - 1, Offending: n}
	if r.Full != FullResultsFile || r.Totals != want || !slices.Contains(r.Files, FullResultsFile) {
		t.Errorf("full = %q, totals %+v, files %v", r.Full, r.Totals, r.Files)
	}
	var full *Results
	if err := json.Unmarshal(testfiles.GunzipFile(t, filepath.Join(run.Dir, FullResultsFile)), &full); err != nil {
		t.Fatal(err)
	}
	if listLens(full) != want || full.Omitted != (ListCounts{}) || full.Totals != want || full.Full != "" || full.ListLimit != 0 {
		t.Errorf("the full results list %+v (omitted %+v, full %q, limit %d), want %+v",
			listLens(full), full.Omitted, full.Full, full.ListLimit, want)
	}
	if full.Changes[n/2].NewToken != n/2+2 || full.Schema != Schema || full.Verdict != r.Verdict {
		t.Errorf("the full results: change %d is %+v, schema %q, verdict %q", n/2, full.Changes[n/2], full.Schema, full.Verdict)
	}
	md := string(readFile(t, filepath.Join(run.Dir, MarkdownFile)))
	for _, s := range []string{"(see " + FullResultsFile + ")", "[" + FullResultsFile + "](" + FullResultsFile + ")"} {
		if !strings.Contains(md, s) {
			t.Errorf("report.md lacks %q", s)
		}
	}
	if page := string(readFile(t, filepath.Join(run.Dir, HTMLFile))); !strings.Contains(page, `href="`+FullResultsFile+`"`) {
		t.Errorf("index.html does not link %s", FullResultsFile)
	}
}

// TestLinksToCompressedRecords: once a kept run's records are gzipped, the reports
// link the .gz files; when both forms exist, the plain one (the truth) is linked.
func TestLinksToCompressedRecords(t *testing.T) {
	run, res := loadStored(t, "pass")
	gzipInPlace := func(name string, keep bool) {
		p := filepath.Join(run.Dir, name)
		if err := os.WriteFile(p+".gz", testfiles.Gzip(t, readFile(t, p)), 0o644); err != nil {
			t.Fatal(err)
		}
		if !keep {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	gzipInPlace("history/n1.jsonl", false)
	gzipInPlace("history/n2.jsonl", true) // interrupted: both exist
	gzipInPlace(history.FaultsFile, false)
	if err := Write(run, res); err != nil {
		t.Fatal(err)
	}
	md := string(readFile(t, filepath.Join(run.Dir, MarkdownFile)))
	for _, want := range []string{
		"[history/n1.jsonl.gz](history/n1.jsonl.gz) — history of n1 (gzipped)",
		"[history/n2.jsonl](history/n2.jsonl) — history of n2\n",
		"[faults.jsonl.gz](faults.jsonl.gz) — the faults as injected and healed (gzipped)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	for _, bad := range []string{"](history/n1.jsonl)", "](history/n2.jsonl.gz)", "](faults.jsonl)"} {
		if strings.Contains(md, bad) {
			t.Errorf("report.md links %s", bad)
		}
	}
	r := readResults(t, filepath.Join(run.Dir, ResultsFile))
	if !slices.Contains(r.Files, "history/n1.jsonl.gz") || slices.Contains(r.Files, "history/n2.jsonl.gz") {
		t.Errorf("files %v", r.Files)
	}
}

// TestTimelineMergesDenseRows: a lane with thousands of terms draws at most about
// maxBoxesPerRow boxes, and the merged boxes' tooltips still count every term.
func TestTimelineMergesDenseRows(t *testing.T) {
	const n = 6_000
	run, res := bigRun(t, n)
	v, err := newView(run, res)
	if err != nil {
		t.Fatal(err)
	}
	tl := v.timeline()
	terms := 0
	for _, ln := range tl.Lanes {
		if len(ln.Leader) > maxBoxesPerRow+1 || len(ln.Overlaps) > maxBoxesPerRow+1 {
			t.Errorf("lane %s draws %d terms and %d overlaps", ln.Node, len(ln.Leader), len(ln.Overlaps))
		}
		for _, b := range ln.Leader {
			var k int
			if _, err := fmt.Sscanf(b.Title, "%d leadership terms between", &k); err != nil {
				k = 1
			}
			terms += k
		}
	}
	if terms != n {
		t.Errorf("the lanes' boxes stand for %d terms, want %d", terms, n)
	}
	if len(tl.Faults) > maxBoxesPerRow+1 || len(tl.Windows) > maxBoxesPerRow+1 || len(tl.Marks) > maxBoxesPerRow+1 {
		t.Errorf("%d faults, %d windows, %d marks drawn", len(tl.Faults), len(tl.Windows), len(tl.Marks))
	}
	// A short run is drawn box by box.
	small, sres := bigRun(t, 50)
	sv, err := newView(small, sres)
	if err != nil {
		t.Fatal(err)
	}
	if stl := sv.timeline(); len(stl.Windows) != 49 || len(stl.Faults) != 49 {
		t.Errorf("a short run draws %d windows and %d faults, want 49", len(stl.Windows), len(stl.Faults))
	}
}
