//go:build chaos

// Package validate is fenceline's self-validation: a checker that cannot fail proves
// nothing. It runs each deliberately broken variant under the faults that expose it, for
// seeds N..N+K-1, and the reference under the same faults and seeds, and judges the
// detection rates: every variant that must be caught is found invalid in at least
// MinDetectionRate of its runs, and the reference never is (no false alarm). It writes
// validate.md and validate.json. It exists in chaos builds only.
package validate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/experiment/chaosrun"
	"github.com/fenceline/fenceline/experiment/matrix"
	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/internal/exitcode"
	"github.com/fenceline/fenceline/internal/namelist"
	"github.com/fenceline/fenceline/variants"
	"github.com/fenceline/fenceline/workloads"
)

// MinDetectionRate is the share of its runs in which a variant that must be caught
// (variants.Variant.Unsafe) has to be found invalid.
const MinDetectionRate = 0.95

// Files Run writes into Config.Out.
const (
	Markdown = "validate.md"
	JSONFile = "validate.json"
)

// Config is one self-validation: the matrix of broken variants and seeds, and the
// settings every run shares.
type Config struct {
	// Variants are the broken variants to run (see PickVariants).
	Variants []variants.Variant
	// Seed is the first seed: runs use seeds Seed..Seed+Seeds-1. Default (0): 1.
	Seed int64
	// Seeds is how many seeds each variant runs (>= 1).
	Seeds int
	// Duration is each run's chaos phase (> 0).
	Duration time.Duration
	// LeaseTTL is the election's lease; Nodes the number of nodes.
	LeaseTTL time.Duration
	Nodes    int
	// Out receives the runs, validate.md and validate.json.
	Out string
	// Parallel is how many runs run at once, each on its own Redis, ports and
	// processes. Default (0): 1.
	Parallel int
	// Command is the command line, for the report.
	Command string
	// StopAtViolation ends each run's chaos phase at the first violation a check of its
	// history so far finds (chaos --stop-at-violation): enough to tell whether a variant
	// is caught, and when. The zoo's runs always stop so; the overlaps counted are then
	// those before the stop.
	StopAtViolation bool
}

// baseSpec is the spec every run of cfg's matrix starts from, before its variant,
// faults and seed.
func baseSpec(cfg Config, wl workloads.Workload) chaosrun.Spec {
	return chaosrun.Spec{
		Cmd: "validate", Duration: cfg.Duration, Nodes: cfg.Nodes, Workload: wl, Backend: "local",
		LeaseTTL: cfg.LeaseTTL, Variant: variants.Reference, Quiet: true, StopAtViolation: cfg.StopAtViolation,
	}
}

// Run runs the self-validation matrix: each broken variant under the faults that
// expose it, for seeds N..N+K-1, and the reference under the same faults and seeds. It
// prints the table to stdout and the progress to stderr, writes validate.md and
// validate.json into cfg.Out, and returns the exit code: 0 when the reference raised no
// false alarm and every variant that must be caught was caught in at least
// MinDetectionRate of its runs, 1 when not, 2 for a usage error, and 3 when runs could
// not be completed and the criteria depend on them. It blocks; once ctx is done it stops
// the run under way (the harness heals and cleans up), skips the rest and still writes
// the table of what ran.
func Run(ctx context.Context, cfg Config, stdout, stderr io.Writer) int {
	seeds := matrix.Seeds{First: cfg.Seed, Count: cfg.Seeds}
	if seeds.Check() != nil || cfg.Duration <= 0 || len(cfg.Variants) == 0 {
		fmt.Fprintln(stderr, "fenceline validate: need --seeds >= 1, --seed >= 1, --duration > 0 and a variant")
		return exitcode.Usage
	}
	wl, err := workloads.ByName("listener")
	if err != nil {
		fmt.Fprintf(stderr, "fenceline validate: %v\n", err)
		return exitcode.Usage
	}
	plan, err := planMatrix(cfg.Variants, seeds)
	if err != nil {
		fmt.Fprintf(stderr, "fenceline validate: %v\n", err)
		return exitcode.Usage
	}
	// Every run is what `fenceline chaos --variant V --nemesis <V's faults> --seed S`
	// runs with the same flags; only where its directory goes differs.
	base := baseSpec(cfg, wl)
	if err := base.Prepare(); err != nil {
		fmt.Fprintf(stderr, "fenceline validate: %v\n", err)
		return exitcode.Usage
	}
	began := time.Now()
	d := &matrix.Driver{Cmd: "validate", Out: cfg.Out, Progress: stderr, RunLog: stderr, Parallel: cfg.Parallel}
	runs, results, err := runMatrix(ctx, d, base, plan)
	if err != nil {
		fmt.Fprintf(stderr, "fenceline validate: %v\n", err)
		return exitcode.Usage
	}
	out := d.Dir()
	if err := matrix.WriteJUnit(out, "validate", seeds, time.Since(began), results, failsValidate(plan)); err != nil {
		fmt.Fprintf(stderr, "fenceline validate: %v\n", err)
		return exitcode.Unknown
	}
	for i := range runs {
		runs[i].Dir = d.Rel(runs[i].Dir) // as validate.md links them
	}
	rep := summarize(cfg.Variants, runs)
	rep.matrixHeader, rep.StopAtViolation = newMatrixHeader(cfg, seeds, began), cfg.StopAtViolation

	var term bytes.Buffer
	rep.write(&term, false)
	_, _ = stdout.Write(term.Bytes())
	if err := rep.save(out); err != nil {
		fmt.Fprintf(stderr, "fenceline validate: %v\n", err)
		return exitcode.Unknown
	}
	fmt.Fprintf(stdout, "\nreport: %s\n", filepath.Join(out, Markdown))
	return rep.exitCode()
}

