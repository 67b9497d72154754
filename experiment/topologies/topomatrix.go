//go:build chaos

// Package topologies runs the reference implementation on each Redis topology, with
// each mitigation, under each Redis fault, for several seeds (through
// experiment/matrix), and sums the runs up in one table: how often Redis's own failures
// break what the fence guarantees on one server. It is `fenceline topologies` without
// its flags, in chaos builds only.
package topologies

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/experiment/chaosrun"
	"github.com/fenceline/fenceline/experiment/matrix"
	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/internal/exitcode"
	"github.com/fenceline/fenceline/reports"
	"github.com/fenceline/fenceline/workloads"
)

// Mitigation is one way of running a replicated topology more carefully.
type Mitigation struct {
	Name  string
	About string
	// Wait is the nodes' --redis-wait; MinReplicas the data nodes' min-replicas-to-write
	// (with a max lag of 1 s).
	Wait, MinReplicas int
}

// Mitigations are the matrix's mitigations of the sentinel topology, the first being
// none.
func Mitigations() []Mitigation {
	return []Mitigation{
		{Name: "none", About: "asynchronous replication as deployed by default"},
		{Name: "wait-2", About: "the nodes WAIT for both replicas after every script (100 ms); a miss is an unknown outcome", Wait: 2},
		{Name: "min-replicas-1", About: "the data nodes refuse writes unless one replica acknowledged within 1 s", MinReplicas: 1},
	}
}

// ClusterMitigations are those of the cluster topology, whose primaries have one
// replica each: WAIT for it instead of for two.
func ClusterMitigations() []Mitigation {
	m := Mitigations()
	m[1] = Mitigation{Name: "wait-1", About: "cluster: the nodes WAIT for the primary's one replica after every script (100 ms); a miss is an unknown outcome", Wait: 1}
	return m
}

// Cell is one row of the matrix: a topology, a mitigation and a fault kind.
type Cell struct {
	Topology   string
	Mitigation Mitigation
	Fault      string
}

// Cells lists the matrix: the single server under its restart (the baseline: an
// append-only file synced on every write), then the sentinel and the cluster topology,
// each with each of its mitigations under each replicated fault.
func Cells() []Cell {
	cells := []Cell{{Topology: backend.TopologySingle, Mitigation: Mitigations()[0], Fault: faults.RedisRestart}}
	for _, t := range []struct {
		topology string
		ms       []Mitigation
	}{{backend.TopologySentinel, Mitigations()}, {backend.TopologyCluster, ClusterMitigations()}} {
		for _, m := range t.ms {
			for _, f := range faults.Replicated() {
				cells = append(cells, Cell{Topology: t.topology, Mitigation: m, Fault: f})
			}
		}
	}
	return cells
}

// Config is one matrix.
type Config struct {
	Seed     int64         // the first seed: runs use seeds Seed..Seed+Seeds-1 (default 0: 1)
	Seeds    int           // runs per cell (>= 1)
	Duration time.Duration // each run's chaos phase
	Out      string        // receives the run directories (runs/<cell>/)
	Table    string        // the table's file (default Out/topologies.md)
	// Merge keeps the rows of Table's table that this matrix does not run (and the
	// lines that say how they were run), replacing those it runs: one topology can be
	// run again alone. Default false: the file is written anew.
	Merge bool
	// Command is how the matrix was started, for the table's header (default
	// "fenceline topologies --seeds K --duration D"); Only, the --only it was given.
	Command, Only string
	Binary        string // the fenceline binary the nodes run ("" = this one)
	Backend       string // "local" (default) or "docker"
	Parallel      int    // runs at once (default 1)
	Cells         []Cell // default Cells()
}

// Markdown is the table's default file name in Config.Out.
const Markdown = "topologies.md"

