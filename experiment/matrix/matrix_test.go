//go:build chaos

package matrix

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/experiment/chaosrun"
	"github.com/fenceline/fenceline/internal/exitcode"
)

func TestSeeds(t *testing.T) {
	for _, c := range []struct {
		s     Seeds
		list  string
		rng   string
		valid bool
	}{
		{Seeds{Count: 3}, "[1 2 3]", "1..3", true},
		{Seeds{First: 1, Count: 3}, "[1 2 3]", "1..3", true},
		{Seeds{First: 5, Count: 2}, "[5 6]", "5..6", true},
		{Seeds{First: 7, Count: 1}, "[7]", "7..7", true},
		{Seeds{First: 1, Count: 0}, "[]", "1..1", false},
		{Seeds{First: -1, Count: 2}, "[1 2]", "1..2", false},
	} {
		if got := fmt.Sprint(c.s.List()); got != c.list {
			t.Errorf("%+v: List %s, want %s", c.s, got, c.list)
		}
		if got := c.s.Range(); got != c.rng {
			t.Errorf("%+v: Range %s, want %s", c.s, got, c.rng)
		}
		if err := c.s.Check(); (err == nil) != c.valid || (err != nil && !errors.Is(err, ErrSeeds)) {
			t.Errorf("%+v: Check %v, want valid %v", c.s, err, c.valid)
		}
	}
}

func names(plan []Run) string {
	var out []string
	for _, r := range plan {
		out = append(out, fmt.Sprintf("%s/%d", r.Name, r.Seed))
	}
	return strings.Join(out, " ")
}

func TestPlans(t *testing.T) {
	rows := []Row{{Name: "a"}, {Name: "b"}}
	seeds := Seeds{First: 3, Count: 2}
	if got := names(Cross(rows, seeds)); got != "a/3 b/3 a/4 b/4" {
		t.Errorf("Cross: %s", got)
	}
	if got := names(ByRow(rows, seeds)); got != "a/3 a/4 b/3 b/4" {
		t.Errorf("ByRow: %s", got)
	}
}

