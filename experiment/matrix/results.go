//go:build chaos

package matrix

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/internal/exitcode"
	"github.com/fenceline/fenceline/reports"
)

// Verdict is the run's verdict as `fenceline chaos` would exit with it: valid or
// invalid by the exit code, which folds in what the checker's result alone does not
// say (a run that could not be completed is never valid), else unknown; "" when the
// run was not checked (or not run).
func (r Result) Verdict() checker.Verdict {
	if r.NotRun || r.Outcome.Result == nil {
		return ""
	}
	switch r.Outcome.Code {
	case exitcode.OK:
		return checker.Valid
	case exitcode.Invalid:
		return checker.Invalid
	}
	return checker.Unknown
}

// Tally counts runs by verdict; a verdict neither valid nor invalid counts as unknown.
type Tally struct {
	Valid   int `json:"valid"`
	Invalid int `json:"invalid"`
	Unknown int `json:"unknown"`
}

// Add counts one run whose verdict is v.
func (t *Tally) Add(v checker.Verdict) {
	switch v {
	case checker.Valid:
		t.Valid++
	case checker.Invalid:
		t.Invalid++
	default:
		t.Unknown++
	}
}

// Checked reports whether the run was checked: it has a checker result.
func (r Result) Checked() bool { return !r.NotRun && r.Outcome.Result != nil }

// Incomplete says why the run could not be completed, was not checked or was not
// run; "" when it was completed and checked.
func (r Result) Incomplete() string {
	switch {
	case r.NotRun:
		return "not run: interrupted"
	case r.Outcome.RunErr != nil:
		return r.Outcome.RunErr.Error()
	case r.Outcome.Result == nil:
		return fmt.Sprintf("the run could not be checked (exit code %d; see the run's logs)", r.Outcome.Code)
	}
	return ""
}

// LoadRun reads the run directory back (history.LoadRun): its description, faults
// and histories.
func (r Result) LoadRun() (*history.Run, error) {
	if r.Outcome.Dir == "" {
		return nil, fmt.Errorf("matrix: %s: no run directory", r.label())
	}
	return history.LoadRun(r.Outcome.Dir)
}

// Results reads the run's results.json back (reports.Results).
func (r Result) Results() (*reports.Results, error) {
	b, err := os.ReadFile(filepath.Join(r.Outcome.Dir, reports.ResultsFile))
	if err != nil {
		return nil, err
	}
	var rs reports.Results
	if err := json.Unmarshal(b, &rs); err != nil {
		return nil, fmt.Errorf("matrix: %s: %w", reports.ResultsFile, err)
	}
	return &rs, nil
}

// FailedChecks lists the names of the checks the checker found invalid, in its order.
func (r Result) FailedChecks() []string {
	if r.Outcome.Result == nil {
		return nil
	}
	var out []string
	for _, c := range r.Outcome.Result.Checks {
		if c.Verdict == checker.Invalid {
			out = append(out, c.Name)
		}
	}
	return out
}

// FirstViolation is the run's earliest violation, its time from the run's start (-1
// when the check did not time it) and whether there is one.
func (r Result) FirstViolation() (checker.Violation, time.Duration, bool) {
	res := r.Outcome.Result
	if res == nil {
		return checker.Violation{}, 0, false
	}
	v, ok := res.FirstViolation()
	if !ok {
		return v, 0, false
	}
	at := time.Duration(-1)
	if v.Time != 0 && res.Start != 0 {
		at = time.Duration(v.Time - res.Start)
	}
	return v, at, true
}

// Injected counts the faults of run injected per kind.
func Injected(run *history.Run) map[string]int {
	out := map[string]int{}
	for _, f := range run.Faults {
		if f.Type == history.Invoke {
			out[f.Fault]++
		}
	}
	return out
}

// JUnitFile is the experiment's junit.xml, in its Out directory: one case per run.
const JUnitFile = "junit.xml"

// WriteJUnit writes the experiment's junit.xml into dir: one test case per planned run
// ("<row> (seed N)" of class "fenceline.<cmd>.<row>", with the run's time), in plan
// order. fails says why judged run i fails the experiment ("" when it does not): what
// counts as a failure is the experiment's. A run that was not judged (not completed,
// not checked, unknown) is an error, one not run is skipped.
func WriteJUnit(dir, cmd string, seeds Seeds, elapsed time.Duration, results []Result, fails func(i int, r Result) string) error {
	cases := make([]reports.MatrixCase, len(results))
	for i, r := range results {
		c := reports.MatrixCase{Name: fmt.Sprintf("%s (seed %d)", r.Name, r.Seed), Class: "fenceline." + cmd + "." + r.Name}
		if rs, err := r.Results(); err == nil {
			c.Time = rs.Run.ElapsedNS
		}
		switch v := r.Verdict(); {
		case r.NotRun:
			c.Skipped = r.Incomplete()
		case r.Incomplete() != "":
			c.Error = r.Incomplete()
		case v != checker.Valid && v != checker.Invalid:
			c.Error = "the run's verdict is " + string(v)
		default:
			c.Failure = fails(i, r)
		}
		c.Out = fmt.Sprintf("%s; %s\n", r.Verdict(), r.Outcome.Dir)
		cases[i] = c
	}
	f, err := os.Create(filepath.Join(dir, JUnitFile))
	if err != nil {
		return err
	}
	err = reports.MatrixJUnit(f, "fenceline "+cmd+" (seeds "+seeds.Range()+")", elapsed, [][2]string{{"seeds", seeds.Range()}}, cases)
	return errors.Join(err, f.Close())
}