// Summary is what the runs of one cell came to.
type Summary struct {
	Cell
	Runs int
	matrix.Tally
	// RedisLoss counts the invalid runs the report blames on Redis losing acknowledged
	// writes in a failover; Failed counts the runs each check failed in.
	RedisLoss int
	Failed    map[string]int
	// FirstViolation are the times from the start of the chaos phase to the first
	// violation of each invalid run.
	FirstViolation []time.Duration
	// Windows are the failover windows (fault → first commit under a new token) of the
	// cell's fault kind; Promotions the times from each injection to the promotion the
	// Sentinels announced after it.
	Windows, Promotions []time.Duration
	Dirs                []string
}

// Run runs the matrix and writes the table to cfg.Table. It blocks until every run has
// finished, or ctx ends (the runs in progress then heal and stop). The exit code is
// exitcode.Unknown if a run could not be completed, else OK: an invalid run is the
// finding the matrix measures, not a failure of it.
func Run(ctx context.Context, cfg Config, stdout, stderr io.Writer) int {
	seeds := matrix.Seeds{First: cfg.Seed, Count: cfg.Seeds}
	if err := seeds.Check(); err != nil || cfg.Duration <= 0 {
		fmt.Fprintln(stderr, "fenceline topologies: need --seeds >= 1, --seed >= 1 and --duration > 0")
		return exitcode.Usage
	}
	if cfg.Cells == nil {
		cfg.Cells = Cells()
	}
	wl, err := workloads.ByName("listener")
	if err != nil {
		fmt.Fprintf(stderr, "fenceline topologies: %v\n", err)
		return exitcode.Usage
	}
	rows := make([]matrix.Row, len(cfg.Cells))
	for i, c := range cfg.Cells {
		s := chaosrun.Spec{
			Cmd: "topologies", Duration: cfg.Duration, Nodes: 3, Nemeses: []string{c.Fault},
			Workload: wl, Backend: cmp.Or(cfg.Backend, "local"), LeaseTTL: election.DefaultLeaseTTL, Variant: "reference",
			Binary: cfg.Binary, Quiet: true,
			Redis:     backend.RedisSpec{Topology: c.Topology, MinReplicasToWrite: c.Mitigation.MinReplicas, MinReplicasMaxLag: 1},
			RedisWait: c.Mitigation.Wait,
		}
		if err := s.Prepare(); err != nil {
			fmt.Fprintf(stderr, "fenceline topologies: %s: %v\n", CellName(c), err)
			return exitcode.Usage
		}
		rows[i] = matrix.Row{Name: CellName(c), Spec: s}
	}
	d := matrix.Driver{Cmd: "topologies", Out: cfg.Out, Parallel: cfg.Parallel, Progress: stderr}
	began := time.Now()
	results, err := d.Execute(ctx, matrix.ByRow(rows, seeds))
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitcode.Usage
	}
	// An invalid run is the table's finding about a topology, not a failure of the
	// command; a run that could not be judged is an error.
	noFailure := func(int, matrix.Result) string { return "" }
	if err := matrix.WriteJUnit(d.Dir(), "topologies", seeds, time.Since(began), results, noFailure); err != nil {
		fmt.Fprintf(stderr, "fenceline topologies: %v\n", err)
		return exitcode.Unknown
	}
	sums := make([]Summary, len(cfg.Cells))
	row := map[string]int{}
	for i, c := range cfg.Cells {
		sums[i], row[CellName(c)] = Summary{Cell: c, Failed: map[string]int{}}, i
	}
	for _, r := range results {
		if !r.NotRun {
			sums[row[r.Name]].add(r)
		}
	}
	var b strings.Builder
	WriteMarkdown(&b, cfg, sums)
	md := cmp.Or(cfg.Table, filepath.Join(cfg.Out, Markdown))
	out := b.String()
	if cfg.Merge {
		if old, rerr := os.ReadFile(md); rerr == nil {
			out = MergeMarkdown(string(old), out)
		}
	}
	if err = os.MkdirAll(filepath.Dir(md), 0o755); err == nil {
		err = os.WriteFile(md, []byte(out), 0o644)
	}
	if err != nil {
		fmt.Fprintf(stderr, "fenceline topologies: %v\n", err)
	}
	io.WriteString(stdout, out)
	for _, s := range sums {
		if s.Unknown > 0 || s.Runs < cfg.Seeds {
			return exitcode.Unknown
		}
	}
	return exitcode.OK
}

