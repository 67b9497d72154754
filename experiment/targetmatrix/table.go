//go:build chaos

package targetmatrix

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/experiment/matrix"
	"github.com/fenceline/fenceline/faults"
)

// table renders the matrix's records.
type table struct {
	cfg     Config
	recs    []Record
	began   time.Time
	elapsed time.Duration
}

// byTarget returns the all-fault runs of target name.
func (t table) byTarget(name string) []Record {
	var out []Record
	for _, r := range t.recs {
		if r.Target == name && !r.Handoff {
			out = append(out, r)
		}
	}
	return out
}

// Title is the heading of the comparison table, in reports/targets.md and docs/targets.md.
const Title = "Which elections keep a stale leader from writing?"

// markdown is reports/targets.md.
func (t table) markdown() string {
	var b strings.Builder
	c := t.cfg
	fmt.Fprintf(&b, "# %s\n\n", Title)
	b.WriteString(t.provenance())
	b.WriteString("\n")
	b.WriteString(t.summary())

	kinds := t.kinds()
	b.WriteString("\n## Design × fault\n\n")
	b.WriteString("Each cell: the runs whose first violation came after a fault of that kind (the latest fault injected before it; ✓ none), " +
		"then the failover window p50 / p99 over every run of the target (fault → first commit accepted under a newer token; " +
		"— when no fault of the kind displaced the leader).\n\n")
	byFault := matrix.Table{Header: append([]string{"design"}, kinds...)}
	for _, tg := range c.Designs {
		rs := t.byTarget(tg.Name)
		cells := []string{tg.Name}
		for _, k := range kinds {
			bad := 0
			var ws []time.Duration
			for _, r := range rs {
				if r.FirstFault == k && r.Verdict == checker.Invalid {
					bad++
				}
				for _, w := range r.Windows {
					if w.Fault == k {
						ws = append(ws, w.ToNewToken)
					}
				}
			}
			mark := "✓"
			if bad > 0 {
				mark = fmt.Sprintf("✗ %d", bad)
			}
			win := "—"
			if len(ws) > 0 {
				d := checker.Summarize(ws)
				win = matrix.Dur(d.P50) + " / " + matrix.Dur(d.P99)
			}
			cells = append(cells, mark+" · "+win)
		}
		byFault.Add(cells...)
	}
	byFault.Markdown(&b)

	b.WriteString("\n## Runs\n\n")
	runs := matrix.Table{Header: []string{"design", "seed", "verdict", "first violation", "after fault", "run directory"},
		Right: []bool{false, true}}
	for _, r := range t.recs {
		first := "—"
		if r.FirstCheck != "" {
			first = fmt.Sprintf("%s at %s", r.FirstCheck, r.FirstAt.Round(100*time.Millisecond))
		}
		v := string(r.Verdict)
		if r.Incomplete != "" {
			// One line of it: the rest (the node's stderr) is in the run's directory.
			why, _, _ := strings.Cut(r.Incomplete, "\n")
			v += " (incomplete: " + why + ")"
		}
		runs.Add(r.Target, fmt.Sprintf("%d%s", r.Seed, r.kind()), matrix.OrDash(v), first, matrix.OrDash(r.FirstFault), matrix.OrDash(r.Dir))
	}
	runs.Markdown(&b)
	return b.String()
}

// kinds are the fault kinds of the runs, in faults.Known's order: those asked for and
// those the runs injected besides (the fp-load-race probe that ends an all-fault run).
func (t table) kinds() []string {
	var out []string
	for _, k := range faults.Known() {
		injected := slices.ContainsFunc(t.recs, func(r Record) bool { return r.Injected[k] > 0 })
		if slices.Contains(t.cfg.Nemeses, k) || injected {
			out = append(out, k)
		}
	}
	return out
}

// provenance is the paragraph that says what produced the figures: the command, the
// binary's commit, the settings and when.
func (t table) provenance() string {
	c := t.cfg
	return fmt.Sprintf("`%s` on %s: each design, seeds %s, %s of chaos with faults %s (and those of its coordination service), "+
		"%d nodes, lease TTL %s, on the local backend; then one run per design with graceful stops only; %d run(s) at once. "+
		"Started %s, %s of wall time.\n",
		c.Command, c.Revision, c.seeds().Range(), c.Duration, strings.Join(c.Nemeses, ","), c.Nodes, c.LeaseTTL, max(c.Parallel, 1),
		t.began.UTC().Format("2006-01-02 15:04 UTC"), t.elapsed.Round(time.Second))
}

