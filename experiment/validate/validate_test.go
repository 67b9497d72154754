//go:build chaos

package validate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/experiment/chaosrun"
	"github.com/fenceline/fenceline/experiment/matrix"
	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/harness"
	"github.com/fenceline/fenceline/internal/exitcode"
	"github.com/fenceline/fenceline/reports"
	"github.com/fenceline/fenceline/variants"
	"github.com/fenceline/fenceline/workloads"
)

// fakeRuns returns n runs of design under variant under's faults: the first detected
// ones invalid (a violation found 10s+i after the start), then unknown ones, then valid.
func fakeRuns(design, under string, n, detected, unknown int) []runRecord {
	var out []runRecord
	for i := range n {
		r := runRecord{Variant: design, Under: under, Faults: []string{faults.Pause}, Seed: int64(i + 1),
			Dir: fmt.Sprintf("runs/%s/%d", design, i+1), Verdict: checker.Valid}
		switch {
		case i < detected:
			r.Verdict = checker.Invalid
			r.FirstViolation = &violationAt{Check: checker.CheckStaleWrite, AfterStart: time.Duration(10+i) * time.Second, Description: fmt.Sprintf("stale write %d", i)}
		case i < detected+unknown:
			r.Verdict = checker.Unknown
		}
		out = append(out, r)
	}
	return out
}

// withReference is n runs of variant v (detected and unknown as in fakeRuns) and the n
// runs of the reference under v's faults, falseAlarms of them invalid and refUnknown
// unknown.
func withReference(v string, n, detected, unknown, falseAlarms, refUnknown int) []runRecord {
	return append(fakeRuns(v, v, n, detected, unknown), fakeRuns(variants.Reference, v, n, falseAlarms, refUnknown)...)
}

