package reports

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/internal/testfiles"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// loadStored copies the stored run testdata/runs/<name> into a temporary directory
// (Write writes into the run directory) and loads it with the checker's result.
func loadStored(t testing.TB, name string) (*history.Run, *checker.Result) {
	t.Helper()
	src := filepath.Join("testdata", "runs", name)
	dst := filepath.Join(t.TempDir(), name)
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
	return loadRunAt(t, dst)
}

// loadRunAt loads the run directory dir with the checker's result stored in it.
func loadRunAt(t testing.TB, dir string) (*history.Run, *checker.Result) {
	t.Helper()
	run, err := history.LoadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "checker.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res checker.Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	return run, &res
}

// writeStored writes the reports of a stored run and returns the run.
func writeStored(t testing.TB, name string) (*history.Run, *checker.Result) {
	t.Helper()
	run, res := loadStored(t, name)
	if err := Write(run, res); err != nil {
		t.Fatalf("Write: %v", err)
	}
	return run, res
}

// render is what renderer r (Markdown, HTML, Summary, JUnit, WriteResults) writes of
// run and res.
func render(t testing.TB, r func(io.Writer, *history.Run, *checker.Result) error, run *history.Run, res *checker.Result) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := r(&b, run, res); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGolden renders the stored runs in place, from their relative directories
// (testdata/runs/<name>), as Write renders them: the goldens name no path of the
// machine that made them. TestDeterministic holds Markdown and Write to one output.
func TestGolden(t *testing.T) {
	for _, c := range storedRuns {
		t.Run(c.name, func(t *testing.T) {
			run, res := loadRunAt(t, filepath.Join("testdata", "runs", c.name))
			for f, got := range map[string][]byte{MarkdownFile: render(t, Markdown, run, res), ResultsFile: render(t, WriteResults, run, res)} {
				golden := filepath.Join("testdata", "golden", c.name, f)
				if *update {
					if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(golden, got, 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want := readFile(t, golden)
				if !bytes.Equal(got, want) {
					t.Errorf("%s differs from %s (run with -update to accept):\n%s", f, golden, firstDiff(want, got))
				}
			}
		})
	}
}

// firstDiff shows the first differing line.
func firstDiff(want, got []byte) string {
	wl, gl := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return "line " + itoa(i+1) + ":\nwant: " + w + "\ngot:  " + g
		}
	}
	return "(same lines)"
}

func TestFailingReportNamesTheViolationFirst(t *testing.T) {
	run, res := writeStored(t, "fail")
	md := string(readFile(t, filepath.Join(run.Dir, MarkdownFile)))
	head := strings.Join(strings.SplitN(md, "\n", 12)[:11], "\n")
	for _, want := range []string{"INVALID", "no-stale-write", "linearizability", "## Violations"} {
		if !strings.Contains(head, want) {
			t.Errorf("the first lines of report.md do not mention %q:\n%s", want, head)
		}
	}
	viz := res.Check(checker.CheckLinearizability).Visualization
	if viz == "" {
		t.Fatal("the stored failing run has no visualization")
	}
	i := strings.Index(md, "]("+viz+")")
	if i < 0 {
		t.Fatalf("report.md does not link %s", viz)
	}
	if j := strings.Index(md, "## Run"); j < i {
		t.Errorf("the visualization link comes after the tables")
	}
	if _, err := os.Stat(filepath.Join(run.Dir, viz)); err != nil {
		t.Errorf("the linked visualization is missing: %v", err)
	}
	// The stale write itself is quoted: the accepted commit of the deposed leader.
	if !strings.Contains(md, "accepted with token 1 after") {
		t.Errorf("report.md does not quote the stale write")
	}
}