// summary is the comparison table: one row per design.
func (t table) summary() string {
	tb := matrix.Table{
		Header: []string{"design", "fence", "runs", "valid", "invalid", "unknown", "checks failed (runs)",
			"first violation (median)", "events lost / duplicated", "crash failover p50 / p99 (n)",
			"graceful failover p50 / p99 (n)", "longest overlap"},
		Right: []bool{false, false, true, true, true, true, false, true, true, true, true, true},
	}
	for _, d := range t.cfg.Designs {
		rs := t.byTarget(d.Name)
		var valid, invalid, unknown, lost, dup int
		var overlap time.Duration
		failed := map[string]int{}
		var firsts []time.Duration
		for _, r := range rs {
			switch {
			case r.Verdict == checker.Valid:
				valid++
			case r.Verdict == checker.Invalid:
				invalid++
			default:
				unknown++
			}
			for _, f := range r.Failed {
				failed[f]++
			}
			lost += r.Lost
			dup += r.Duplicated
			overlap = max(overlap, r.LongestOverlap)
			if r.FirstCheck != "" {
				firsts = append(firsts, r.FirstAt)
			}
		}
		var fl []string
		for _, k := range slices.Sorted(maps.Keys(failed)) {
			fl = append(fl, fmt.Sprintf("%s (%d)", k, failed[k]))
		}
		checks := strings.Join(fl, ", ")
		if d.NoExclusion && failed[checker.CheckLeaseExclusion] > 0 {
			checks += " (mutual exclusion not promised)"
		}
		if !d.Fenced {
			checks = strings.TrimPrefix(checks+"; no-stale-write: not applicable, no fence", "; ")
		}
		first := "—"
		if len(firsts) > 0 {
			first = checker.Summarize(firsts).P50.Round(100 * time.Millisecond).String()
		}
		tb.Add(d.Name, matrix.OrDash(d.Fence), strconv.Itoa(len(rs)), strconv.Itoa(valid), strconv.Itoa(invalid), strconv.Itoa(unknown),
			matrix.OrDash(checks), first, fmt.Sprintf("%d / %d", lost, dup),
			percentiles(t.windows(d.Name, faults.Kill, false)), percentiles(t.windows(d.Name, faults.Stop, true)),
			matrix.Dur(overlap))
	}
	var b strings.Builder
	tb.Markdown(&b)
	b.WriteString("\nCrash failover: from a `kill` (SIGKILL) of the leader to the first commit accepted under a newer token, " +
		"in the all-fault runs. Graceful: the same from a `stop` (SIGTERM: the leader releases), in every run. " +
		"Longest overlap: the longest time two nodes each believed they led, in the all-fault runs (it is how long a " +
		"stale leader could write if nothing fenced it). Lost and duplicated events are counted in runs that failed exactly-once.\n")
	return b.String()
}

// windows returns the failover windows of design name caused by faults of kind, from its
// all-fault runs and, with handoff, from its stops-only run too.
func (t table) windows(name, kind string, handoff bool) []time.Duration {
	var ws []time.Duration
	for _, r := range t.recs {
		if r.Target != name || (r.Handoff && !handoff) {
			continue
		}
		for _, w := range r.Windows {
			if w.Fault == kind {
				ws = append(ws, w.ToNewToken)
			}
		}
	}
	return ws
}

// percentiles renders "p50 / p99 (n)", or "— (0)".
func percentiles(ws []time.Duration) string {
	if len(ws) == 0 {
		return "— (0)"
	}
	d := checker.Summarize(ws)
	return fmt.Sprintf("%s / %s (%d)", matrix.Dur(d.P50), matrix.Dur(d.P99), d.Count)
}

// The markers of the block of docs/targets.md that `make targets` rewrites.
const (
	docBegin = "<!-- make targets: begin -->"
	docEnd   = "<!-- make targets: end -->"
)

// updateDoc replaces the block between docBegin and docEnd in the Markdown file path
// with block (checkDoc first, then the same with write).
func updateDoc(path, block string) error { return rewriteDoc(path, block, true) }

// checkDoc returns an error unless path is a Markdown file with docBegin and docEnd in
// that order: checked before the runs, so that their figures land where the page says.
func checkDoc(path string) error { return rewriteDoc(path, "", false) }

func rewriteDoc(path, block string, write bool) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(b)
	i, j := strings.Index(s, docBegin), strings.Index(s, docEnd)
	if i < 0 || j < i {
		return fmt.Errorf("%s: no block between %q and %q to write the table into", path, docBegin, docEnd)
	}
	if !write {
		return nil
	}
	s = s[:i+len(docBegin)] + "\n" + block + s[j:]
	return os.WriteFile(path, []byte(s), 0o644)
}