// BrokenNames lists the variants of the self-validation: all but the reference and the
// zoo's own (variants.ZooOnly: `--zoo` measures those).
func BrokenNames() []string {
	var out []string
	for _, v := range variants.All() {
		if v.Name != variants.Reference && !variants.ZooOnly(v.Name) {
			out = append(out, v.Name)
		}
	}
	return out
}

// PickVariants parses --variants: "all" (BrokenNames) or a comma-separated list of broken
// variants, the zoo's included.
func PickVariants(list string) ([]variants.Variant, error) {
	return namelist.Pick("variants", list, BrokenNames(), func(n string) (variants.Variant, error) {
		if n == variants.Reference {
			return variants.Variant{}, fmt.Errorf("--variants: the reference runs under every variant's faults anyway; list broken variants only")
		}
		return variants.ByName(n)
	})
}

// plannedRun is one run of the matrix before it runs.
type plannedRun struct {
	// Variant is the design that runs: a broken variant, or the reference.
	Variant string
	// Under is the broken variant whose faults and seed the run uses.
	Under  string
	Faults []string
	Seed   int64
	// Store and Workload are the Under variant's (see variants.Variant): "" for Redis and
	// the listener workload; Takeover its takeover on disconnect.
	Store, Workload string
	Takeover        bool
}

// dirName is the directory, under --out/runs, that receives the run directory.
func (p plannedRun) dirName() string {
	if p.Variant == p.Under {
		return p.Variant
	}
	return p.Variant + "-under-" + p.Under
}

// planMatrix lists the runs: for each variant and seed, the variant, then the
// reference with the same seed and faults (as variants.Variant.ReferenceFaults says:
// the reference always keeps its persistent Redis).
func planMatrix(vs []variants.Variant, seeds matrix.Seeds) ([]plannedRun, error) {
	var out []plannedRun
	for _, v := range vs {
		own, err := faults.ParseList(strings.Join(v.Faults, ","))
		if err != nil {
			return nil, fmt.Errorf("variant %s: %w", v.Name, err)
		}
		refFaults, err := faults.ParseList(strings.Join(v.ReferenceFaults(), ","))
		if err != nil {
			return nil, fmt.Errorf("variant %s: %w", v.Name, err)
		}
		for _, s := range seeds.List() {
			out = append(out,
				plannedRun{Variant: v.Name, Under: v.Name, Faults: own, Seed: s, Store: v.Store, Workload: v.Workload, Takeover: v.Takeover},
				plannedRun{Variant: variants.Reference, Under: v.Name, Faults: refFaults, Seed: s, Store: v.Store, Workload: v.Workload, Takeover: v.Takeover})
		}
	}
	return out, nil
}

