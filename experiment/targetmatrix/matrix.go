//go:build chaos

// Package targetmatrix runs every design under test (the targets of package targets and
// the example nodes of other languages) under the same seeds and faults, through
// experiment/matrix, and writes the table that compares them: `fenceline targets`,
// `make targets`. It exists in chaos builds only.
package targetmatrix

import (
	"cmp"
	"context"
	"errors"
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
	"github.com/fenceline/fenceline/internal/buildinfo"
	"github.com/fenceline/fenceline/internal/exitcode"
	"github.com/fenceline/fenceline/internal/namelist"
	"github.com/fenceline/fenceline/targets"
	"github.com/fenceline/fenceline/workloads"
)

// Design is one row of the matrix: a target of package targets, run by fenceline's own
// nodes, or a program of another language that speaks the node protocol.
type Design struct {
	Name string
	// Target is the target's name; "" for a node program.
	Target string
	// NodeCmd is the node program's command line (chaos --node-cmd), relative to the
	// repository's root; "" for a target.
	NodeCmd string
	// Fenced is true when the store checks a fencing token on every cursor write.
	Fenced bool
	// Fence says what the fencing token is, for the table ("none" when unfenced).
	Fence string
	// NoExclusion: the election does not promise mutual exclusion (targets.Target).
	NoExclusion bool
}

// NodePrograms are the example nodes of other languages (examples/), as the matrix runs
// them from the repository's root.
var NodePrograms = []Design{
	{Name: "python-node", NodeCmd: "/usr/bin/python3 examples/python-node/node.py", Fenced: true, Fence: "token (lease script)"},
	{Name: "node-listener", NodeCmd: "env NODE_PATH=/usr/share/nodejs node examples/node-listener/listener.js", Fenced: true, Fence: "token (lease script)"},
}

// designOf is target t as a row.
func designOf(t targets.Target) Design {
	return Design{Name: t.Name, Target: t.Name, Fenced: t.Fenced, Fence: t.Fence, NoExclusion: t.NoExclusion}
}

// Config is one matrix: designs × seeds Seed..Seed+Seeds-1, every run with the same
// faults.
type Config struct {
	// Designs are the rows to run, in the table's order.
	Designs []Design
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
	// Table is the Markdown file that receives the whole report (reports/targets.md).
	Table string
	// Doc, if set, is a Markdown page whose marked block receives the comparison table
	// with its provenance (docs/targets.md).
	Doc string
	// Command is the command line, for the table's heading.
	Command string
	// Parallel is how many runs run at once. Default (0): 1.
	Parallel int
	// Binary is the fenceline binary the nodes of a target run. Default: this executable.
	Binary string
	// Revision says which source the binary was built from (buildinfo.Info.Commit), for the heading.
	// Default: the running binary's.
	Revision string
}

// seeds are the matrix's seeds.
func (c Config) seeds() matrix.Seeds { return matrix.Seeds{First: c.Seed, Count: c.Seeds} }

// Record is one run of the matrix.
type Record struct {
	// Target is the design's name (a target or a node program).
	Target string `json:"target"`
	Fenced bool   `json:"fenced"`
	// NoExclusion: the design does not promise mutual exclusion (Design.NoExclusion).
	NoExclusion bool  `json:"no_exclusion,omitempty"`
	Seed        int64 `json:"seed"`
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
	// LongestOverlap is the longest interval in which two nodes each believed they led.
	LongestOverlap time.Duration `json:"longest_overlap_ns"`
}

