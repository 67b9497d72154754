//go:build chaos

package validate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/experiment/matrix"
	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/internal/exitcode"
	"github.com/fenceline/fenceline/variants"
	"github.com/fenceline/fenceline/workloads"
)

// Files RunZoo writes into Config.Out.
const (
	ZooMarkdown = "zoo.md"
	ZooJSONFile = "zoo.json"
)

// zooUnder is the Under of the zoo's runs: every design runs at the default settings.
const zooUnder = "default"

// The zoo's bar for how fast a bug is found (docs/known-bugs.md): the median and the p95
// of the time from the run's start to the first violation, over the detected runs. A
// row detected in every run but slower is statusSlow, which fails the zoo as a missed
// detection does: the bar is the issue's, and a "pass" beside a 70 s p95 would not say so.
const (
	zooMedianTarget = 10 * time.Second
	zooP95Target    = 60 * time.Second
	statusSlow      = "SLOW"
)

// ZooNames lists the variants of the known-bug zoo (variants.Zoo), in its order.
func ZooNames() []string {
	var out []string
	for _, b := range variants.Zoo() {
		out = append(out, b.Variant)
	}
	return out
}

// RunZoo measures the known-bug zoo: each of cfg.Variants, and the reference, at the
// default settings of `make chaos` (every fault of faults.All, the random schedule with
// the probes that open it, cfg.Duration), for seeds N..N+K-1. It reports, per variant, the
// detections out of K, the median and p95 time from the run's start to the first
// violation, and the checks that found it first; and the reference's verdicts on the
// same seeds. It prints the table, writes zoo.md and zoo.json into cfg.Out and returns
// 0 when every variant was caught in every run and the reference was valid in every
// run, 1 when not, 2 for a usage error and 3 when runs could not be completed and that
// decides. It blocks; once ctx is done it stops the run under way and still writes the
// table of what ran.
func RunZoo(ctx context.Context, cfg Config, stdout, stderr io.Writer) int {
	seeds := matrix.Seeds{First: cfg.Seed, Count: cfg.Seeds}
	if seeds.Check() != nil || cfg.Duration <= 0 || len(cfg.Variants) == 0 {
		fmt.Fprintln(stderr, "fenceline validate --zoo: need --seeds >= 1, --seed >= 1, --duration > 0 and a variant")
		return exitcode.Usage
	}
	wl, err := workloads.ByName("listener")
	if err != nil {
		fmt.Fprintf(stderr, "fenceline validate --zoo: %v\n", err)
		return exitcode.Usage
	}
	all, err := faults.ParseList("all")
	if err != nil {
		fmt.Fprintf(stderr, "fenceline validate --zoo: %v\n", err)
		return exitcode.Usage
	}
	var plan []plannedRun
	for _, s := range seeds.List() {
		plan = append(plan, plannedRun{Variant: variants.Reference, Under: zooUnder, Faults: all, Seed: s})
		for _, v := range cfg.Variants {
			if v.Store != "" || v.Workload != "" || v.Takeover {
				fmt.Fprintf(stderr, "fenceline validate --zoo: %s does not run at the default settings (store, workload or takeover of its own)\n", v.Name)
				return exitcode.Usage
			}
			plan = append(plan, plannedRun{Variant: v.Name, Under: v.Name, Faults: all, Seed: s})
		}
	}
	// The zoo asks only whether and when: a run found out need not run on. The times
	// are those of a whole run, whose history up to then is the same.
	cfg.StopAtViolation = true
	base := baseSpec(cfg, wl)
	base.Schedule = "random"
	if err := base.Prepare(); err != nil {
		fmt.Fprintf(stderr, "fenceline validate --zoo: %v\n", err)
		return exitcode.Usage
	}
	began := time.Now()
	d := &matrix.Driver{Cmd: "zoo", Out: cfg.Out, Progress: stderr, RunLog: stderr, Parallel: cfg.Parallel}
	runs, results, err := runMatrix(ctx, d, base, plan)
	if err != nil {
		fmt.Fprintf(stderr, "fenceline validate --zoo: %v\n", err)
		return exitcode.Usage
	}
	out := d.Dir()
	if err := matrix.WriteJUnit(out, "zoo", seeds, time.Since(began), results, failsValidate(plan)); err != nil {
		fmt.Fprintf(stderr, "fenceline validate --zoo: %v\n", err)
		return exitcode.Unknown
	}
	for i := range runs {
		runs[i].Dir = d.Rel(runs[i].Dir)
	}
	rep := summarizeZoo(cfg.Variants, runs)
	rep.matrixHeader = newMatrixHeader(cfg, seeds, began)
	var term bytes.Buffer
	rep.write(&term, false)
	_, _ = stdout.Write(term.Bytes())
	if err := rep.save(out); err != nil {
		fmt.Fprintf(stderr, "fenceline validate --zoo: %v\n", err)
		return exitcode.Unknown
	}
	fmt.Fprintf(stdout, "\nreport: %s\n", filepath.Join(out, ZooMarkdown))
	return rep.exitCode()
}