// runMatrix runs plan in order with d, each run base with the run's variant, faults,
// seed, store and workload, and records each outcome; d prints a line per run to its
// Progress. Once ctx is done, the runs left are recorded as not run.
func runMatrix(ctx context.Context, d *matrix.Driver, base chaosrun.Spec, plan []plannedRun) ([]runRecord, []matrix.Result, error) {
	runs := make([]matrix.Run, len(plan))
	for i, p := range plan {
		s := base
		s.Variant, s.Nemeses, s.Store, s.Takeover = p.Variant, p.Faults, p.Store, p.Takeover
		if p.Workload != "" {
			wl, err := workloads.ByName(p.Workload)
			if err != nil {
				return nil, nil, err
			}
			s.Workload = wl
		}
		runs[i] = matrix.Run{Row: matrix.Row{Name: p.dirName(), Spec: s}, Seed: p.Seed,
			Label: fmt.Sprintf("%s, faults %s, seed %d", p.Variant, strings.Join(p.Faults, ","), p.Seed)}
	}
	d.Done = func(i int, r matrix.Result) string { return recordResult(plan[i], r).line() }
	results, err := d.Execute(ctx, runs)
	if err != nil {
		return nil, nil, err
	}
	out := make([]runRecord, len(plan))
	for i, r := range results {
		out[i] = recordResult(plan[i], r)
	}
	return out, results, nil
}

// failsValidate says why run i fails validate: a broken variant fails it by passing,
// the reference by failing.
func failsValidate(plan []plannedRun) func(int, matrix.Result) string {
	return func(i int, r matrix.Result) string {
		switch p := plan[i]; {
		case p.Variant == variants.Reference && r.Verdict() != checker.Valid:
			return "false alarm: the reference was judged " + string(r.Verdict()) + " (" + strings.Join(r.FailedChecks(), ", ") + ")"
		case p.Variant != variants.Reference && r.Verdict() != checker.Invalid:
			return "missed: the broken variant " + p.Variant + " was judged " + string(r.Verdict())
		}
		return ""
	}
}

// runRecord is one run of the matrix and what came of it, as validate.json lists it.
type runRecord struct {
	// Variant is the design that ran; Under the variant whose faults and seed it used.
	Variant string   `json:"variant"`
	Under   string   `json:"under"`
	Faults  []string `json:"faults"`
	Seed    int64    `json:"seed"`
	// Dir is the run directory (relative to --out in validate.json); "" if none.
	Dir string `json:"dir,omitempty"`
	// Verdict is the checker's verdict; "" if the run was not checked.
	Verdict checker.Verdict `json:"verdict,omitempty"`
	// Incomplete says why the run could not be completed, or was not run; "" if it was.
	Incomplete string `json:"incomplete,omitempty"`
	// FirstViolation is the earliest violation of an invalid run.
	FirstViolation *violationAt `json:"first_violation,omitempty"`
	// Overlaps counts the leadership overlaps the checker measured; LongestOverlap is
	// the longest. In a run stopped at its violation, only those before the stop.
	Overlaps       int           `json:"overlaps"`
	LongestOverlap time.Duration `json:"longest_overlap_ns"`
	// StoppedAtViolation is what ended the run's chaos phase early (the zoo's runs,
	// chaosrun.Spec.StopAtViolation); "" for a run that ran its course.
	StoppedAtViolation string `json:"stopped_at_violation,omitempty"`
}

// violationAt is a run's first violation, timed from the run's start.
type violationAt struct {
	Check string `json:"check"`
	// AfterStart is the time from the run's start (the cluster's start, before the
	// warm-up) to the violation; -1 when the check did not time it.
	AfterStart  time.Duration `json:"after_start_ns"`
	Description string        `json:"description"`
}

func newRecord(p plannedRun) runRecord {
	return runRecord{Variant: p.Variant, Under: p.Under, Faults: p.Faults, Seed: p.Seed}
}