func TestPassingReport(t *testing.T) {
	run, _ := writeStored(t, "pass")
	md := string(readFile(t, filepath.Join(run.Dir, MarkdownFile)))
	if !strings.HasPrefix(md, "# fenceline run: ✓ VALID\n") {
		t.Errorf("report.md starts with %q", strings.SplitN(md, "\n", 2)[0])
	}
	if strings.Contains(md, "## Violations") {
		t.Error("a passing report has a Violations section")
	}
	for _, want := range []string{
		"## Failover windows per fault kind", "| fault ", "| p50 ", "| p99 ", "## Commit gap across failovers",
		"## Leader changes", "## Fencing rejections", "## Fault schedule", "## Largest leadership overlaps",
		"| pause ", "[history/n1.jsonl](history/n1.jsonl)", "[junit.xml](junit.xml)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}

func TestResultsSchema(t *testing.T) {
	run, res := writeStored(t, "fail")
	var r map[string]any
	if err := json.Unmarshal(readFile(t, filepath.Join(run.Dir, ResultsFile)), &r); err != nil {
		t.Fatal(err)
	}
	if r["schema"] != Schema || r["verdict"] != "invalid" {
		t.Errorf("schema %v verdict %v", r["schema"], r["verdict"])
	}
	for _, k := range []string{"run", "checks", "failover", "windows", "leader_changes", "fencing_rejections", "changes",
		"rejections", "terms", "overlaps", "faults", "ops", "store", "files"} {
		if _, ok := r[k]; !ok {
			t.Errorf("results.json lacks %q", k)
		}
	}
	var typed Results
	if err := json.Unmarshal(readFile(t, filepath.Join(run.Dir, ResultsFile)), &typed); err != nil {
		t.Fatal(err)
	}
	if len(typed.Checks) != len(res.Checks) || typed.LeaderChanges != res.LeaderChanges || len(typed.Changes) != res.LeaderChanges {
		t.Errorf("checks %d/%d, leader changes %d (listed %d) / %d", len(typed.Checks), len(res.Checks),
			typed.LeaderChanges, len(typed.Changes), res.LeaderChanges)
	}
	if typed.Run.StartUnixNS != run.Info.Start || typed.Run.Start != "2026-01-05T09:30:00Z" {
		t.Errorf("start %d %q", typed.Run.StartUnixNS, typed.Run.Start)
	}
	for _, w := range typed.Windows {
		if w.FirstNewAtNS <= w.InjectedAtNS || w.ToNewTokenNS != w.FirstNewAtNS-w.InjectedAtNS {
			t.Errorf("window %+v is not relative to the start", w)
		}
	}
}

func TestPassingRunListsTheRejectionTheCheckerCounted(t *testing.T) {
	run, res := loadStored(t, "pass")
	r, err := NewResults(run, res)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Rejections) != res.FencingRejections || res.FencingRejections == 0 {
		t.Fatalf("listed %d rejections, the checker counted %d", len(r.Rejections), res.FencingRejections)
	}
	x := r.Rejections[0]
	if x.Node != "n1" || x.Token != 1 || x.StoreToken != 2 || x.SeenBy != "node" {
		t.Errorf("rejection %+v", x)
	}
}

func TestDeterministic(t *testing.T) {
	run, res := writeStored(t, "fail")
	first := map[string][]byte{}
	for _, f := range []string{ResultsFile, MarkdownFile, HTMLFile, JUnitFile} {
		first[f] = readFile(t, filepath.Join(run.Dir, f))
	}
	if err := Write(run, res); err != nil {
		t.Fatal(err)
	}
	for f, b := range first {
		if !bytes.Equal(b, readFile(t, filepath.Join(run.Dir, f))) {
			t.Errorf("%s changed when written again", f)
		}
	}
	if !bytes.Equal(render(t, Markdown, run, res), first[MarkdownFile]) {
		t.Error("Markdown and Write disagree")
	}
	testfiles.NoTemporaries(t, run.Dir)
}

func TestSummary(t *testing.T) {
	run, res := loadStored(t, "fail")
	var b bytes.Buffer
	if err := Summary(&b, run, res); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.HasPrefix(out, "fenceline run: ✗ INVALID\n") {
		t.Errorf("summary starts with %q", strings.SplitN(out, "\n", 2)[0])
	}
	for _, want := range []string{"✗ invalid no-stale-write:", "visualization: linearizability-piece-", "CHECKS", "FAILOVER WINDOWS PER FAULT KIND",
		"LEADER CHANGES", "FENCING REJECTIONS", "FAULT SCHEDULE", "LARGEST LEADERSHIP OVERLAPS", "│ p99 "} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	for i, l := range strings.Split(out, "\n") {
		if w := len([]rune(l)); w > terminalWidth+2 && strings.ContainsAny(l, "│┌└├") {
			t.Errorf("line %d is %d wide: %s", i+1, w, l)
			break
		}
	}
}

func TestNilInput(t *testing.T) {
	if err := Write(nil, &checker.Result{}); !errors.Is(err, ErrNilInput) {
		t.Errorf("Write(nil run) = %v", err)
	}
	if err := Summary(&bytes.Buffer{}, &history.Run{}, nil); !errors.Is(err, ErrNilInput) {
		t.Errorf("Summary(nil result) = %v", err)
	}
}

// An undecided check is never shown as a pass: not in report.md, not in junit.xml.
func TestUnknownIsNotAPass(t *testing.T) {
	run, res := loadStored(t, "pass")
	res.Checks[0].Verdict = checker.Unknown
	res.Checks[0].Message = "undecided: piece 0 timed out"
	res.Verdict = checker.Unknown
	if err := Write(run, res); err != nil {
		t.Fatal(err)
	}
	md := string(readFile(t, filepath.Join(run.Dir, MarkdownFile)))
	if !strings.HasPrefix(md, "# fenceline run: ? UNKNOWN") || !strings.Contains(md, "## Undecided checks") {
		t.Errorf("report.md:\n%s", md[:min(len(md), 400)])
	}
	s := parseJUnit(t, filepath.Join(run.Dir, JUnitFile))
	if s.Errors != 1 || s.Failures != 0 || s.Suites[0].Cases[0].Error == nil {
		t.Errorf("junit: %d errors, %d failures", s.Errors, s.Failures)
	}
	validateJUnit(t, filepath.Join(run.Dir, JUnitFile))

	// An interrupted run whose checks all passed is not a pass either.
	run, res = loadStored(t, "pass")
	run.Info.Interrupted = "interrupted by signal"
	r, err := NewResults(run, res)
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != checker.Unknown {
		t.Errorf("interrupted run: verdict %s", r.Verdict)
	}
	var ju bytes.Buffer
	if err := JUnit(&ju, run, res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ju.String(), `<testcase name="run (seed `) || !strings.Contains(ju.String(), "<error") {
		t.Errorf("interrupted run: junit has no error:\n%s", ju.String())
	}

	// Nor is a run stopped at a violation that the complete check did not confirm: it
	// ran short of its duration.
	run, res = loadStored(t, "pass")
	run.Info.StoppedAtViolation = "lease-exclusion at t+4.200s"
	if r, err = NewResults(run, res); err != nil {
		t.Fatal(err)
	}
	if r.Verdict != checker.Unknown || r.Run.StoppedAtViolation == "" || !strings.Contains(r.Summary, "did not confirm") {
		t.Errorf("stopped run: verdict %s, stopped %q, summary %q", r.Verdict, r.Run.StoppedAtViolation, r.Summary)
	}
	ju.Reset()
	if err := JUnit(&ju, run, res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ju.String(), `<testcase name="run (seed `) || !strings.Contains(ju.String(), "<error") {
		t.Errorf("stopped run: junit has no error:\n%s", ju.String())
	}
}

// An interrupted run may lack run.json's end and store.json: the reports still render.
func TestIncompleteRun(t *testing.T) {
	run, res := loadStored(t, "pass")
	run.Info.End, run.Info.HealTime, run.Store = 0, 0, nil
	run.Faults = run.Faults[:len(run.Faults)-1] // the last fault was never healed
	if err := Write(run, res); err != nil {
		t.Fatal(err)
	}
	md := string(readFile(t, filepath.Join(run.Dir, MarkdownFile)))
	if !strings.Contains(md, "never healed") || !strings.Contains(md, "| not read") {
		t.Errorf("report.md does not say what is missing")
	}
}

type junitDoc struct {
	XMLName  xml.Name `xml:"testsuites"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	Suites   []struct {
		Name     string `xml:"name,attr"`
		Tests    int    `xml:"tests,attr"`
		Failures int    `xml:"failures,attr"`
		Errors   int    `xml:"errors,attr"`
		Cases    []struct {
			Name    string `xml:"name,attr"`
			Failure *struct {
				Message string `xml:"message,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
			Error *struct {
				Message string `xml:"message,attr"`
			} `xml:"error"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func parseJUnit(t testing.TB, path string) junitDoc {
	t.Helper()
	var d junitDoc
	if err := xml.Unmarshal(readFile(t, path), &d); err != nil {
		t.Fatalf("junit.xml does not parse: %v", err)
	}
	if len(d.Suites) != 1 {
		t.Fatalf("%d testsuites, want 1", len(d.Suites))
	}
	return d
}

// validateJUnit validates against the Jenkins/Ant JUnit schema with xmllint.
func validateJUnit(t testing.TB, path string) {
	t.Helper()
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		t.Fatalf("xmllint is not installed: it validates junit.xml against testdata/junit.xsd. Install it (Debian/Ubuntu: apt-get install libxml2-utils)")
	}
	out, err := exec.Command(xmllint, "--noout", "--schema", filepath.Join("testdata", "junit.xsd"), path).CombinedOutput()
	if err != nil {
		t.Fatalf("junit.xml does not validate against testdata/junit.xsd: %v\n%s", err, out)
	}
}

func TestJUnit(t *testing.T) {
	for _, c := range storedRuns {
		t.Run(c.name, func(t *testing.T) {
			run, res := writeStored(t, c.name)
			path := filepath.Join(run.Dir, JUnitFile)
			validateJUnit(t, path)
			d := parseJUnit(t, path)
			s := d.Suites[0]
			if s.Tests != len(res.Checks) || len(s.Cases) != len(res.Checks) || d.Tests != s.Tests {
				t.Errorf("%d tests, %d cases, want %d", s.Tests, len(s.Cases), len(res.Checks))
			}
			failures := 0
			for i, tc := range s.Cases {
				cr := res.Checks[i]
				if want := fmt.Sprintf("%s (seed %d)", cr.Name, run.Info.Seed); tc.Name != want {
					t.Errorf("case %d is %q, want %q", i, tc.Name, want)
				}
				switch cr.Verdict {
				case checker.Valid:
					if tc.Failure != nil || tc.Error != nil {
						t.Errorf("%s: valid, but reported as failing", tc.Name)
					}
				case checker.Invalid:
					failures++
					if tc.Failure == nil || tc.Failure.Message != cr.Message {
						t.Errorf("%s: invalid, but no failure with its message", tc.Name)
					} else if len(cr.Offending) > 0 && !strings.Contains(tc.Failure.Text, cr.Offending[0]) {
						t.Errorf("%s: the failure does not name the offending operations", tc.Name)
					}
				}
			}
			if s.Failures != failures || d.Failures != failures || (c.want == checker.Invalid) != (failures > 0) {
				t.Errorf("%d failures (suites %d), counted %d", s.Failures, d.Failures, failures)
			}
		})
	}
}

func TestTimelineLanes(t *testing.T) {
	run, res := loadStored(t, "pass")
	v, err := newView(run, res)
	if err != nil {
		t.Fatal(err)
	}
	tl := v.timeline()
	if len(tl.Lanes) != len(run.Info.Nodes) {
		t.Fatalf("%d lanes for %d nodes", len(tl.Lanes), len(run.Info.Nodes))
	}
	conds := map[string]bool{}
	leaders := 0
	for _, l := range tl.Lanes {
		leaders += len(l.Leader)
		for _, c := range l.Conditions {
			conds[strings.TrimPrefix(c.Class, "cond cond-")] = true
		}
	}
	if leaders != len(res.Terms) {
		t.Errorf("%d leader boxes for %d terms", leaders, len(res.Terms))
	}
	for _, c := range []string{"down", "paused", "cut-off", "slow", "clock-skewed"} {
		if !conds[c] {
			t.Errorf("no lane shows %q (have %v)", c, conds)
		}
	}
	if len(tl.Windows) != len(res.Windows) || len(tl.Faults) != len(run.Faults)/2 || len(tl.Chart.Bars) == 0 {
		t.Errorf("%d windows, %d faults, %d bars", len(tl.Windows), len(tl.Faults), len(tl.Chart.Bars))
	}
	for _, f := range tl.Faults {
		if f.X < tl.X0 || f.X+f.W > tl.X1+0.01 {
			t.Errorf("fault box %+v outside the plot", f)
		}
	}
}

func TestNiceStep(t *testing.T) {
	for _, c := range []struct {
		span time.Duration
		n    int
		want time.Duration
	}{
		{44 * time.Second, 12, 5 * time.Second},
		{44 * time.Second, 100, 500 * time.Millisecond},
		{5 * time.Minute, 12, 30 * time.Second},
		{300 * time.Millisecond, 12, 50 * time.Millisecond},
	} {
		if got := niceStep(c.span, c.n); got != c.want {
			t.Errorf("niceStep(%v, %d) = %v, want %v", c.span, c.n, got, c.want)
		}
	}
}

func TestMarkdownEscaping(t *testing.T) {
	if got := mdText("a|b *c* <d> [e](f) x_y"); got != `a\|b \*c\* \<d\> \[e\](f) x\_y` {
		t.Errorf("mdText = %s", got)
	}
	if got := mdCode("has `tick`"); got != "``has `tick```" && got != "`` has `tick` ``" {
		t.Errorf("mdCode = %s", got)
	}
}
