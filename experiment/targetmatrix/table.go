//go:build chaos

package targetmatrix

import (
	"fmt"
	"maps"
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

// markdown is reports/targets.md.
func (t table) markdown() string {
	var b strings.Builder
	c := t.cfg
	fmt.Fprintf(&b, "# Redis locks under faults\n\n")
	fmt.Fprintf(&b, "`%s`: each target, seeds %s, %s of chaos with faults %s, %d nodes, lease TTL %s, on the local backend. "+
		"Started %s, %s of wall time.\n\n",
		c.Command, c.seeds().Range(), c.Duration, strings.Join(c.Nemeses, ","), c.Nodes, c.LeaseTTL,
		t.began.UTC().Format("2006-01-02 15:04 UTC"), t.elapsed.Round(time.Second))

	b.WriteString("## Verdicts\n\n")
	verdicts := matrix.Table{
		Header: []string{"target", "fence", "runs", "valid", "invalid", "unknown", "checks failed (runs)", "events lost / duplicated", "first violation (median from start)"},
		Right:  []bool{false, false, true, true, true, true, false, true, true},
	}
	for _, tg := range c.Targets {
		rs := t.byTarget(tg.Name)
		var valid, invalid, unknown, lost, dup int
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
			if r.FirstCheck != "" {
				firsts = append(firsts, r.FirstAt)
			}
		}
		fence := "token (INCR)"
		switch {
		case tg.Name == "reference":
			fence = "token (lease script)"
		case !tg.Fenced:
			fence = "none"
		}
		var fl []string
		for _, k := range slices.Sorted(maps.Keys(failed)) {
			fl = append(fl, fmt.Sprintf("%s (%d)", k, failed[k]))
		}
		first := "—"
		if len(firsts) > 0 {
			first = checker.Summarize(firsts).P50.Round(100 * time.Millisecond).String()
		}
		verdicts.Add(tg.Name, fence, strconv.Itoa(len(rs)), strconv.Itoa(valid), strconv.Itoa(invalid), strconv.Itoa(unknown),
			matrix.OrDash(strings.Join(fl, ", ")), fmt.Sprintf("%d / %d", lost, dup), first)
	}
	verdicts.Markdown(&b)

	kinds := t.kinds()
	b.WriteString("\n## Target × fault\n\n")
	b.WriteString("Each cell: the runs whose first violation came after a fault of that kind (the latest fault injected before it; ✓ none), " +
		"then the failover window p50 / p99 over every run of the target (fault → first commit accepted under a newer token; " +
		"— when no fault of the kind displaced the leader).\n\n")
	byFault := matrix.Table{Header: append([]string{"target"}, kinds...)}
	for _, tg := range c.Targets {
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

	b.WriteString("\n## Graceful handoff\n\n")
	fmt.Fprintf(&b, "Every `stop` fault (SIGTERM: the leader releases its lock) that displaced the leader, in the runs above and in one run per target with stops only (seed %d), "+
		"from the signal to the first commit under the new leader's token. "+
		"The reference's standbys take over on its release notice; a library's standbys find out on their next retry.\n\n", c.seeds().From())
	handoffs := matrix.Table{Header: []string{"target", "handoffs", "p50", "p99", "max"}, Right: []bool{false, true, true, true, true}}
	for _, tg := range c.Targets {
		var ws []time.Duration
		for _, r := range t.recs {
			if r.Target != tg.Name {
				continue
			}
			for _, w := range r.Windows {
				if w.Fault == faults.Stop {
					ws = append(ws, w.ToNewToken)
				}
			}
		}
		d := checker.Summarize(ws)
		if d.Count == 0 {
			handoffs.Add(tg.Name, "0", "—", "—", "—")
			continue
		}
		handoffs.Add(tg.Name, strconv.Itoa(d.Count), matrix.Dur(d.P50), matrix.Dur(d.P99), matrix.Dur(d.Max))
	}
	handoffs.Markdown(&b)

	b.WriteString("\n## Runs\n\n")
	runs := matrix.Table{Header: []string{"target", "seed", "verdict", "first violation", "after fault", "run directory"},
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

// kinds are the fault kinds of the runs, in faults.All's order.
func (t table) kinds() []string {
	var out []string
	for _, k := range faults.All() {
		if slices.Contains(t.cfg.Nemeses, k) {
			out = append(out, k)
		}
	}
	return out
}