// recordResult turns a run's result into its record. Its verdict is the checker's: a
// violation found in a run that could not be completed still counts.
func recordResult(p plannedRun, r matrix.Result) runRecord {
	rec := newRecord(p)
	rec.Dir, rec.Incomplete = r.Outcome.Dir, r.Incomplete()
	if !r.Checked() {
		return rec
	}
	res := r.Outcome.Result
	rec.Verdict = res.Verdict
	if v, at, ok := r.FirstViolation(); ok {
		rec.FirstViolation = &violationAt{Check: v.Check, AfterStart: at, Description: v.Description}
	}
	rec.Overlaps = len(res.Overlaps)
	for _, ov := range res.Overlaps {
		rec.LongestOverlap = max(rec.LongestOverlap, ov.Duration)
	}
	if rs, err := r.Results(); err == nil {
		rec.StoppedAtViolation = rs.Run.StoppedAtViolation
	}
	return rec
}

// detected: the checker found the run invalid.
func (r runRecord) detected() bool { return r.Verdict == checker.Invalid }

// undecided: the run was not completed, or not checked, and found nothing invalid: it
// cannot count either way.
func (r runRecord) undecided() bool {
	return !r.detected() && (r.Incomplete != "" || r.Verdict == "")
}

// line sums a run up for the progress log.
func (r runRecord) line() string {
	var b strings.Builder
	b.WriteString(r.Variant)
	switch {
	case r.Under == zooUnder:
		b.WriteString(" at the default settings")
	case r.Variant != r.Under:
		fmt.Fprintf(&b, " under %s's faults", r.Under)
	}
	fmt.Fprintf(&b, ", seed %d: ", r.Seed)
	switch {
	case r.Verdict == "":
		b.WriteString("not checked")
	default:
		b.WriteString(string(r.Verdict))
	}
	if v := r.FirstViolation; v != nil {
		fmt.Fprintf(&b, " (%s at %s)", v.Check, fmtAt(v.AfterStart))
	}
	if r.StoppedAtViolation != "" {
		b.WriteString("; chaos stopped at it")
	}
	if r.Incomplete != "" {
		fmt.Fprintf(&b, "; incomplete: %s", r.Incomplete)
	}
	if r.Dir != "" {
		fmt.Fprintf(&b, "; %s", r.Dir)
	}
	return b.String()
}

// Criterion statuses of a row.
const (
	statusPass      = "pass"
	statusFail      = "FAIL"
	statusUndecided = "undecided"
	statusMeasured  = "measured" // a variant that need not be caught
)

// variantRow is a broken variant's line of the table.
type variantRow struct {
	Variant string   `json:"variant"`
	Unsafe  bool     `json:"must_be_caught"`
	Faults  []string `json:"faults"`
	// Runs counts the planned runs; Detected those found invalid; Unknown the
	// completed runs with an unknown verdict (not detections); Incomplete the runs
	// not completed (or not run) that found nothing invalid.
	Runs       int     `json:"runs"`
	Detected   int     `json:"detected"`
	Unknown    int     `json:"unknown"`
	Incomplete int     `json:"incomplete"`
	Rate       float64 `json:"detection_rate"`
	// MedianToViolation is the median, over detected runs, of the time from the run's
	// start to its first violation (nearest rank); 0 when no run was timed.
	MedianToViolation time.Duration `json:"median_to_first_violation_ns"`
	// FirstViolation is the first violation of the first detected run (by seed).
	FirstViolation *violationAt  `json:"first_violation,omitempty"`
	FirstSeed      int64         `json:"first_violation_seed,omitempty"`
	Overlaps       int           `json:"overlaps"`
	LongestOverlap time.Duration `json:"longest_overlap_ns"`
	Status         string        `json:"status"`
}

// referenceRow is the reference's line under one variant's faults.
type referenceRow struct {
	Under  string   `json:"under"`
	Faults []string `json:"faults"`
	// Runs counts the planned runs; Valid the completed valid ones; FalseAlarms those
	// found invalid; Unknown the completed runs with an unknown verdict (shown, not
	// failures); Incomplete those not completed (or not run) that found nothing invalid.
	Runs           int           `json:"runs"`
	Valid          int           `json:"valid"`
	FalseAlarms    int           `json:"false_alarms"`
	Unknown        int           `json:"unknown"`
	Incomplete     int           `json:"incomplete"`
	Overlaps       int           `json:"overlaps"`
	LongestOverlap time.Duration `json:"longest_overlap_ns"`
	// Note names the first false alarm, or else the first unknown or incomplete run.
	Note   string `json:"note,omitempty"`
	Status string `json:"status"`
}

