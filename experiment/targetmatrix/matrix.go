//go:build chaos

// Package targetmatrix runs every target (package targets) under the same seeds and
// faults, through experiment/matrix, and writes the table that compares them:
// `fenceline targets`, `make targets`. It exists in chaos builds only.
package targetmatrix

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/experiment/chaosrun"
	"github.com/fenceline/fenceline/experiment/matrix"
	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/internal/exitcode"
	"github.com/fenceline/fenceline/internal/namelist"
	"github.com/fenceline/fenceline/targets"
	"github.com/fenceline/fenceline/workloads"
)

// Config is one matrix: targets × seeds Seed..Seed+Seeds-1, every run with the same
// faults.
type Config struct {
	// Targets are the targets to run, in the table's order.
	Targets []targets.Target
	// Seed is the first seed. Default (0): 1.
	Seed int64
	// Seeds: how many seeds each target runs (>= 1).
	Seeds int
	// Duration is each run's chaos phase; LeaseTTL the lease; Nodes the node count.
	Duration time.Duration
	LeaseTTL time.Duration
	Nodes    int
	// Nemeses are the fault kinds of every run (faults.ParseList's result).
	Nemeses []string
	// Out receives the run directories and targets.json.
	Out string
	// Table is the Markdown file that receives the table (reports/targets.md).
	Table string
	// Command is the command line, for the table's heading.
	Command string
}

// seeds are the matrix's seeds.
func (c Config) seeds() matrix.Seeds { return matrix.Seeds{First: c.Seed, Count: c.Seeds} }

// Record is one run of the matrix.
type Record struct {
	Target string `json:"target"`
	Fenced bool   `json:"fenced"`
	Seed   int64  `json:"seed"`
	// Handoff marks a run with graceful stops only, made to measure the handoff.
	Handoff bool            `json:"handoff,omitempty"`
	Dir     string          `json:"dir,omitempty"`
	Code    int             `json:"exit_code"`
	Verdict checker.Verdict `json:"verdict,omitempty"`
	// Incomplete says why the run could not be completed or checked.
	Incomplete string `json:"incomplete,omitempty"`
	// Failed lists the checks found invalid.
	Failed []string `json:"failed,omitempty"`
	// FirstViolation is the earliest violation: its check, its time from the run's
	// start, and the latest fault injected before it (its kind; "" if none).
	FirstCheck string        `json:"first_check,omitempty"`
	FirstAt    time.Duration `json:"first_at_ns,omitempty"`
	FirstFault string        `json:"first_fault,omitempty"`
	// Lost and Duplicated count the events missing from or repeated in the sink.
	Lost       int `json:"lost"`
	Duplicated int `json:"duplicated"`
	// Windows are the run's failover windows; Injected counts faults per kind.
	Windows  []checker.Window `json:"windows"`
	Injected map[string]int   `json:"injected"`
}