// CellName names a row: topology-mitigation-fault.
func CellName(c Cell) string { return c.Topology + "-" + c.Mitigation.Name + "-" + c.Fault }

// add sums up one run.
func (s *Summary) add(r matrix.Result) {
	s.Runs++
	s.Dirs = append(s.Dirs, r.Outcome.Dir)
	s.Add(r.Verdict())
	if !r.Checked() {
		return
	}
	run, err := r.LoadRun()
	if err != nil {
		return
	}
	res := r.Outcome.Result
	if _, ok := reports.RedisLostWrites(run, res); ok {
		s.RedisLoss++
	}
	for _, c := range r.FailedChecks() {
		s.Failed[c]++
	}
	if _, at, ok := r.FirstViolation(); ok && at >= 0 {
		s.FirstViolation = append(s.FirstViolation, at)
	}
	for _, w := range res.Windows {
		if w.Fault == s.Fault {
			s.Windows = append(s.Windows, w.ToNewToken)
		}
	}
	s.Promotions = append(s.Promotions, promotionTimes(r.Outcome.Dir, run.Faults)...)
}

// promotionTimes pairs each injection of a fault with the first promotion after it.
func promotionTimes(dir string, fs []history.Event) []time.Duration {
	b, err := os.ReadFile(filepath.Join(dir, backend.PromotionsFile))
	if err != nil {
		return nil
	}
	var ps []backend.Promotion
	if json.Unmarshal(b, &ps) != nil {
		return nil
	}
	var out []time.Duration
	for _, f := range fs {
		if f.Type != history.Invoke {
			continue
		}
		at := time.Unix(0, f.Time)
		for _, p := range ps {
			if !p.Time.Before(at) {
				out = append(out, p.Time.Sub(at))
				break
			}
		}
	}
	return out
}

// WriteMarkdown writes the table of sums.
func WriteMarkdown(w io.Writer, cfg Config, sums []Summary) {
	fmt.Fprintf(w, "# Redis topologies under Redis faults\n\n")
	fmt.Fprintf(w, "The reference implementation, 3 nodes, lease 2 s; each row with the seeds its line below names. The rows were run by (a later line's rows replace an earlier one's):\n\n")
	var tops []string
	for _, s := range sums {
		if !slices.Contains(tops, s.Topology) {
			tops = append(tops, s.Topology)
		}
	}
	cmd := cmp.Or(cfg.Command, fmt.Sprintf("fenceline topologies --seeds %d --duration %s", cfg.Seeds, cfg.Duration))
	which := strings.Join(tops, ", ") + " rows"
	if cfg.Only != "" {
		which += fmt.Sprintf(" named *%s*", cfg.Only)
	}
	seeds := matrix.Seeds{First: cfg.Seed, Count: cfg.Seeds}
	fmt.Fprintf(w, "- `%s`: the %s, seeds %s, %s.\n\n", cmd, which, seeds.Range(), time.Now().UTC().Format("2006-01-02"))
	t := matrix.Table{
		Header: []string{"topology", "mitigation", "fault", "runs", "valid / invalid / unknown", "checks failed (runs)",
			"Redis lost acknowledged writes (runs)", "first violation, median", "failover window p50 / p99", "promotion p50 / max"},
		Right: []bool{false, false, false, true, false, false, true, true, false, false},
	}
	for _, s := range sums {
		var failed []string
		for _, k := range slices.Sorted(maps.Keys(s.Failed)) {
			failed = append(failed, fmt.Sprintf("%s %d", k, s.Failed[k]))
		}
		fv, win, prom := "—", "—", "—"
		if d := checker.Summarize(s.FirstViolation); d.Count > 0 {
			fv = matrix.Dur(d.P50)
		}
		if d := checker.Summarize(s.Windows); d.Count > 0 {
			win = matrix.Dur(d.P50) + " / " + matrix.Dur(d.P99)
		}
		if d := checker.Summarize(s.Promotions); d.Count > 0 {
			prom = matrix.Dur(d.P50) + " / " + matrix.Dur(d.Max)
		}
		t.Add(s.Topology, s.Mitigation.Name, s.Fault, strconv.Itoa(s.Runs), fmt.Sprintf("%d / %d / %d", s.Valid, s.Invalid, s.Unknown),
			matrix.OrDash(strings.Join(failed, ", ")), strconv.Itoa(s.RedisLoss), fv, win, prom)
	}
	t.Markdown(w)
	fmt.Fprintln(w, "\nMitigations:")
	for _, m := range append(Mitigations(), ClusterMitigations()[1]) {
		fmt.Fprintf(w, "- `%s`: %s.\n", m.Name, m.About)
	}
	fmt.Fprintln(w, "\nA failover window runs from the fault's injection to the first commit accepted under a newer token; a promotion from the injection to the `+switch-master` the Sentinels announced, or in a cluster to the first poll of the data nodes (every 50 ms) that found the replica of the election's slot a primary with a newer config epoch. Run directories are under `runs/`.")
}