// matrixHeader is what validate.json and zoo.json say of the matrix that ran.
type matrixHeader struct {
	Command  string        `json:"command"`
	Started  string        `json:"started"`
	Elapsed  time.Duration `json:"elapsed_ns"`
	Seed     int64         `json:"first_seed"`
	Seeds    int           `json:"seeds"`
	Duration time.Duration `json:"duration_ns"`
	LeaseTTL time.Duration `json:"lease_ttl_ns"`
	Nodes    int           `json:"nodes"`
}

// newMatrixHeader is the header of cfg's matrix, begun at began and ending now.
func newMatrixHeader(cfg Config, seeds matrix.Seeds, began time.Time) matrixHeader {
	return matrixHeader{Command: cfg.Command, Started: began.UTC().Format(time.RFC3339), Elapsed: time.Since(began).Round(time.Second),
		Seed: seeds.From(), Seeds: cfg.Seeds, Duration: cfg.Duration, LeaseTTL: cfg.LeaseTTL, Nodes: cfg.Nodes}
}

// validateReport is validate.json.
type validateReport struct {
	matrixHeader
	// StopAtViolation: each run's chaos phase ended at its first violation (Config).
	StopAtViolation bool           `json:"stop_at_violation,omitempty"`
	MinRate         float64        `json:"min_detection_rate"`
	Outcome         string         `json:"outcome"` // pass, FAIL or undecided
	Variants        []variantRow   `json:"variants"`
	Reference       []referenceRow `json:"reference"`
	Runs            []runRecord    `json:"runs"`
}

// summarize builds the rows and judges the criteria from the runs' records.
func summarize(vs []variants.Variant, runs []runRecord) validateReport {
	rep := validateReport{MinRate: MinDetectionRate, Runs: runs}
	for _, v := range vs {
		row := variantRow{Variant: v.Name, Unsafe: v.Unsafe}
		ref := referenceRow{Under: v.Name}
		var times []time.Duration
		for _, r := range runs {
			if r.Under != v.Name {
				continue
			}
			if r.Variant == v.Name {
				row.Faults = r.Faults
				row.Runs++
				row.Overlaps += r.Overlaps
				row.LongestOverlap = max(row.LongestOverlap, r.LongestOverlap)
				switch {
				case r.detected():
					row.Detected++
					if fv := r.FirstViolation; fv != nil {
						if fv.AfterStart >= 0 {
							times = append(times, fv.AfterStart)
						}
						if row.FirstViolation == nil {
							row.FirstViolation, row.FirstSeed = fv, r.Seed
						}
					}
				case r.undecided():
					row.Incomplete++
				case r.Verdict == checker.Unknown:
					row.Unknown++
				}
				continue
			}
			ref.Faults = r.Faults
			ref.Runs++
			ref.Overlaps += r.Overlaps
			ref.LongestOverlap = max(ref.LongestOverlap, r.LongestOverlap)
			switch {
			case r.detected():
				ref.FalseAlarms++
				if ref.FalseAlarms == 1 {
					ref.Note = fmt.Sprintf("FALSE ALARM seed %d: %s (%s)", r.Seed, describeViolation(r.FirstViolation), r.Dir)
				}
			case r.undecided():
				ref.Incomplete++
				if ref.Note == "" {
					ref.Note = fmt.Sprintf("seed %d incomplete: %s (%s)", r.Seed, r.Incomplete, r.Dir)
				}
			case r.Verdict == checker.Unknown:
				ref.Unknown++
				if ref.Note == "" {
					ref.Note = fmt.Sprintf("seed %d unknown: the checker could not decide (%s)", r.Seed, r.Dir)
				}
			default:
				ref.Valid++
			}
		}
		if row.Runs > 0 {
			row.Rate = float64(row.Detected) / float64(row.Runs)
		}
		row.MedianToViolation = checker.Summarize(times).P50 // nearest rank
		row.Status = variantStatus(row)
		ref.Status = referenceStatus(ref)
		rep.Variants = append(rep.Variants, row)
		rep.Reference = append(rep.Reference, ref)
	}
	rep.Outcome = statusPass
	for _, s := range rep.statuses() {
		switch {
		case s == statusFail:
			rep.Outcome = statusFail
		case s == statusUndecided && rep.Outcome == statusPass:
			rep.Outcome = statusUndecided
		}
	}
	return rep
}

