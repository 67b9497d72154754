//go:build chaos

package mutants

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/experiment/chaosrun"
	"github.com/fenceline/fenceline/experiment/matrix"
	"github.com/fenceline/fenceline/harness"
	"github.com/fenceline/fenceline/internal/exitcode"
)

const luaFile = `package x

var renew = redis.NewScript(` + "`" + `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
` + "`" + `)

const commit = ` + "`" + `
local s = 'a < b == 3' -- not code: ~= 7
-- mutants: begin
if a < 2 and (b >= c or d) and not e then
  redis.call('SET', KEYS[2], 'x')
end
-- mutants: end
if z > 9 then redis.call('DEL', KEYS[1]) end
` + "`" + `
`

func changes(ms []Mutant) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Operator+" "+m.Old+" -> "+m.New)
	}
	return out
}

// Every operator of the generator, on both a whole script and a script with a marked
// region; strings, comments, KEYS/ARGV indexes and code outside the region are left alone.
func TestLuaScripts(t *testing.T) {
	ms, err := LuaScripts("x/x.go", []byte(luaFile), "renew", "commit")
	if err != nil {
		t.Fatal(err)
	}
	got := changes(ms)
	want := []string{
		// renew: whole.
		"LUA_CONDITION_TRUE redis.call('GET', KEYS[1]) == ARGV[1] -> true",
		"LUA_RELATIONAL_FLIP == -> ~=",
		"LUA_CONSTANT_PLUS_ONE 0 -> 1",
		"LUA_CONSTANT_MINUS_ONE 0 -> -1",
		// commit: the region only.
		"LUA_CONDITION_DROPPED a < 2 and  -> ",
		"LUA_CONDITION_DROPPED (b >= c or d) and  -> ",
		"LUA_CONDITION_DROPPED and not e -> ",
		"LUA_RELATIONAL_FLIP < -> <=",
		"LUA_CONSTANT_PLUS_ONE 2 -> 3",
		"LUA_CONSTANT_MINUS_ONE 2 -> 1",
		"LUA_RELATIONAL_FLIP >= -> >",
		"LUA_CALL_DROPPED redis.call('SET', KEYS[2], 'x') -> -- dropped",
	}
	if !slices.Equal(got, want) {
		t.Errorf("mutants:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Each applies to the file it came from, and names its own line.
	for _, m := range ms {
		b, err := m.Apply([]byte(luaFile))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) == luaFile {
			t.Errorf("%s changes nothing", m.ID)
		}
		if line := strings.Split(luaFile, "\n")[m.Line-1]; !strings.Contains(line, strings.TrimSpace(strings.Fields(m.Old)[0])) {
			t.Errorf("%s: line %d is %q", m.ID, m.Line, line)
		}
	}
	if ms[0].ID != "renew:2:4:LUA_CONDITION_TRUE" || ms[0].Package != "./x" {
		t.Errorf("first mutant %q in %s", ms[0].ID, ms[0].Package)
	}
}

func TestLuaScriptsErrors(t *testing.T) {
	if _, err := LuaScripts("x/x.go", []byte(luaFile), "missing"); err == nil {
		t.Error("a script that is not there: no error")
	}
	bad := strings.Replace(luaFile, "-- mutants: end", "", 1)
	if _, err := LuaScripts("x/x.go", []byte(bad), "commit"); err == nil {
		t.Error("a region without its end: no error")
	}
	if _, err := LuaScripts("x/x.go", []byte("package x\nvar = 1"), "renew"); err == nil {
		t.Error("Go that does not parse: no error")
	}
}

// The real scripts: every one is found, and each mutant applies.
func TestScopeScripts(t *testing.T) {
	for _, s := range LuaScope {
		src, err := os.ReadFile("../../" + s.File)
		if err != nil {
			t.Fatal(err)
		}
		ms, err := LuaScripts(s.File, src, s.Scripts...)
		if err != nil {
			t.Fatal(err)
		}
		ids := map[string]bool{}
		for _, m := range ms {
			if ids[m.ID] {
				t.Errorf("%s named twice", m.ID)
			}
			ids[m.ID] = true
			if _, err := m.Apply(src); err != nil {
				t.Error(err)
			}
		}
		for _, name := range s.Scripts {
			if !slices.ContainsFunc(ms, func(m Mutant) bool { return strings.HasPrefix(m.ID, name+":") }) {
				t.Errorf("no mutant of %s", name)
			}
		}
	}
}

func TestApplyRefusesAMovedFile(t *testing.T) {
	m := Mutant{ID: "m", File: "f.go", Offset: 2, Old: "==", New: "!="}
	if b, err := m.Apply([]byte("a == b")); err != nil || string(b) != "a != b" {
		t.Errorf("Apply = %q, %v", b, err)
	}
	for _, src := range []string{"a = b", "a", ""} {
		if _, err := m.Apply([]byte(src)); err == nil {
			t.Errorf("Apply to %q: no error", src)
		}
	}
}

// gremlins' report is read at its positions, only inside the scope's functions, with
// its replacement table; a binary minus listed twice is one mutant.
func TestScopeMutants(t *testing.T) {
	dir := t.TempDir()
	src := "package p\n\nfunc In(a, b int) bool {\n\treturn a-b < 0 && a != b\n}\n\nfunc Out(a int) int { return a + 1 }\n"
	if err := os.MkdirAll(dir+"/p", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/p/p.go", []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &gremlinsReport{}
	r.Files = make([]struct {
		FileName  string `json:"file_name"`
		Mutations []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
			Line   int    `json:"line"`
			Column int    `json:"column"`
		} `json:"mutations"`
	}, 1)
	r.Files[0].FileName = "p.go"
	for _, m := range []struct {
		typ       string
		line, col int
	}{
		{"ARITHMETIC_BASE", 4, 10}, {"INVERT_NEGATIVES", 4, 10}, {"CONDITIONALS_BOUNDARY", 4, 13},
		{"INVERT_LOGICAL", 4, 17}, {"CONDITIONALS_NEGATION", 4, 22}, {"ARITHMETIC_BASE", 7, 32},
	} {
		r.Files[0].Mutations = append(r.Files[0].Mutations, struct {
			Type   string `json:"type"`
			Status string `json:"status"`
			Line   int    `json:"line"`
			Column int    `json:"column"`
		}{m.typ, "RUNNABLE", m.line, m.col})
	}
	ms, err := scopeMutants(dir, GoScope{File: "p/p.go", Funcs: []string{"In"}}, r)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ARITHMETIC_BASE - -> +", "CONDITIONALS_BOUNDARY < -> <=", "INVERT_LOGICAL && -> ||", "CONDITIONALS_NEGATION != -> =="}
	if got := changes(ms); !slices.Equal(got, want) {
		t.Errorf("mutants %q, want %q", got, want)
	}
	if ms[0].ID != "p:In+1:10:ARITHMETIC_BASE" {
		t.Errorf("ID %q", ms[0].ID)
	}
	// gremlins' order is not stable; the list is (a sample picks by position).
	slices.Reverse(r.Files[0].Mutations)
	rev, err := scopeMutants(dir, GoScope{File: "p/p.go", Funcs: []string{"In"}}, r)
	if err != nil || !slices.Equal(changes(rev), want) {
		t.Errorf("gremlins' list reversed: mutants %q (%v), want %q", changes(rev), err, want)
	}
	slices.Reverse(r.Files[0].Mutations)
	if _, err := scopeMutants(dir, GoScope{File: "p/p.go", Funcs: []string{"Gone"}}, r); err == nil {
		t.Error("a function that is not there: no error")
	}
	r.Files[0].Mutations[0].Type = "INVERT_BITWISE"
	if _, err := scopeMutants(dir, GoScope{File: "p/p.go", Funcs: []string{"In"}}, r); err == nil {
		t.Error("an operator the table does not know for the token: no error")
	}
}

func TestSample(t *testing.T) {
	ms := make([]Mutant, 10)
	for i := range ms {
		ms[i].ID = string(rune('a' + i))
	}
	var ids []string
	for _, m := range sample(ms, 3) {
		ids = append(ids, m.ID)
	}
	if !slices.Equal(ids, []string{"a", "d", "g"}) {
		t.Errorf("sample of 3 = %v", ids)
	}
	if len(sample(ms, 0)) != 10 || len(sample(ms, 20)) != 10 {
		t.Error("sample of 0 or of more than all is not all")
	}
}

// --only runs the named mutants in the list's order, and refuses an ID no mutant has.
func TestOnly(t *testing.T) {
	ms := make([]Mutant, 5)
	for i := range ms {
		ms[i].ID = string(rune('a' + i))
	}
	got, err := only(ms, []string{"d", "b"})
	if err != nil || len(got) != 2 || got[0].ID != "b" || got[1].ID != "d" {
		t.Errorf("only(d, b) = %v, %v", got, err)
	}
	if _, err := only(ms, []string{"b", "z", "y"}); err == nil || !strings.Contains(err.Error(), "y, z") {
		t.Errorf("only(b, z, y) error = %v, want one naming y, z", err)
	}
}

func TestReadEquivalent(t *testing.T) {
	m, err := ReadEquivalent(strings.NewReader("# comment\n\nrenew:2:4:LUA_X: the reply is never read\n"))
	if err != nil || m["renew:2:4:LUA_X"] != "the reply is never read" {
		t.Errorf("ReadEquivalent = %v, %v", m, err)
	}
	for _, bad := range []string{"no reason here\n", "a: x\na: y\n", "a: \n"} {
		if _, err := ReadEquivalent(strings.NewReader(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// The scores: the harness's counts the mutants the unit tests also kill; an equivalent
// survivor leaves the denominator; an unexplained survivor fails the command, an
// undecided mutant makes it unknown.
func TestReport(t *testing.T) {
	recs := []Record{
		{Mutant: Mutant{ID: "a_1"}, Tests: Killed, Harness: Killed, Check: "exactly-once", At: 4 * time.Second, Seed: 1},
		{Mutant: Mutant{ID: "b"}, Tests: Survived, Harness: Killed, Check: "no-stale-write", At: 8 * time.Second, Seed: 2},
		{Mutant: Mutant{ID: "c"}, Tests: Killed, Harness: Survived, Equivalent: "never reached"},
		{Mutant: Mutant{ID: "d"}, Tests: NotViable, Harness: NotViable},
	}
	rep := report{cfg: Config{Command: "fenceline mutants", Seed: 1, Duration: time.Minute}, total: 4, recs: recs,
		mutated: "commit 1234567 (modified)", code: "0123456789abcdef", judge: "commit 89abcde",
		control: Record{Mutant: control, Tests: Survived, Harness: Survived}}
	s := rep.summaryText()
	for _, want := range []string{"killed by the harness: 2 of 2 non-equivalent (100.0 %), median time to the first violation 4s",
		// c, argued equivalent, is in no numerator: the unit tests kill 1 of the 2 others.
		"killed by the unit tests: 1 (50.0 %); by both 1; by either 2", "survived: 1 argued equivalent, 0 unexplained", "1 not viable"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	if c := rep.exitCode(); c != exitcode.OK {
		t.Errorf("exit %d, want 0", c)
	}
	md := rep.markdown()
	for _, want := range []string{"| 4 | 1 | 0 | 1 | 2 | 1 | 0 | 100.0 % | 50.0 % | 4s |", "killed: no-stale-write at 8s (seed 2)", "equivalent: never reached", "| a\\_1 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	// An argued mutant killed all the same: a false alarm or a wrong argument, and no
	// score stands until it is looked into.
	rep.recs = append(rep.recs, Record{Mutant: Mutant{ID: "e"}, Tests: Survived, Harness: Killed, Check: "step-down", At: time.Second, Seed: 1, Contradicted: "only a log level"})
	if s := rep.summaryText(); !strings.Contains(s, "yet killed by the harness: 1") {
		t.Errorf("summary does not name the contradiction:\n%s", s)
	}
	if md := rep.markdown(); !strings.Contains(md, "ARGUED EQUIVALENT, YET KILLED") {
		t.Errorf("report does not mark the contradiction:\n%s", md)
	}
	if c := rep.exitCode(); c != exitcode.Unknown {
		t.Errorf("exit %d with a contradiction, want %d", c, exitcode.Unknown)
	}
	rep.recs = rep.recs[:len(rep.recs)-1]
	if strings.Contains(md, `\\`) {
		t.Errorf("a cell escaped twice:\n%s", md)
	}
	// The mutated code and the judge are named apart: a binary built at one commit may
	// mutate the code of another.
	if !strings.Contains(md, "on commit 1234567 (modified) (module SHA-256 0123456789ab), judged by the harness and checker of commit 89abcde:") {
		t.Errorf("report does not name the mutated code and its judge:\n%s", md)
	}
	if !strings.Contains(md, "unit tests passed, harness valid on seed 1, on seed 2 with takeover on disconnect") ||
		!strings.Contains(md, "and on seed 3 with the register workload") {
		t.Errorf("report does not say how the control fared:\n%s", md)
	}
	// The unmutated code killed: every kill may be a false alarm, and no score stands.
	for _, ctl := range []Record{
		{Mutant: control, Tests: Survived, Harness: Killed, Check: "lease-exclusion", At: time.Second, Seed: 2},
		{Mutant: control, Tests: Killed, Harness: Survived},
		{Mutant: control, Tests: NotReached, Harness: NotReached},
	} {
		bad := rep
		bad.control = ctl
		if c := bad.exitCode(); c != exitcode.Unknown {
			t.Errorf("control %s/%s: exit %d, want 3", ctl.Tests, ctl.Harness, c)
		}
		if s := bad.summaryText(); !strings.Contains(s, "control (the unmutated code) FAILED") {
			t.Errorf("control %s/%s: the summary does not say so:\n%s", ctl.Tests, ctl.Harness, s)
		}
	}
	rep.recs = append(rep.recs, Record{Mutant: Mutant{ID: "e"}, Tests: Killed, Harness: Undecided})
	if c := rep.exitCode(); c != exitcode.Unknown {
		t.Errorf("with an undecided mutant: exit %d, want 3", c)
	}
	// An undecided mutant is in no score, its unit tests' kill included.
	if s := rep.summaryText(); !strings.Contains(s, "killed by the unit tests: 1 (50.0 %)") || !strings.Contains(s, "1 undecided") {
		t.Errorf("an undecided mutant counted:\n%s", s)
	}
	rep.recs = append(rep.recs, Record{Mutant: Mutant{ID: "f"}, Tests: Survived, Harness: Survived})
	if c := rep.exitCode(); c != exitcode.Invalid {
		t.Errorf("with an unexplained survivor: exit %d, want 1", c)
	}
}

// A node that panicked or died of a runtime fatal error kills the mutant; a log that
// only mentions a panic does not.
func TestCrashed(t *testing.T) {
	for _, c := range []struct {
		log  string
		want bool
	}{
		{"{\"msg\":\"became-leader\"}\npanic: runtime error: index out of range [21] with length 20\n\ngoroutine 46 [running]:\n", true},
		{"fatal error: concurrent map writes\n", true},
		{"{\"msg\":\"became-leader\"}\n{\"msg\":\"recovered\",\"error\":\"panic: no\"}\n", false},
	} {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "logs", "n2.log"), []byte(c.log), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := crashed(dir); got != c.want {
			t.Errorf("crashed(%q) = %v, want %v", c.log, got, c.want)
		}
	}
	if crashed(t.TempDir()) {
		t.Error("no logs: crashed")
	}
}

// A chaos run's outcome becomes the stage's: a node that hung in its shutdown kills the
// mutant (stop-hang) as an unhealthy one does, and a run cut by the interrupt is not
// run, where it used to be undecided and so counted against the run's completeness.
func TestStageOutcome(t *testing.T) {
	incomplete := func(err error) matrix.Result {
		return matrix.Result{Outcome: chaosrun.Outcome{Code: exitcode.Unknown, Result: &checker.Result{},
			RunErr: fmt.Errorf("%w: %w", harness.ErrIncomplete, errors.Join(errors.New("final read: EOF"), err))}}
	}
	hung := incomplete(&backend.StopTimeoutError{Node: "n2", Grace: 10 * time.Second})
	live, cut := context.Background(), canceled()
	for _, c := range []struct {
		name         string
		ctx          context.Context
		r            matrix.Result
		verdict, why string
		check        string
	}{
		{name: "stop hang", ctx: live, r: hung, verdict: Killed, check: StopHang},
		{name: "stop hang, cut", ctx: cut, r: hung, verdict: NotReached},
		{name: "unhealthy", ctx: live, r: incomplete(&backend.UnhealthyError{URL: "http://n1/health", Status: "503"}), verdict: Killed, check: Unhealthy},
		{name: "incomplete", ctx: live, r: incomplete(errors.New("heal all: boom")), verdict: Undecided, why: "incomplete"},
		{name: "incomplete, cut", ctx: cut, r: incomplete(errors.New("heal all: context canceled")), verdict: NotReached},
		{name: "not started", ctx: cut, r: matrix.Result{NotRun: true}, verdict: NotReached},
		{name: "valid", ctx: live, r: matrix.Result{Outcome: chaosrun.Outcome{Code: exitcode.OK, Result: &checker.Result{}}}, verdict: Survived},
	} {
		v, check, at, why := stageOutcome(c.ctx, c.r)
		if v != c.verdict || check != c.check || !strings.Contains(why, c.why) {
			t.Errorf("%s: %s %q %q, want %s %q %q", c.name, v, check, why, c.verdict, c.check, c.why)
		}
		if v == Killed && at != -1 {
			t.Errorf("%s: at %v, want untimed", c.name, at)
		}
	}
}

func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// A run cut short goes on where it stopped: decided records are taken back, one cut short
// or undecided runs again, and records of other code are refused.
func TestProgress(t *testing.T) {
	path := filepath.Join(t.TempDir(), progressFile)
	p, done, err := openProgress(path, "code1", false)
	if err != nil || len(done) != 0 {
		t.Fatalf("fresh: %v, %d done", err, len(done))
	}
	for _, r := range []Record{
		{Mutant: Mutant{ID: "a"}, Tests: Killed, Harness: Killed, Check: "linearizability", At: time.Second},
		{Mutant: Mutant{ID: "b"}, Tests: Survived, Harness: Undecided},
		{Mutant: Mutant{ID: "c"}, Tests: NotViable, Harness: NotViable},
		{Mutant: Mutant{ID: "d"}, Tests: Killed, Harness: NotReached},
	} {
		if err := p.add(r); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	// The last line cut short, as a machine lost mid-write leaves it.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o644)
	f.WriteString(`{"code":"code1","id":"e","tes`)
	f.Close()

	p, done, err = openProgress(path, "code1", true)
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 2 || done["a"].Check != "linearizability" || done["c"].Harness != NotViable {
		t.Errorf("resumed %v, want a and c", done)
	}
	if err := p.add(Record{Mutant: Mutant{ID: "b"}, Tests: Survived, Harness: Survived}); err != nil {
		t.Fatal(err)
	}
	p.Close()
	if _, done, err = openProgress(path, "code1", true); err != nil || done["b"].Harness != Survived {
		t.Errorf("after appending b: %v, %v", err, done)
	}
	if _, _, err := openProgress(path, "code2", true); err == nil || !strings.Contains(err.Error(), "other code") {
		t.Errorf("records of other code resumed: %v", err)
	}
	// Without --resume the file starts afresh.
	p, _, err = openProgress(path, "code2", false)
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	if _, done, err := openProgress(path, "code2", true); err != nil || len(done) != 0 {
		t.Errorf("a fresh start kept %v (%v)", done, err)
	}
}

// The digest sees a change of code, but not of Markdown or of the survivors' arguments;
// repoCommit names the repo's commit and whether its tracked files differ from it.
func TestCodeDigest(t *testing.T) {
	repo := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("config", "user.email", "t@t")
	git("config", "user.name", "t")
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(repo, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.go", "package a\n")
	write("docs/x.md", "x")
	write("experiment/mutants/equivalent.txt", "")
	d0, err := codeDigest(repo)
	if err != nil {
		t.Fatal(err)
	}
	write("docs/x.md", "y")
	write("experiment/mutants/equivalent.txt", "id: why")
	if d, _ := codeDigest(repo); d != d0 {
		t.Error("Markdown or equivalent.txt changed the digest")
	}
	write("a.go", "package a // b\n")
	if d, _ := codeDigest(repo); d == d0 {
		t.Error("a change of code left the digest as it was")
	}

	// The report names the repo's commit, not this binary's.
	if got := repoCommit(context.Background(), repo); got != "an unknown commit" {
		t.Errorf("no commit yet: %q", got)
	}
	git("add", "-A")
	git("commit", "-q", "-m", "c")
	head := git("rev-parse", "--short=7", "HEAD")
	if got := repoCommit(context.Background(), repo); got != "commit "+head {
		t.Errorf("clean: %q, want commit %s", got, head)
	}
	write("a.go", "package a // c\n")
	if got := repoCommit(context.Background(), repo); got != "commit "+head+" (modified)" {
		t.Errorf("modified: %q", got)
	}
}

// The unit-test stage: tests that pass survive; tests that fail, hang past the timeout
// or do not compile kill. Only the test binary's run is timed, not its build.
func TestUnitTests(t *testing.T) {
	mod := t.TempDir()
	files := map[string]string{
		"go.mod":              "module m\n\ngo 1.22\n",
		"pass/p_test.go":      "package p\nimport \"testing\"\nfunc TestP(t *testing.T) {}\n",
		"fail/p_test.go":      "package p\nimport \"testing\"\nfunc TestP(t *testing.T) { t.Fatal(\"no\") }\n",
		"hang/p_test.go":      "package p\nimport (\"testing\"; \"time\")\nfunc TestP(t *testing.T) { time.Sleep(time.Hour) }\n",
		"nocompile/p_test.go": "package p\nimport \"testing\"\nfunc TestP(t *testing.T) { undefined() }\n",
		"hog/p_test.go":       "package p\nimport \"testing\"\nvar keep [][]byte\nfunc TestP(t *testing.T) { for { b := make([]byte, 1<<20); b[0] = 1; keep = append(keep, b) } }\n",
	}
	for name, text := range files {
		p := filepath.Join(mod, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := Config{TestTimeout: 2 * time.Second, TestMemory: 1536 << 20} // the runtime reserves about 1 GB at its start
	for _, c := range []struct{ pkg, want, detail string }{
		{"./pass", Survived, ""}, {"./fail", Killed, "unit tests: TestP"}, {"./hang", Killed, "unit tests: timed out"},
		{"./nocompile", Killed, "unit tests do not compile"}, {"./hog", Killed, "unit tests: out of memory"},
	} {
		got, detail, output := unitTests(context.Background(), cfg, mod, c.pkg)
		if got != c.want || !strings.HasPrefix(detail, c.detail) {
			t.Errorf("%s: %s (%q), want %s (%q)", c.pkg, got, detail, c.want, c.detail)
		}
		// The output is kept for a kill (runMutant writes it to unit-tests.log).
		if (got == Killed) != (len(output) > 0) || c.pkg == "./fail" && !strings.Contains(string(output), "--- FAIL: TestP") {
			t.Errorf("%s: output %q", c.pkg, output)
		}
	}
}

// Every Lua mutant argued in equivalent.txt is still generated: an argument whose
// mutant moved (its script edited) must be made again. (`fenceline mutants` refuses
// such a file too, but only after gremlins' dry run of minutes.)
func TestEquivalentLuaIDs(t *testing.T) {
	eq, err := ReadEquivalentFile("equivalent.txt")
	if err != nil {
		t.Fatal(err)
	}
	var all []Mutant
	scripts := map[string]bool{}
	for _, s := range LuaScope {
		src, err := os.ReadFile(filepath.Join("../..", s.File))
		if err != nil {
			t.Fatal(err)
		}
		ms, err := LuaScripts(s.File, src, s.Scripts...)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, ms...)
		for _, name := range s.Scripts {
			scripts[name] = true
		}
	}
	lua := 0
	for _, id := range unknownEquivalents(all, eq) {
		if name, _, _ := strings.Cut(id, ":"); scripts[name] {
			t.Errorf("equivalent.txt argues %s, which is no longer generated", id)
		}
	}
	for id := range eq {
		if name, _, _ := strings.Cut(id, ":"); scripts[name] {
			lua++
		}
	}
	if lua == 0 {
		t.Error("no Lua mutant argued: is equivalent.txt read?")
	}
}

// fakeGremlins is a gremlins whose dry run finds no Go mutant: Generate then lists the
// Lua ones alone, in milliseconds.
func fakeGremlins(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "gremlins")
	script := "#!/bin/sh\nwhile [ $# -gt 0 ]; do [ \"$1\" = --output ] && echo '{}' > \"$2\"; shift; done\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// --list prints the IDs --only selects and runs nothing (it does not even make --out);
// an ID no mutant has is a usage error.
func TestList(t *testing.T) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	ids := []string{"renewScript:2:31:LUA_RELATIONAL_FLIP", "acquireScript:7:9:LUA_RELATIONAL_FLIP"}
	var stdout, stderr bytes.Buffer
	cfg := Config{Repo: repo, Out: out, Gremlins: fakeGremlins(t), Only: ids, List: true}
	if code := Run(context.Background(), cfg, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if got, want := stdout.String(), ids[1]+"\n"+ids[0]+"\n"; got != want { // in the list's order
		t.Errorf("--list printed %q, want %q", got, want)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("--list made %s", out)
	}
	cfg.Only = []string{"renewScript:99:1:LUA_RELATIONAL_FLIP"}
	stderr.Reset()
	if code := Run(context.Background(), cfg, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "no mutant has the ID renewScript:99:1") {
		t.Errorf("--only of an unknown ID: exit %d, %s", code, stderr.String())
	}
}

// Every mutant gets the default run and the takeover run; a mutant of the listener's
// code, whose fence's writes only the register workload sends, and the control, which
// must pass every run a mutant gets, the register run too.
func TestStagesOf(t *testing.T) {
	for _, c := range []struct {
		m    Mutant
		want []stage
	}{
		{Mutant{ID: "acquireScript:1:1:LUA_CALL_DROPPED", Package: "./election"}, []stage{stageDefault, stageTakeover}},
		{Mutant{ID: "election:Lead+2:42:ARITHMETIC_BASE", Package: "./election"}, []stage{stageDefault, stageTakeover}},
		{Mutant{ID: "commitScript:252:1:LUA_CALL_DROPPED", Package: "./listener"}, []stage{stageDefault, stageTakeover, stageRegister}},
		{control, []stage{stageDefault, stageTakeover, stageRegister}},
	} {
		if got := stagesOf(c.m); !slices.Equal(got, c.want) {
			t.Errorf("%s: stages %v, want %v", c.m.ID, got, c.want)
		}
	}
}