// Run runs the matrix, prints progress to stderr and the table to stdout, and writes
// cfg.Table and <Out>/targets.json. It returns 0 when every run was checked and every
// fenced target (the reference included) was valid in every run, 1 when a fenced target
// was invalid, 3 when a run could not be completed or checked, 2 for bad settings. An
// unfenced target found invalid is what the table measures, not a failure. It blocks;
// once ctx is done it stops the run under way, skips the rest and writes what ran.
func Run(ctx context.Context, cfg Config, stdout, stderr io.Writer) int {
	if cfg.seeds().Check() != nil || len(cfg.Targets) == 0 || cfg.Table == "" {
		fmt.Fprintln(stderr, "fenceline targets: need --seeds >= 1, --seed >= 1, a target and --table")
		return exitcode.Usage
	}
	wl, err := workloads.ByName("listener")
	if err != nil {
		fmt.Fprintf(stderr, "fenceline targets: %v\n", err)
		return exitcode.Usage
	}
	base := chaosrun.Spec{Cmd: "targets", Duration: cfg.Duration, Nodes: cfg.Nodes, Nemeses: cfg.Nemeses,
		Workload: wl, Backend: "local", LeaseTTL: cfg.LeaseTTL, Variant: "reference", Quiet: true}
	var rows, handoffs []matrix.Row
	proto := map[string]Record{} // by row
	for _, t := range cfg.Targets {
		s := base
		s.Target = t.Name
		if err := s.Prepare(); err != nil { // every target's nodes accept the settings
			fmt.Fprintf(stderr, "fenceline targets: %s: %v\n", t.Name, err)
			return exitcode.Usage
		}
		rows = append(rows, matrix.Row{Name: t.Name, Spec: s})
		s.Nemeses = []string{faults.Stop}
		handoffs = append(handoffs, matrix.Row{Name: t.Name + "-handoff", Spec: s})
		proto[t.Name] = Record{Target: t.Name, Fenced: t.Fenced}
		proto[t.Name+"-handoff"] = Record{Target: t.Name, Fenced: t.Fenced, Handoff: true}
	}
	// Every seed of every target, then one run per target with graceful stops only
	// (the first seed): in an all-fault run few stops hit the leader, and the handoff is
	// where designs differ.
	plan := append(matrix.Cross(rows, cfg.seeds()), matrix.Cross(handoffs, matrix.Seeds{First: cfg.Seed, Count: 1})...)
	recs := make([]Record, len(plan))
	for i, p := range plan {
		recs[i] = proto[p.Name]
		recs[i].Seed = p.Seed
		plan[i].Label = fmt.Sprintf("%s, seed %d%s", recs[i].Target, p.Seed, recs[i].kind())
	}
	began := time.Now()
	d := matrix.Driver{Cmd: "targets", Out: cfg.Out, Progress: stderr, RunLog: stderr}
	d.Done = func(i int, r matrix.Result) string {
		recs[i] = record(recs[i], r)
		// As given: the committed table names no machine path.
		if recs[i].Dir != "" {
			recs[i].Dir = filepath.Join(cfg.Out, d.Rel(recs[i].Dir))
		}
		recs[i].Incomplete = strings.ReplaceAll(recs[i].Incomplete, d.Dir(), cfg.Out)
		return recs[i].line()
	}
	results, err := d.Execute(ctx, plan)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitcode.Usage
	}
	// A fenced design judged invalid fails the command; an unfenced one so judged is
	// the table's finding.
	err = matrix.WriteJUnit(d.Dir(), "targets", cfg.seeds(), time.Since(began), results, func(i int, r matrix.Result) string {
		if recs[i].Fenced && r.Verdict() == checker.Invalid {
			return "the fenced target " + recs[i].Target + " was judged invalid (" + strings.Join(r.FailedChecks(), ", ") + ")"
		}
		return ""
	})
	if err != nil {
		fmt.Fprintf(stderr, "fenceline targets: %v\n", err)
		return exitcode.Unknown
	}
	for i, r := range results {
		if r.NotRun {
			recs[i].Incomplete = r.Incomplete()
		}
	}
	t := table{cfg: cfg, recs: recs, began: began, elapsed: time.Since(began)}
	md := t.markdown()
	fmt.Fprint(stdout, md)
	if err := os.WriteFile(cfg.Table, []byte(md), 0o644); err != nil {
		fmt.Fprintf(stderr, "fenceline targets: %v\n", err)
		return exitcode.Unknown
	}
	if err := history.WriteJSON(filepath.Join(d.Dir(), "targets.json"), recs); err != nil {
		fmt.Fprintf(stderr, "fenceline targets: %v\n", err)
		return exitcode.Unknown
	}
	fmt.Fprintf(stdout, "\ntable: %s\n", cfg.Table)
	return exitCode(recs)
}

func exitCode(recs []Record) int {
	code := exitcode.OK
	for _, r := range recs {
		switch {
		case r.Fenced && r.Verdict == checker.Invalid:
			return exitcode.Invalid
		case r.Incomplete != "" || (r.Verdict != checker.Valid && r.Verdict != checker.Invalid):
			code = exitcode.Unknown
		}
	}
	return code
}

// record fills r from a run's result.
func record(r Record, res matrix.Result) Record {
	r.Dir, r.Code, r.Verdict, r.Incomplete = res.Outcome.Dir, res.Outcome.Code, res.Verdict(), res.Incomplete()
	if !res.Checked() {
		return r
	}
	r.Failed = res.FailedChecks()
	r.Windows = res.Outcome.Result.Windows
	run, err := res.LoadRun()
	if err != nil {
		r.Incomplete = "the run directory cannot be read again: " + err.Error()
		return r
	}
	if run.Info.Interrupted != "" {
		r.Incomplete = run.Info.Interrupted
	}
	r.Injected = matrix.Injected(run)
	if v, at, ok := res.FirstViolation(); ok {
		r.FirstCheck = v.Check
		if at >= 0 {
			r.FirstAt = at
			for _, f := range run.Faults {
				if f.Type == history.Invoke && f.Time <= v.Time {
					r.FirstFault = f.Fault
				}
			}
		}
	}
	if slices.Contains(r.Failed, checker.CheckExactlyOnce) {
		if rs, err := res.Results(); err == nil && rs.Store != nil {
			r.Lost, r.Duplicated = rs.Store.SinkLost, rs.Store.SinkDuplicated
		}
	}
	return r
}

// kind says what faults the run had, for the progress log and the table.
func (r Record) kind() string {
	if r.Handoff {
		return " (stops only)"
	}
	return ""
}

// line sums a run up for the progress log.
func (r Record) line() string {
	s := fmt.Sprintf("%s, seed %d%s: %s", r.Target, r.Seed, r.kind(), cmp.Or(string(r.Verdict), "not checked"))
	if r.FirstCheck != "" {
		s += fmt.Sprintf(" (%s at %s, after %s)", r.FirstCheck, r.FirstAt.Round(100*time.Millisecond), cmp.Or(r.FirstFault, "no fault"))
	}
	if r.Incomplete != "" {
		s += "; incomplete: " + r.Incomplete
	}
	return s + "; " + r.Dir
}

// Pick parses --targets: "all" or a comma-separated list.
func Pick(list string) ([]targets.Target, error) {
	return namelist.Pick("targets", list, targets.Names(), targets.ByName)
}