// variantStatus judges a variant's row: one that must be caught passes when its
// detections alone reach the rate, fails when they cannot reach it even if every
// undecided run had been a detection, and is undecided in between.
func variantStatus(r variantRow) string {
	switch {
	case !r.Unsafe:
		return statusMeasured
	case r.Runs == 0:
		return statusUndecided
	case float64(r.Detected)/float64(r.Runs) >= MinDetectionRate:
		return statusPass
	case float64(r.Detected+r.Incomplete)/float64(r.Runs) < MinDetectionRate:
		return statusFail
	}
	return statusUndecided
}

// referenceStatus judges the reference's row: any false alarm fails; a run that could
// not be completed leaves it undecided; unknown verdicts are shown but do not fail.
func referenceStatus(r referenceRow) string {
	switch {
	case r.FalseAlarms > 0:
		return statusFail
	case r.Incomplete > 0 || r.Runs == 0:
		return statusUndecided
	}
	return statusPass
}

func (rep validateReport) statuses() []string {
	var out []string
	for _, r := range rep.Variants {
		out = append(out, r.Status)
	}
	for _, r := range rep.Reference {
		out = append(out, r.Status)
	}
	return out
}

// exitCode is validate's exit code for the report.
func (rep validateReport) exitCode() int {
	switch rep.Outcome {
	case statusPass:
		return exitcode.OK
	case statusFail:
		return exitcode.Invalid
	}
	return exitcode.Unknown
}

// seeds are the report's seeds.
func (rep validateReport) seeds() matrix.Seeds {
	return matrix.Seeds{First: rep.Seed, Count: rep.Seeds}
}

// save writes validate.md and validate.json into out.
func (rep validateReport) save(out string) error {
	var md bytes.Buffer
	rep.write(&md, true)
	if err := os.WriteFile(filepath.Join(out, Markdown), md.Bytes(), 0o644); err != nil {
		return err
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, JSONFile), append(b, '\n'), 0o644)
}

