package checker

import (
	"context"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/fenceline/fenceline/history"
)

func TestResultFirstViolation(t *testing.T) {
	r := &Result{Checks: []CheckResult{
		{Name: "a", Verdict: Valid},
		{Name: "b", Verdict: Invalid, Message: "b untimed"},
		{Name: "c", Verdict: Invalid, FirstViolation: 300, Offending: []string{"c first", "c second"}},
		{Name: "d", Verdict: Unknown, FirstViolation: 1},
		{Name: "e", Verdict: Invalid, FirstViolation: 200, Message: "e msg"},
		{Name: "f", Verdict: Invalid, FirstViolation: 200, Offending: []string{"f first"}},
	}}
	v, ok := r.FirstViolation()
	if !ok || v != (Violation{Check: "e", Time: 200, Description: "e msg"}) {
		t.Errorf("got %+v %v, want e at 200 (the earliest; ties to the first listed)", v, ok)
	}
	r.Checks = r.Checks[:2]
	if v, ok := r.FirstViolation(); !ok || v != (Violation{Check: "b", Description: "b untimed"}) {
		t.Errorf("untimed only: %+v %v", v, ok)
	}
	r.Checks = r.Checks[:1]
	if v, ok := r.FirstViolation(); ok {
		t.Errorf("no invalid check, got %+v", v)
	}
}

func TestSetGroupedOffending(t *testing.T) {
	var cr CheckResult
	cr.setGroupedOffending([][]finding{
		{{50, "lost 2"}, {40, "lost 1"}, {60, "lost 3"}, {70, "lost 4"}},
		nil,
		{{30, "dup 1"}},
		{{0, "balance"}},
	}, 3, 8, 999)
	want := []string{"dup 1", "lost 1", "lost 2", "lost 3", "… and 1 more", "balance"}
	if len(cr.Offending) != len(want) {
		t.Fatalf("offending %q, want %q", cr.Offending, want)
	}
	for i := range want {
		if cr.Offending[i] != want[i] {
			t.Errorf("offending %q, want %q", cr.Offending, want)
			break
		}
	}
	if cr.FirstViolation != 30 {
		t.Errorf("first violation %d, want 30", cr.FirstViolation)
	}
	cr.setGroupedOffending([][]finding{{{0, "balance"}}}, 3, 8, 999)
	if cr.FirstViolation != 999 {
		t.Errorf("untimed: first violation %d, want the fallback", cr.FirstViolation)
	}
}

var opInOffending = regexp.MustCompile(`\bop ([^\s:]+) |^(?:cannot be linearized: )?\S+ (?:commit|load) ([^\s:]+)`)

// Every invalid check of the golden runs names a time for its first violation, within
// the run, and the time of an offending operation is that operation's completion (or
// invoke); checks that are not invalid name none.
func TestGoldenFirstViolations(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "*", history.RunInfoFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range dirs {
		dir := filepath.Dir(f)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			run, err := history.LoadRun(dir)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Check(context.Background(), run, Options{ExpectedBalances: testBalances, PieceOps: 50})
			if err != nil {
				t.Fatal(err)
			}
			lo, hi := run.Events.Time(0), run.Events.Time(run.Events.Len()-1)
			if run.Info.End > hi {
				hi = run.Info.End
			}
			times := map[string][2]int64{} // op id -> invoke, completion
			for _, e := range run.Events.All() {
				tm := times[e.ID]
				if e.Type == history.Invoke {
					tm[0] = e.Time
				} else {
					tm[1] = e.Time
				}
				times[e.ID] = tm
			}
			for _, c := range res.Checks {
				if c.Verdict != Invalid {
					if c.FirstViolation != 0 {
						t.Errorf("%s is %s but names a first violation at %d", c.Name, c.Verdict, c.FirstViolation)
					}
					continue
				}
				if c.FirstViolation < lo || c.FirstViolation > hi+1 {
					t.Errorf("%s: first violation %d outside the run [%d, %d]", c.Name, c.FirstViolation, lo, hi)
				}
				m := opInOffending.FindStringSubmatch(c.Offending[0])
				if m == nil {
					continue // not about one operation (a lost event, a balance)
				}
				id := m[1] + m[2]
				tm, ok := times[id]
				if !ok {
					t.Errorf("%s: %q names op %q, which the history does not have", c.Name, c.Offending[0], id)
					continue
				}
				if c.FirstViolation != tm[1] && c.FirstViolation != tm[0] {
					t.Errorf("%s: first violation %d, but %q names op %s at [%d, %d]", c.Name, c.FirstViolation, c.Offending[0], id, tm[0], tm[1])
				}
			}
			v, ok := res.FirstViolation()
			if ok != (res.Verdict == Invalid) {
				t.Errorf("verdict %s, FirstViolation ok=%v", res.Verdict, ok)
			}
			if ok {
				for _, c := range res.Checks {
					if c.Verdict == Invalid && c.FirstViolation < v.Time {
						t.Errorf("FirstViolation %+v, but %s is earlier (%d)", v, c.Name, c.FirstViolation)
					}
				}
				t.Logf("first violation: %s at t+%v: %s", v.Check, time.Duration(v.Time-res.Start), v.Description)
			}
		})
	}
}