// zooRow is one zoo variant's line.
type zooRow struct {
	Variant string `json:"variant"`
	Source  string `json:"source,omitempty"`
	// Runs counts the planned runs; Detected those found invalid; Undecided those not
	// detected whose verdict is unknown or that could not be completed.
	Runs      int `json:"runs"`
	Detected  int `json:"detected"`
	Undecided int `json:"undecided"`
	// Median and P95 are over the detected runs whose first violation is timed, from
	// the run's start (nearest rank); Timed counts them.
	Median time.Duration `json:"median_to_first_violation_ns"`
	P95    time.Duration `json:"p95_to_first_violation_ns"`
	Timed  int           `json:"timed"`
	// CaughtBy counts, per check, the detected runs whose first violation it found.
	CaughtBy map[string]int `json:"caught_by"`
	Status   string         `json:"status"`
}

// zooReport is zoo.json.
type zooReport struct {
	matrixHeader
	Outcome   string       `json:"outcome"`
	Variants  []zooRow     `json:"variants"`
	Reference referenceRow `json:"reference"`
	Runs      []runRecord  `json:"runs"`
}

// summarizeZoo builds the rows from the runs' records: a variant passes when every
// one of its runs was detected, the reference when every one of its runs was valid.
func summarizeZoo(vs []variants.Variant, runs []runRecord) zooReport {
	rep := zooReport{Runs: runs, Reference: referenceRow{Under: zooUnder}}
	sources := map[string]string{}
	for _, b := range variants.Zoo() {
		sources[b.Variant] = b.Source
	}
	for _, v := range vs {
		row := zooRow{Variant: v.Name, Source: sources[v.Name], CaughtBy: map[string]int{}}
		var times []time.Duration
		for _, r := range runs {
			if r.Variant != v.Name {
				continue
			}
			row.Runs++
			switch {
			case r.detected():
				row.Detected++
				if fv := r.FirstViolation; fv != nil {
					row.CaughtBy[fv.Check]++
					if fv.AfterStart >= 0 {
						times = append(times, fv.AfterStart)
					}
				}
			default:
				if r.undecided() || r.Verdict == checker.Unknown {
					row.Undecided++
				}
			}
		}
		row.Median, row.P95, row.Timed = checker.Summarize(times).P50, nearestRank(times, 0.95), len(times)
		switch {
		case row.Runs > 0 && row.Detected == row.Runs && (row.Median > zooMedianTarget || row.P95 > zooP95Target):
			row.Status = statusSlow
		case row.Runs > 0 && row.Detected == row.Runs:
			row.Status = statusPass
		case row.Detected+row.Undecided < row.Runs:
			row.Status = statusFail
		default:
			row.Status = statusUndecided
		}
		rep.Variants = append(rep.Variants, row)
	}
	ref := &rep.Reference
	for _, r := range runs {
		if r.Variant != variants.Reference {
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
		case r.Verdict == checker.Unknown:
			ref.Unknown++
		default:
			ref.Valid++
		}
	}
	ref.Status = referenceStatus(*ref)
	rep.Outcome = statusPass
	for _, s := range append([]string{ref.Status}, rowStatuses(rep.Variants)...) {
		switch {
		case s == statusFail:
			rep.Outcome = statusFail
		case s == statusSlow && rep.Outcome != statusFail:
			rep.Outcome = statusSlow
		case s == statusUndecided && rep.Outcome == statusPass:
			rep.Outcome = statusUndecided
		}
	}
	return rep
}