// write renders the report: GitHub Markdown, or boxed tables for a terminal.
func (rep validateReport) write(w *bytes.Buffer, markdown bool) {
	table := func(t matrix.Table) {
		if markdown {
			t.Markdown(w)
		} else {
			t.Terminal(w)
		}
	}
	h := func(title string) {
		if markdown {
			fmt.Fprintf(w, "\n## %s\n\n", title)
		} else {
			fmt.Fprintf(w, "\n%s\n", strings.ToUpper(title))
		}
	}
	if markdown {
		fmt.Fprintf(w, "# fenceline validate: %s\n\n", rep.Outcome)
		fmt.Fprintf(w, "`%s` — started %s, took %s. Seeds %s, %s of chaos per run, lease TTL %s, %d nodes.\n",
			rep.Command, rep.Started, rep.Elapsed, rep.seeds().Range(), rep.Duration, rep.LeaseTTL, rep.Nodes)
	} else {
		fmt.Fprintf(w, "fenceline validate: %s\nSeeds %s, %s of chaos per run, lease TTL %s, %d nodes; took %s.\n",
			rep.Outcome, rep.seeds().Range(), rep.Duration, rep.LeaseTTL, rep.Nodes, rep.Elapsed)
	}
	if rep.StopAtViolation {
		fmt.Fprintln(w, "A run's chaos phase ends at the first violation a check of its history so far finds (`--stop-at-violation`): its overlaps are those before it.")
	}

	h("Broken variants")
	fmt.Fprintf(w, "Each under the faults that expose it. A run is a detection when the checker finds it invalid (unknown is not). Variants that must be caught need a detection rate of at least %.0f%%.\n\n", 100*MinDetectionRate)
	vt := matrix.Table{
		Header: []string{"variant", "must catch", "faults", "runs", "detected", "rate", "unknown/incomplete",
			"median to 1st violation", "overlaps", "status", "first violation"},
		Right: []bool{false, false, false, true, true, true, true, true, false, false, false},
	}
	for _, r := range rep.Variants {
		must := "yes"
		if !r.Unsafe {
			must = "no"
		}
		first := "—"
		if r.FirstViolation != nil {
			first = fmt.Sprintf("seed %d, %s", r.FirstSeed, describeViolation(r.FirstViolation))
		}
		vt.Add(r.Variant, must, strings.Join(r.Faults, ", "), strconv.Itoa(r.Runs),
			strconv.Itoa(r.Detected), fmt.Sprintf("%.0f%%", 100*r.Rate), strconv.Itoa(r.Unknown+r.Incomplete),
			fmtMedian(r.MedianToViolation, r.Detected), fmtOverlaps(r.Overlaps, r.LongestOverlap), r.Status, clip(first, markdown))
	}
	table(vt)

	h("Reference under the same faults and seeds")
	fmt.Fprintf(w, "Any invalid verdict is a false alarm and fails validation; an unknown verdict is shown, not counted as one.\n\n")
	rt := matrix.Table{
		Header: []string{"faults of", "faults", "runs", "valid", "false alarms", "unknown", "incomplete", "overlaps", "status", "note"},
		Right:  []bool{false, false, true, true, true, true, true, false, false, false},
	}
	for _, r := range rep.Reference {
		rt.Add(r.Under, strings.Join(r.Faults, ", "), strconv.Itoa(r.Runs), strconv.Itoa(r.Valid),
			strconv.Itoa(r.FalseAlarms), strconv.Itoa(r.Unknown), strconv.Itoa(r.Incomplete),
			fmtOverlaps(r.Overlaps, r.LongestOverlap), r.Status, clip(matrix.OrDash(r.Note), markdown))
	}
	table(rt)

	if notes := rep.measuredNotes(); len(notes) > 0 {
		h("Measured, not judged")
		for _, n := range notes {
			fmt.Fprintf(w, "%s\n", n)
		}
	}

	if markdown {
		h("Runs")
		for _, r := range rep.Runs {
			line := r.line()
			if r.Dir != "" {
				line = strings.TrimSuffix(line, "; "+r.Dir)
				line += fmt.Sprintf(" — [%s](%s)", r.Dir, filepath.ToSlash(filepath.Join(r.Dir, "report.md")))
			}
			fmt.Fprintf(w, "- %s\n", line)
			if v := r.FirstViolation; v != nil {
				fmt.Fprintf(w, "  - %s: %s\n", v.Check, v.Description)
			}
		}
	}
}

// measuredNotes says, for each variant that need not be caught, what its runs showed
// next to the reference's under the same faults and seeds.
func (rep validateReport) measuredNotes() []string {
	var out []string
	for i, r := range rep.Variants {
		if r.Unsafe {
			continue
		}
		ref := rep.Reference[i]
		accepted := "nothing unsafe was accepted: every run the checker decided was valid"
		if r.Detected > 0 {
			accepted = fmt.Sprintf("the checker found %d of %d runs invalid (first: %s)", r.Detected, r.Runs, describeViolation(r.FirstViolation))
		}
		out = append(out, fmt.Sprintf("%s (%s): %s; leadership overlaps %s, against %s for the reference under the same faults and seeds.",
			r.Variant, strings.Join(r.Faults, ", "), accepted, fmtOverlaps(r.Overlaps, r.LongestOverlap), fmtOverlaps(ref.Overlaps, ref.LongestOverlap)))
	}
	return out
}

func describeViolation(v *violationAt) string {
	if v == nil {
		return "no violation recorded"
	}
	return fmt.Sprintf("%s at %s: %s", v.Check, fmtAt(v.AfterStart), v.Description)
}

func fmtAt(d time.Duration) string {
	if d < 0 {
		return "an unknown time"
	}
	return "t+" + d.Round(time.Millisecond).String()
}

func fmtMedian(d time.Duration, detected int) string {
	if detected == 0 || d <= 0 {
		return "—"
	}
	return d.Round(100 * time.Millisecond).String()
}

func fmtOverlaps(n int, longest time.Duration) string {
	if n == 0 {
		return "0"
	}
	return fmt.Sprintf("%d, longest %s", n, longest.Round(time.Millisecond))
}

// clip shortens a long cell for the terminal; Markdown keeps it whole.
func clip(s string, markdown bool) string {
	const n = 160
	if markdown || len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