// Every planned run has one result, in plan order, whatever the parallelism; the
// progress log has a line at each run's start and end.
func TestExecuteOrder(t *testing.T) {
	plan := ByRow([]Row{{Name: "a"}, {Name: "b"}, {Name: "c"}}, Seeds{Count: 4})
	var progress bytes.Buffer
	var running, most atomic.Int32
	d := &Driver{Cmd: "test", Out: t.TempDir(), Parallel: 3, Progress: &progress}
	d.Exec = func(ctx context.Context, r Run) chaosrun.Outcome {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(time.Millisecond)
		return chaosrun.Outcome{Dir: filepath.Join(d.RowDir(r.Name), fmt.Sprint(r.Seed)), Code: exitcode.OK, Result: &checker.Result{Verdict: checker.Valid}}
	}
	res, err := d.Execute(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != len(plan) {
		t.Fatalf("%d results for %d runs", len(res), len(plan))
	}
	for i, r := range res {
		if r.NotRun || r.Name != plan[i].Name || r.Seed != plan[i].Seed || r.Verdict() != checker.Valid {
			t.Errorf("result %d: %+v, want the run %s seed %d, valid", i, r, plan[i].Name, plan[i].Seed)
		}
		if want := filepath.Join("runs", r.Name, fmt.Sprint(r.Seed)); d.Rel(r.Outcome.Dir) != want {
			t.Errorf("Rel(%s) = %s, want %s", r.Outcome.Dir, d.Rel(r.Outcome.Dir), want)
		}
	}
	if most.Load() > 3 {
		t.Errorf("%d runs at once, Parallel is 3", most.Load())
	}
	p := progress.String()
	if strings.Count(p, "\n") != 2*len(plan) || !strings.Contains(p, "fenceline test: [1/12] a, seed 1\n") ||
		!strings.Contains(p, "fenceline test: [12/12] c, seed 4: valid (") {
		t.Errorf("progress:\n%s", p)
	}
}

// Once ctx is done no run starts: the rest are NotRun, with no outcome.
func TestExecuteInterrupted(t *testing.T) {
	plan := Cross([]Row{{Name: "a"}}, Seeds{Count: 4})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	d := &Driver{Cmd: "test", Out: t.TempDir()}
	d.Exec = func(ctx context.Context, r Run) chaosrun.Outcome {
		calls++
		if calls == 2 {
			cancel()
			return chaosrun.Outcome{Dir: "d2", Code: exitcode.Unknown, RunErr: context.Canceled, Result: &checker.Result{Verdict: checker.Unknown}}
		}
		return chaosrun.Outcome{Dir: "d1", Code: exitcode.Invalid, Result: &checker.Result{Verdict: checker.Invalid}}
	}
	var done []int
	d.Done = func(i int, r Result) string { done = append(done, i); return "done" }
	res, err := d.Execute(ctx, plan)
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 || fmt.Sprint(done) != "[0 1]" {
		t.Fatalf("%d calls, Done for %v", calls, done)
	}
	if res[0].Verdict() != checker.Invalid || res[0].Incomplete() != "" {
		t.Errorf("first run %+v", res[0])
	}
	if res[1].Verdict() != checker.Unknown || res[1].Incomplete() != context.Canceled.Error() {
		t.Errorf("interrupted run %+v", res[1])
	}
	for _, r := range res[2:] {
		if !r.NotRun || r.Outcome.Dir != "" || r.Verdict() != "" || r.Incomplete() != "not run: interrupted" || r.Checked() {
			t.Errorf("run not made %+v", r)
		}
	}
}

func TestResultOfAnUncheckedRun(t *testing.T) {
	r := Result{Outcome: chaosrun.Outcome{Dir: "x", Code: exitcode.Usage}}
	if r.Checked() || r.Verdict() != "" || !strings.Contains(r.Incomplete(), "could not be checked (exit code 2") {
		t.Errorf("%+v: checked %v, verdict %q, incomplete %q", r, r.Checked(), r.Verdict(), r.Incomplete())
	}
	// A completed, checked run whose command failed is never valid.
	r = Result{Outcome: chaosrun.Outcome{Dir: "x", Code: exitcode.Unknown, Result: &checker.Result{Verdict: checker.Valid}}}
	if r.Verdict() != checker.Unknown {
		t.Errorf("verdict %q, want unknown", r.Verdict())
	}
}

func TestFirstViolation(t *testing.T) {
	res := &checker.Result{Start: 100, Checks: []checker.CheckResult{
		{Name: "a", Verdict: checker.Invalid, FirstViolation: 100 + int64(3*time.Second), Message: "late"},
		{Name: "b", Verdict: checker.Invalid, FirstViolation: 100 + int64(time.Second), Offending: []string{"n2 commit"}},
		{Name: "c", Verdict: checker.Valid},
	}}
	r := Result{Outcome: chaosrun.Outcome{Code: exitcode.Invalid, Result: res}}
	v, at, ok := r.FirstViolation()
	if !ok || v.Check != "b" || at != time.Second || v.Description != "n2 commit" {
		t.Errorf("first violation %+v at %v (%v)", v, at, ok)
	}
	if got := strings.Join(r.FailedChecks(), ","); got != "a,b" {
		t.Errorf("failed checks %s", got)
	}
}

// Markdown tables are compact, one line a row, with escaped cells and the alignment
// row GitHub reads.
func TestTableMarkdown(t *testing.T) {
	tb := Table{Header: []string{"row", "runs", "note"}, Right: []bool{false, true}}
	tb.Add("a", "3", "a | pipe and *stars*")
	tb.Add("b", "10", OrDash(""))
	var b strings.Builder
	tb.Markdown(&b)
	want := "| row | runs | note |\n|---|---:|---|\n| a | 3 | a \\| pipe and \\*stars\\* |\n| b | 10 | — |\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	var term strings.Builder
	tb.Terminal(&term)
	if !strings.Contains(term.String(), "│ a ") || !strings.Contains(term.String(), "*stars*") {
		t.Errorf("terminal table:\n%s", term.String())
	}
}

func TestDur(t *testing.T) {
	for d, want := range map[time.Duration]string{
		1234567 * time.Microsecond: "1.23s", 12345 * time.Microsecond: "12ms", 2*time.Minute + 5*time.Millisecond: "2m0.01s",
	} {
		if got := Dur(d); got != want {
			t.Errorf("Dur(%v) = %s, want %s", d, got, want)
		}
	}
}