func rowStatuses(rows []zooRow) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Status)
	}
	return out
}

func (rep zooReport) exitCode() int {
	if rep.Outcome == statusSlow {
		return exitcode.Invalid
	}
	return validateReport{Outcome: rep.Outcome}.exitCode()
}

// caughtBy lists the checks that found the first violations, most often first.
func (r zooRow) caughtBy() string {
	checks := make([]string, 0, len(r.CaughtBy))
	for c := range r.CaughtBy {
		checks = append(checks, c)
	}
	sort.Slice(checks, func(i, j int) bool {
		if r.CaughtBy[checks[i]] != r.CaughtBy[checks[j]] {
			return r.CaughtBy[checks[i]] > r.CaughtBy[checks[j]]
		}
		return checks[i] < checks[j]
	})
	parts := make([]string, len(checks))
	for i, c := range checks {
		parts[i] = fmt.Sprintf("%s (%d)", c, r.CaughtBy[c])
	}
	return matrix.OrDash(strings.Join(parts, ", "))
}

func (rep zooReport) save(out string) error {
	var md bytes.Buffer
	rep.write(&md, true)
	if err := os.WriteFile(filepath.Join(out, ZooMarkdown), md.Bytes(), 0o644); err != nil {
		return err
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, ZooJSONFile), append(b, '\n'), 0o644)
}

func (rep zooReport) write(w *bytes.Buffer, markdown bool) {
	seeds := matrix.Seeds{First: rep.Seed, Count: rep.Seeds}
	if markdown {
		fmt.Fprintf(w, "# fenceline zoo: %s\n\n`%s` — started %s, took %s. Seeds %s, %s of chaos per run, every fault, random schedule and its probes, lease TTL %s, %d nodes; a run's chaos phase ends at the first violation a check of its history so far finds (`--stop-at-violation`).\n\n",
			rep.Outcome, rep.Command, rep.Started, rep.Elapsed, seeds.Range(), rep.Duration, rep.LeaseTTL, rep.Nodes)
	} else {
		fmt.Fprintf(w, "fenceline zoo: %s\nSeeds %s, %s of chaos per run, every fault; took %s.\n\n", rep.Outcome, seeds.Range(), rep.Duration, rep.Elapsed)
	}
	t := matrix.Table{
		Header: []string{"variant", "bug", "detected", "median to 1st violation", "p95", "caught first by", "status"},
		Right:  []bool{false, false, true, true, true, false, false},
	}
	for _, r := range rep.Variants {
		med, p95 := "—", "—"
		if r.Timed > 0 {
			med, p95 = fmtAtDur(r.Median), fmtAtDur(r.P95)
		}
		t.Add(r.Variant, matrix.OrDash(r.Source), fmt.Sprintf("%d/%d", r.Detected, r.Runs), med, p95, r.caughtBy(), r.Status)
	}
	ref := rep.Reference
	t.Add(variants.Reference, "(must stay valid)", fmt.Sprintf("%d/%d invalid", ref.FalseAlarms, ref.Runs),
		"—", "—", fmt.Sprintf("valid %d, unknown %d, incomplete %d", ref.Valid, ref.Unknown, ref.Incomplete), ref.Status)
	if markdown {
		t.Markdown(w)
	} else {
		t.Terminal(w)
	}
	if ref.Note != "" {
		fmt.Fprintf(w, "\n%s\n", ref.Note)
	}
	fmt.Fprintf(w, "\nA row passes when every run found it, with a median time to the first violation of %s at most and a p95 of %s at most; %s: every run found it, more slowly.\n",
		fmtAtDur(zooMedianTarget), fmtAtDur(zooP95Target), statusSlow)
	if markdown {
		fmt.Fprintf(w, "\n## Runs\n\n")
		for _, r := range rep.Runs {
			fmt.Fprintf(w, "- %s\n", r.line())
		}
	}
}

func fmtAtDur(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s" }

// nearestRank is the q-quantile of ds by nearest rank (as checker.Summarize's); 0 for
// none. ds is not modified.
func nearestRank(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(i, 0)]
}