// Run runs the matrix, prints progress to stderr and the table to stdout, and writes
// cfg.Table and <Out>/targets.json. It returns 0 when every run was checked and every
// fenced target (the reference included) was valid in every run (but for lease-exclusion
// where the election does not promise it), 1 when a fenced target was invalid, 3 when a run could not be completed or checked, 2 for bad settings. An
// unfenced target found invalid is what the table measures, not a failure. It blocks;
// once ctx is done it stops the run under way, skips the rest and writes what ran.
func Run(ctx context.Context, cfg Config, stdout, stderr io.Writer) int {
	if cfg.seeds().Check() != nil || len(cfg.Designs) == 0 || cfg.Table == "" {
		fmt.Fprintln(stderr, "fenceline targets: need --seeds >= 1, --seed >= 1, a target and --table")
		return exitcode.Usage
	}
	if cfg.Doc != "" {
		if err := checkDoc(cfg.Doc); err != nil {
			fmt.Fprintf(stderr, "fenceline targets: --doc %v\n", err)
			return exitcode.Usage
		}
	}
	if cfg.Revision == "" {
		cfg.Revision = buildinfo.Read().Commit()
	}
	wl, err := workloads.ByName("listener")
	if err != nil {
		fmt.Fprintf(stderr, "fenceline targets: %v\n", err)
		return exitcode.Usage
	}
	base := chaosrun.Spec{Cmd: "targets", Duration: cfg.Duration, Nodes: cfg.Nodes, Nemeses: cfg.Nemeses,
		Workload: wl, Backend: "local", LeaseTTL: cfg.LeaseTTL, Variant: "reference", Quiet: true, Binary: cfg.Binary}
	var rows, handoffs []matrix.Row
	proto := map[string]Record{} // by row
	for _, t := range cfg.Designs {
		s := base
		s.Target, s.NodeCmd = t.Target, t.NodeCmd
		if s.UsesEtcd() && allFaults(cfg.Nemeses) {
			// Every fault that applies: etcd's too, as `chaos --nemesis all` adds them.
			s.Nemeses = slices.Concat(cfg.Nemeses, faults.Etcd())
		}
		if err := s.Prepare(); err != nil { // every design's nodes accept the settings
			fmt.Fprintf(stderr, "fenceline targets: %s: %v\n", t.Name, err)
			return exitcode.Usage
		}
		rows = append(rows, matrix.Row{Name: t.Name, Spec: s})
		s.Nemeses = []string{faults.Stop}
		handoffs = append(handoffs, matrix.Row{Name: t.Name + "-handoff", Spec: s})
		proto[t.Name] = Record{Target: t.Name, Fenced: t.Fenced, NoExclusion: t.NoExclusion}
		proto[t.Name+"-handoff"] = Record{Target: t.Name, Fenced: t.Fenced, NoExclusion: t.NoExclusion, Handoff: true}
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
	d := matrix.Driver{Cmd: "targets", Out: cfg.Out, Progress: stderr, RunLog: stderr, Parallel: cfg.Parallel}
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
		if rec := recs[i]; rec.Fenced && r.Verdict() == checker.Invalid && !rec.onlyUnpromised(r.FailedChecks()) {
			return "the fenced target " + rec.Target + " was judged invalid (" + strings.Join(r.FailedChecks(), ", ") + ")"
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
	if cfg.Doc != "" {
		if err := updateDoc(cfg.Doc, t.provenance()+"\n"+t.summary()); err != nil {
			fmt.Fprintf(stderr, "fenceline targets: %v\n", err)
			return exitcode.Unknown
		}
		fmt.Fprintf(stdout, "\ntable: %s and %s\n", cfg.Table, cfg.Doc)
		return exitCode(recs)
	}
	fmt.Fprintf(stdout, "\ntable: %s\n", cfg.Table)
	return exitCode(recs)
}

// allFaults reports whether kinds holds every fault of `--nemesis all`.
func allFaults(kinds []string) bool {
	for _, k := range faults.All() {
		if !slices.Contains(kinds, k) {
			return false
		}
	}
	return true
}

func exitCode(recs []Record) int {
	code := exitcode.OK
	for _, r := range recs {
		switch {
		case r.Fenced && r.Verdict == checker.Invalid && !r.onlyUnpromised(r.Failed):
			return exitcode.Invalid
		case r.Incomplete != "" || (r.Verdict != checker.Valid && r.Verdict != checker.Invalid):
			code = exitcode.Unknown
		}
	}
	return code
}

// onlyUnpromised reports whether failed holds only what the design does not promise:
// lease-exclusion, for an election that does not promise mutual exclusion.
func (r Record) onlyUnpromised(failed []string) bool {
	return r.NoExclusion && len(failed) > 0 && !slices.ContainsFunc(failed, func(c string) bool { return c != checker.CheckLeaseExclusion })
}

// record fills r from a run's result.
func record(r Record, res matrix.Result) Record {
	r.Dir, r.Code, r.Verdict, r.Incomplete = res.Outcome.Dir, res.Outcome.Code, res.Verdict(), res.Incomplete()
	if !res.Checked() {
		return r
	}
	r.Failed = res.FailedChecks()
	r.Windows = res.Outcome.Result.Windows
	for _, o := range res.Outcome.Result.Overlaps {
		r.LongestOverlap = max(r.LongestOverlap, o.Duration)
	}
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

// ErrUnknown is returned for a name that is neither a target nor a node program.
var ErrUnknown = errors.New("targetmatrix: unknown design")

// Pick parses --targets: "all" (every target, then every node program) or a
// comma-separated list of their names.
func Pick(list string) ([]Design, error) {
	all := Designs()
	names := make([]string, len(all))
	for i, d := range all {
		names[i] = d.Name
	}
	return namelist.Pick("targets", list, names, func(name string) (Design, error) {
		return namelist.Find(all, func(d Design) string { return d.Name }, name, ErrUnknown)
	})
}

// Designs lists every design: the targets, the reference first, then the node programs.
func Designs() []Design {
	var out []Design
	for _, t := range targets.All() {
		out = append(out, designOf(t))
	}
	return append(out, NodePrograms...)
}
