//go:build chaos

// Package matrix runs every target (package targets) under the same seeds and faults and
// writes the table that compares them: `fenceline targets`, `make targets`. It exists in
// chaos builds only.
package targetmatrix

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/experiment/chaosrun"
	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/internal/exitcode"
	"github.com/fenceline/fenceline/internal/namelist"
	"github.com/fenceline/fenceline/reports"
	"github.com/fenceline/fenceline/targets"
	"github.com/fenceline/fenceline/workloads"
)

// Config is one matrix: targets × seeds 1..Seeds, every run with the same faults.
type Config struct {
	// Targets are the targets to run, in the table's order.
	Targets []targets.Target
	// Seeds: runs use seeds 1..Seeds (>= 1).
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
	if cfg.Seeds < 1 || len(cfg.Targets) == 0 || cfg.Table == "" {
		fmt.Fprintln(stderr, "fenceline targets: need --seeds >= 1, a target and --table")
		return exitcode.Usage
	}
	wl, err := workloads.ByName("listener")
	if err != nil {
		fmt.Fprintf(stderr, "fenceline targets: %v\n", err)
		return exitcode.Usage
	}
	base := chaosrun.Spec{Cmd: "targets", Duration: cfg.Duration, Nodes: cfg.Nodes, Nemeses: cfg.Nemeses,
		Workload: wl, Backend: "local", LeaseTTL: cfg.LeaseTTL, Variant: "reference", Quiet: true}
	for _, t := range cfg.Targets {
		s := base
		s.Target = t.Name
		if err := s.Prepare(); err != nil { // every target's nodes accept the settings
			fmt.Fprintf(stderr, "fenceline targets: %s: %v\n", t.Name, err)
			return exitcode.Usage
		}
		base = s
	}
	// Absolute: redis-server changes into its data directory before opening its log.
	out, err := filepath.Abs(cfg.Out)
	if err == nil {
		err = os.MkdirAll(out, 0o755)
	}
	if err != nil {
		fmt.Fprintf(stderr, "fenceline targets: %v\n", err)
		return exitcode.Usage
	}
	began := time.Now()
	// Seeds 1..K of every target, then one run per target with graceful stops only: in
	// an all-fault run few stops hit the leader, and the handoff is where designs differ.
	var plan []Record
	for seed := int64(1); seed <= int64(cfg.Seeds); seed++ {
		for _, t := range cfg.Targets {
			plan = append(plan, Record{Target: t.Name, Fenced: t.Fenced, Seed: seed})
		}
	}
	for _, t := range cfg.Targets {
		plan = append(plan, Record{Target: t.Name, Fenced: t.Fenced, Seed: 1, Handoff: true})
	}
	var recs []Record
	for i, r := range plan {
		if ctx.Err() != nil {
			r.Incomplete = "not run: interrupted"
			recs = append(recs, r)
			continue
		}
		fmt.Fprintf(stderr, "fenceline targets: [%d/%d] %s, seed %d%s\n", i+1, len(plan), r.Target, r.Seed, r.kind())
		s := base
		s.Target, s.Seed, s.Out = r.Target, r.Seed, filepath.Join(out, "runs", r.Target)
		if r.Handoff {
			s.Nemeses, s.Out = []string{faults.Stop}, filepath.Join(out, "runs", r.Target+"-handoff")
		}
		r = record(r, s.Run(ctx, io.Discard, stderr))
		if rel, err := filepath.Rel(out, r.Dir); err == nil && r.Dir != "" {
			r.Dir = filepath.Join(cfg.Out, rel) // as given: the committed table names no machine path
		}
		r.Incomplete = strings.ReplaceAll(r.Incomplete, out, cfg.Out)
		fmt.Fprintf(stderr, "fenceline targets: [%d/%d] %s\n", i+1, len(plan), r.line())
		recs = append(recs, r)
	}
	t := table{cfg: cfg, recs: recs, began: began, elapsed: time.Since(began)}
	md := t.markdown()
	fmt.Fprint(stdout, md)
	if err := os.WriteFile(cfg.Table, []byte(md), 0o644); err != nil {
		fmt.Fprintf(stderr, "fenceline targets: %v\n", err)
		return exitcode.Unknown
	}
	if err := history.WriteJSON(filepath.Join(out, "targets.json"), recs); err != nil {
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

// record fills r from a run's outcome.
func record(r Record, o chaosrun.Outcome) Record {
	r.Dir, r.Code = o.Dir, o.Code
	if o.RunErr != nil {
		r.Incomplete = o.RunErr.Error()
	}
	res := o.Result
	if res == nil {
		if r.Incomplete == "" {
			r.Incomplete = fmt.Sprintf("not checked (exit code %d; see the run's logs)", o.Code)
		}
		return r
	}
	// The exit code already folds in what the result alone does not say (an interrupted
	// run is never valid).
	switch o.Code {
	case exitcode.OK:
		r.Verdict = checker.Valid
	case exitcode.Invalid:
		r.Verdict = checker.Invalid
	default:
		r.Verdict = checker.Unknown
	}
	for _, c := range res.Checks {
		if c.Verdict == checker.Invalid {
			r.Failed = append(r.Failed, c.Name)
		}
	}
	r.Windows = res.Windows
	run, err := history.LoadRun(o.Dir)
	if err != nil {
		r.Incomplete = "the run directory cannot be read again: " + err.Error()
		return r
	}
	if run.Info.Interrupted != "" {
		r.Incomplete = run.Info.Interrupted
	}
	r.Injected = map[string]int{}
	for _, f := range run.Faults {
		if f.Type == history.Invoke {
			r.Injected[f.Fault]++
		}
	}
	if v, ok := res.FirstViolation(); ok {
		r.FirstCheck = v.Check
		if v.Time != 0 {
			r.FirstAt = time.Duration(v.Time - res.Start)
			for _, f := range run.Faults {
				if f.Type == history.Invoke && f.Time <= v.Time {
					r.FirstFault = f.Fault
				}
			}
		}
	}
	if b, err := os.ReadFile(filepath.Join(o.Dir, reports.ResultsFile)); err == nil {
		var rs reports.Results
		if json.Unmarshal(b, &rs) == nil && rs.Store != nil && slices.Contains(r.Failed, checker.CheckExactlyOnce) {
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
	s := fmt.Sprintf("%s, seed %d%s: %s", r.Target, r.Seed, r.kind(), cmpOr(string(r.Verdict), "not checked"))
	if r.FirstCheck != "" {
		s += fmt.Sprintf(" (%s at %s, after %s)", r.FirstCheck, r.FirstAt.Round(100*time.Millisecond), cmpOr(r.FirstFault, "no fault"))
	}
	if r.Incomplete != "" {
		s += "; incomplete: " + r.Incomplete
	}
	return s + "; " + r.Dir
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Pick parses --targets: "all" or a comma-separated list.
func Pick(list string) ([]targets.Target, error) {
	return namelist.Pick("targets", list, targets.Names(), targets.ByName)
}