func mustVariant(t *testing.T, name string) variants.Variant {
	t.Helper()
	v, err := variants.ByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// measuredOnly is non-atomic-release as a variant that need not be caught: every
// variant of the table must be caught now, and the measured-only rows stay supported.
func measuredOnly(t *testing.T) variants.Variant {
	v := mustVariant(t, variants.NonAtomicRelease)
	v.Unsafe = false
	return v
}

func TestSummarizeCriteria(t *testing.T) {
	noFence, nar := mustVariant(t, variants.NoFence), measuredOnly(t)
	if !noFence.Unsafe {
		t.Fatalf("test assumes no-fence must be caught")
	}
	cases := []struct {
		name    string
		vs      []variants.Variant
		runs    []runRecord
		outcome string
		code    int
		check   func(t *testing.T, rep validateReport)
	}{
		{
			name:    "all caught, reference clean",
			vs:      []variants.Variant{noFence},
			runs:    withReference(variants.NoFence, 3, 3, 0, 0, 0),
			outcome: statusPass, code: exitcode.OK,
			check: func(t *testing.T, rep validateReport) {
				r := rep.Variants[0]
				if r.Detected != 3 || r.Rate != 1 || r.MedianToViolation != 11*time.Second || r.FirstSeed != 1 || r.FirstViolation.Description != "stale write 0" {
					t.Errorf("row %+v", r)
				}
			},
		},
		{
			name:    "94% is not enough",
			vs:      []variants.Variant{noFence},
			runs:    withReference(variants.NoFence, 50, 47, 0, 0, 0),
			outcome: statusFail, code: exitcode.Invalid,
			check: func(t *testing.T, rep validateReport) {
				if r := rep.Variants[0]; r.Rate != 0.94 || r.Status != statusFail {
					t.Errorf("row %+v", r)
				}
				if r := rep.Reference[0]; r.Status != statusPass || r.Valid != 50 {
					t.Errorf("reference %+v", r)
				}
			},
		},
		{
			name:    "96% is",
			vs:      []variants.Variant{noFence},
			runs:    withReference(variants.NoFence, 50, 48, 0, 0, 0),
			outcome: statusPass, code: exitcode.OK,
		},
		{
			name:    "a reference false alarm fails",
			vs:      []variants.Variant{noFence},
			runs:    withReference(variants.NoFence, 3, 3, 0, 1, 0),
			outcome: statusFail, code: exitcode.Invalid,
			check: func(t *testing.T, rep validateReport) {
				r := rep.Reference[0]
				if r.FalseAlarms != 1 || r.Status != statusFail || !strings.Contains(r.Note, "FALSE ALARM seed 1") || !strings.Contains(r.Note, "runs/reference/1") {
					t.Errorf("reference %+v", r)
				}
			},
		},
		{
			name:    "an unknown is not a detection",
			vs:      []variants.Variant{noFence},
			runs:    withReference(variants.NoFence, 3, 2, 1, 0, 0),
			outcome: statusFail, code: exitcode.Invalid,
			check: func(t *testing.T, rep validateReport) {
				if r := rep.Variants[0]; r.Detected != 2 || r.Unknown != 1 || r.Incomplete != 0 {
					t.Errorf("row %+v", r)
				}
			},
		},
		{
			name:    "an unknown reference run is shown, not a false alarm",
			vs:      []variants.Variant{noFence},
			runs:    withReference(variants.NoFence, 3, 3, 0, 0, 1),
			outcome: statusPass, code: exitcode.OK,
			check: func(t *testing.T, rep validateReport) {
				r := rep.Reference[0]
				if r.FalseAlarms != 0 || r.Unknown != 1 || !strings.Contains(r.Note, "unknown") {
					t.Errorf("reference %+v", r)
				}
			},
		},
		{
			name: "an incomplete variant run leaves the rate undecided",
			vs:   []variants.Variant{noFence},
			runs: func() []runRecord {
				rs := withReference(variants.NoFence, 3, 2, 0, 0, 0)
				rs[2].Verdict, rs[2].Incomplete = checker.Unknown, "harness: run incomplete: warm-up: no commit within 30s"
				return rs
			}(),
			outcome: statusUndecided, code: exitcode.Unknown,
		},
		{
			name: "an incomplete run that found a violation still counts",
			vs:   []variants.Variant{noFence},
			runs: func() []runRecord {
				rs := withReference(variants.NoFence, 3, 3, 0, 0, 0)
				rs[2].Incomplete = "interrupted"
				return rs
			}(),
			outcome: statusPass, code: exitcode.OK,
		},
		{
			name: "misses beyond what incomplete runs could make up fail",
			vs:   []variants.Variant{noFence},
			runs: func() []runRecord {
				rs := withReference(variants.NoFence, 3, 1, 0, 0, 0)
				rs[2].Verdict, rs[2].Incomplete = "", "not run: interrupted"
				return rs
			}(),
			outcome: statusFail, code: exitcode.Invalid,
		},
		{
			name: "an incomplete reference run is undecided",
			vs:   []variants.Variant{noFence},
			runs: func() []runRecord {
				rs := withReference(variants.NoFence, 3, 3, 0, 0, 0)
				rs[5].Incomplete = "not run: interrupted"
				return rs
			}(),
			outcome: statusUndecided, code: exitcode.Unknown,
		},
		{
			name:    "a variant that need not be caught is measured only",
			vs:      []variants.Variant{nar},
			runs:    withReference(variants.NonAtomicRelease, 3, 0, 0, 0, 0),
			outcome: statusPass, code: exitcode.OK,
			check: func(t *testing.T, rep validateReport) {
				if r := rep.Variants[0]; r.Status != statusMeasured || r.Rate != 0 {
					t.Errorf("row %+v", r)
				}
				notes := rep.measuredNotes()
				if len(notes) != 1 || !strings.Contains(notes[0], "nothing unsafe was accepted") {
					t.Errorf("notes %q", notes)
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep := summarize(c.vs, c.runs)
			if rep.Outcome != c.outcome || rep.exitCode() != c.code {
				t.Errorf("outcome %s (exit %d), want %s (exit %d)\nvariants %+v\nreference %+v",
					rep.Outcome, rep.exitCode(), c.outcome, c.code, rep.Variants, rep.Reference)
			}
			if c.check != nil {
				c.check(t, rep)
			}
		})
	}
}

func TestPlanMatrix(t *testing.T) {
	vs := []variants.Variant{mustVariant(t, variants.NoFence), mustVariant(t, variants.VolatileRedis)}
	plan, err := planMatrix(vs, matrix.Seeds{First: 4, Count: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan) != 8 {
		t.Fatalf("%d runs, want 8: %+v", len(plan), plan)
	}
	for i := 0; i < len(plan); i += 2 {
		v, ref := plan[i], plan[i+1]
		if v.Variant != v.Under || ref.Variant != variants.Reference || ref.Under != v.Under || ref.Seed != v.Seed {
			t.Errorf("runs %d, %d: %+v %+v", i, i+1, v, ref)
		}
		// --seed 4 --seeds 2: seeds 4 and 5, for each variant.
		if want := int64(4 + i/2%2); v.Seed != want {
			t.Errorf("run %d: seed %d, want %d", i, v.Seed, want)
		}
	}
	if got := strings.Join(plan[0].Faults, ","); got != "delay,fp-late-commit" {
		t.Errorf("no-fence faults %q", got)
	}
	if got := strings.Join(plan[1].Faults, ","); got != "delay,fp-late-commit" {
		t.Errorf("reference under no-fence: faults %q", got)
	}
	// The reference keeps its persistent Redis: the same restarts, with the append-only file.
	if got := strings.Join(plan[4].Faults, ","); got != faults.RedisRestartVolatile {
		t.Errorf("volatile-redis faults %q", got)
	}
	if got := strings.Join(plan[5].Faults, ","); got != faults.RedisRestart {
		t.Errorf("reference under volatile-redis: faults %q", got)
	}
	if plan[5].dirName() != "reference-under-volatile-redis" || plan[4].dirName() != "volatile-redis" {
		t.Errorf("dir names %q %q", plan[4].dirName(), plan[5].dirName())
	}
}

func TestRunMatrixInterrupted(t *testing.T) {
	plan, err := planMatrix([]variants.Variant{mustVariant(t, variants.NoFence)}, matrix.Seeds{Count: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	var progress bytes.Buffer
	d := &matrix.Driver{Cmd: "validate", Out: t.TempDir(), Progress: &progress}
	d.Exec = func(ctx context.Context, r matrix.Run) chaosrun.Outcome {
		calls++
		if calls == 2 {
			// Ctrl-C during the second run: the harness returns an incomplete run.
			cancel()
			return chaosrun.Outcome{Dir: "d2", Code: exitcode.Unknown, RunErr: fmt.Errorf("%w: %v", harness.ErrIncomplete, context.Canceled),
				Result: &checker.Result{Verdict: checker.Unknown}}
		}
		return chaosrun.Outcome{Dir: "d1", Code: exitcode.Invalid, Result: &checker.Result{Verdict: checker.Invalid, Start: 1,
			Checks: []checker.CheckResult{{Name: checker.CheckStaleWrite, Verdict: checker.Invalid, FirstViolation: 1 + int64(5*time.Second), Offending: []string{"n1 commit"}}}}}
	}
	runs, results, err := runMatrix(ctx, d, chaosrun.Spec{}, plan)
	if err != nil {
		t.Fatal(err)
	}
	// junit.xml: the caught variant passes, the interrupted run is an error, the runs
	// not made are skipped; a reference judged invalid would be a false alarm.
	fails := failsValidate(plan)
	if f := fails(0, results[0]); f != "" {
		t.Errorf("a caught variant fails validate: %q", f)
	}
	ref := slices.IndexFunc(plan, func(p plannedRun) bool { return p.Variant == variants.Reference })
	if f := fails(ref, results[0]); !strings.HasPrefix(f, "false alarm: the reference was judged invalid (no-stale-write)") {
		t.Errorf("an invalid reference: %q", f)
	}
	if err := matrix.WriteJUnit(d.Dir(), "validate", matrix.Seeds{Count: 2}, time.Minute, results, fails); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(d.Dir(), matrix.JUnitFile)); err != nil ||
		!strings.Contains(string(b), `tests="4" failures="0" errors="1" skipped="2"`) || !strings.Contains(string(b), `name="no-fence (seed 1)" classname="fenceline.validate.no-fence"`) {
		t.Errorf("junit.xml (%v):\n%s", err, b)
	}
	if calls != 2 || len(runs) != 4 {
		t.Fatalf("%d calls, %d records", calls, len(runs))
	}
	if r := runs[0]; !r.detected() || r.FirstViolation == nil || r.FirstViolation.AfterStart != 5*time.Second || r.FirstViolation.Description != "n1 commit" {
		t.Errorf("first run %+v %+v", r, r.FirstViolation)
	}
	if r := runs[1]; !r.undecided() || !strings.Contains(r.Incomplete, "incomplete") {
		t.Errorf("interrupted run %+v", r)
	}
	for _, r := range runs[2:] {
		if r.Incomplete != "not run: interrupted" || r.Dir != "" {
			t.Errorf("run not made %+v", r)
		}
	}
	rep := summarize([]variants.Variant{mustVariant(t, variants.NoFence)}, runs)
	if rep.exitCode() != exitcode.Unknown {
		t.Errorf("exit %d, want %d: %+v %+v", rep.exitCode(), exitcode.Unknown, rep.Variants, rep.Reference)
	}
	if !strings.Contains(progress.String(), "[1/4]") {
		t.Errorf("progress:\n%s", progress.String())
	}
}

func TestRecordResult(t *testing.T) {
	p := plannedRun{Variant: variants.Reference, Under: variants.NoFence, Faults: []string{faults.Pause}, Seed: 7}
	result := func(o chaosrun.Outcome) matrix.Result { return matrix.Result{Outcome: o} }
	r := recordResult(p, result(chaosrun.Outcome{Code: exitcode.Usage, RunErr: errors.New("harness: Config.Dir and Start are required")}))
	if !r.undecided() || r.Verdict != "" {
		t.Errorf("%+v", r)
	}
	r = recordResult(p, result(chaosrun.Outcome{Dir: "x", Code: exitcode.Usage}))
	if !r.undecided() || !strings.Contains(r.Incomplete, "could not be checked") {
		t.Errorf("%+v", r)
	}
	r = recordResult(p, matrix.Result{NotRun: true})
	if !r.undecided() || r.Incomplete != "not run: interrupted" {
		t.Errorf("%+v", r)
	}
	res := &checker.Result{Verdict: checker.Valid, Overlaps: []checker.Overlap{{Duration: time.Second}, {Duration: 3 * time.Second}}}
	r = recordResult(p, result(chaosrun.Outcome{Dir: "x", Result: res}))
	if r.undecided() || r.detected() || r.Overlaps != 2 || r.LongestOverlap != 3*time.Second || r.FirstViolation != nil {
		t.Errorf("%+v", r)
	}
	// A run stopped at its violation says so, from its results.json.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, reports.ResultsFile), []byte(`{"run": {"stopped_at_violation": "lease-exclusion at t+4.640s"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r = recordResult(p, result(chaosrun.Outcome{Dir: dir, Code: exitcode.Invalid, Result: &checker.Result{Verdict: checker.Invalid}}))
	if r.StoppedAtViolation != "lease-exclusion at t+4.640s" || !strings.Contains(r.line(), "chaos stopped at it") {
		t.Errorf("stopped run: %+v, line %q", r, r.line())
	}
}

func TestValidateReportFiles(t *testing.T) {
	vs := []variants.Variant{mustVariant(t, variants.NoFence), measuredOnly(t)}
	runs := withReference(variants.NoFence, 3, 3, 0, 0, 0)
	runs = append(runs, fakeRuns(variants.NonAtomicRelease, variants.NonAtomicRelease, 3, 0, 0)...)
	runs = append(runs, fakeRuns(variants.Reference, variants.NonAtomicRelease, 3, 0, 0)...)
	runs[0].FirstViolation.Description = "a | pipe and *stars* that must not break the table"
	rep := summarize(vs, runs)
	rep.Seed, rep.Seeds, rep.Duration, rep.Command = 2, 3, time.Minute, "fenceline validate --seed 2"
	out := t.TempDir()
	if err := rep.save(out); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(out, Markdown))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# fenceline validate: pass", "| no-fence ", "non-atomic-release", `a \| pipe and \*stars\*`, "Measured, not judged", "(runs/no-fence/1/report.md)", "Seeds 2..4,"} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("validate.md lacks %q:\n%s", want, md)
		}
	}
	var back validateReport
	b, err := os.ReadFile(filepath.Join(out, JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Outcome != statusPass || len(back.Runs) != 12 || back.Variants[0].Detected != 3 || back.MinRate != MinDetectionRate {
		t.Errorf("validate.json: %+v", back)
	}
	var term bytes.Buffer
	rep.write(&term, false)
	if !strings.Contains(term.String(), "BROKEN VARIANTS") || !strings.Contains(term.String(), "│ no-fence") {
		t.Errorf("terminal table:\n%s", term.String())
	}
}

func TestPickVariants(t *testing.T) {
	all, err := PickVariants("all")
	if err != nil || len(all) != len(variants.All())-1-len(zooOnly()) {
		t.Fatalf("all: %v %d", err, len(all))
	}
	// The zoo's own variants are measured by --zoo, not required by the self-validation,
	// and run when named.
	for _, v := range all {
		if variants.ZooOnly(v.Name) {
			t.Errorf("all holds the zoo's %s", v.Name)
		}
	}
	if named, err := PickVariants(variants.LateToken); err != nil || len(named) != 1 {
		t.Errorf("a zoo variant by name: %v %v", named, err)
	}
	got, err := PickVariants(" lease-only, no-fence,lease-only ")
	if err != nil || len(got) != 2 || got[0].Name != variants.LeaseOnly || got[1].Name != variants.NoFence {
		t.Errorf("list: %v %+v", err, got)
	}
}

func zooOnly() []string {
	var out []string
	for _, v := range variants.All() {
		if variants.ZooOnly(v.Name) {
			out = append(out, v.Name)
		}
	}
	return out
}

// --stop-at-violation reaches every run's spec, and the report says what it does to the
// overlaps; without it the runs run their course.
func TestStopAtViolation(t *testing.T) {
	for _, stop := range []bool{false, true} {
		if got := baseSpec(Config{StopAtViolation: stop}, workloads.Workload{}).StopAtViolation; got != stop {
			t.Errorf("Config.StopAtViolation %v: the runs' spec has %v", stop, got)
		}
		rep := summarize([]variants.Variant{mustVariant(t, variants.NoFence)}, withReference(variants.NoFence, 1, 1, 0, 0, 0))
		rep.StopAtViolation = stop
		var md bytes.Buffer
		rep.write(&md, true)
		if said := strings.Contains(md.String(), "`--stop-at-violation`"); said != stop {
			t.Errorf("stop %v: the report says so: %v:\n%s", stop, said, md.String())
		}
	}
}