// MergeMarkdown merges a new table into an old one: the old table's rows that the new
// one does not have (by topology, mitigation and fault) are kept, in Cells order
// with the new rows, and so are the old lines that say how they were run. Everything
// else comes from the new table.
func MergeMarkdown(old, new string) string {
	oldRows, oldRuns := splitTable(old)
	newRows, newRuns := splitTable(new)
	var rows []string
	kept := map[string]bool{}
	for _, c := range Cells() {
		k := c.Topology + "|" + c.Mitigation.Name + "|" + c.Fault
		if r, ok := newRows[k]; ok {
			rows = append(rows, r)
		} else if r, ok := oldRows[k]; ok {
			rows = append(rows, r)
			kept[c.Topology] = true
		}
	}
	var runs []string
	for _, l := range oldRuns {
		// A line is kept while some row it ran is: "the single, sentinel rows".
		for t := range kept {
			if strings.Contains(l, " "+t+",") || strings.Contains(l, " "+t+" rows") {
				runs = append(runs, l)
				break
			}
		}
	}
	runs = append(runs, newRuns...)
	var b strings.Builder
	lines := strings.Split(new, "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case isRunLine(l):
			if i > 0 && isRunLine(lines[i-1]) {
				continue
			}
			b.WriteString(strings.Join(runs, "\n") + "\n")
		case strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, "| topology"):
			if i > 0 && strings.HasPrefix(lines[i-1], "|---") {
				b.WriteString(strings.Join(rows, "\n") + "\n")
			}
		default:
			b.WriteString(l + "\n")
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func isRunLine(l string) bool { return strings.HasPrefix(l, "- `fenceline topologies") }

// splitTable returns a table's rows by topology|mitigation|fault, and its lines that
// say how they were run (a table of the first format, with one such sentence, gets it
// as such a line).
func splitTable(md string) (map[string]string, []string) {
	rows := map[string]string{}
	var runs, tops []string
	first := ""
	for _, l := range strings.Split(md, "\n") {
		switch {
		case isRunLine(l):
			runs = append(runs, l)
		case strings.HasPrefix(l, "`fenceline topologies"):
			// "`fenceline topologies --seeds 3 --duration 1m0s` (the reference ...), DATE."
			first = l
		case strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, "| topology"):
			f := strings.Split(l, "|")
			if len(f) > 4 {
				t := strings.TrimSpace(f[1])
				rows[t+"|"+strings.TrimSpace(f[2])+"|"+strings.TrimSpace(f[3])] = l
				if !slices.Contains(tops, t) {
					tops = append(tops, t)
				}
			}
		}
	}
	if first != "" {
		cmd, rest, _ := strings.Cut(strings.TrimPrefix(first, "`"), "`")
		date := strings.TrimSuffix(rest[strings.LastIndex(rest, ",")+1:], ".")
		runs = append(runs, "- `"+cmd+"`: the "+strings.Join(tops, ", ")+" rows,"+date+".")
	}
	return rows, runs
}
