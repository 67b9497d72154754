//go:build chaos

// Package topomatrix runs the reference implementation on each Redis topology, with each
// mitigation, under each Redis fault, for several seeds, and sums the runs up in one
// table: how often Redis's own failures break what the fence guarantees on one server.
// It is `fenceline topologies` without its flags, in chaos builds only.
package topomatrix

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/cluster"
	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/internal/chaosrun"
	"github.com/fenceline/fenceline/internal/exitcode"
	"github.com/fenceline/fenceline/reports"
	"github.com/fenceline/fenceline/workloads"
)

// Mitigation is one way of running the sentinel topology more carefully.
type Mitigation struct {
	Name  string
	About string
	// Wait is the nodes' --redis-wait; MinReplicas the data nodes' min-replicas-to-write
	// (with a max lag of 1 s).
	Wait, MinReplicas int
}

// Mitigations are the matrix's mitigations, the first being none.
func Mitigations() []Mitigation {
	return []Mitigation{
		{Name: "none", About: "asynchronous replication as deployed by default"},
		{Name: "wait-2", About: "the nodes WAIT for both replicas after every script (100 ms); a miss is an unknown outcome", Wait: 2},
		{Name: "min-replicas-1", About: "the data nodes refuse writes unless one replica acknowledged within 1 s", MinReplicas: 1},
	}
}

// Cell is one row of the matrix: a topology, a mitigation and a fault kind.
type Cell struct {
	Topology   string
	Mitigation Mitigation
	Fault      string
}

// Cells lists the matrix: the single server under its restart (the baseline: an
// append-only file synced on every write), and the sentinel topology with each
// mitigation under each replicated fault.
func Cells() []Cell {
	cells := []Cell{{Topology: cluster.TopologySingle, Mitigation: Mitigations()[0], Fault: faults.RedisRestart}}
	for _, m := range Mitigations() {
		for _, f := range faults.Replicated() {
			cells = append(cells, Cell{Topology: cluster.TopologySentinel, Mitigation: m, Fault: f})
		}
	}
	return cells
}

// Config is one matrix.
type Config struct {
	Seeds    int           // runs per cell, seeds 1..Seeds
	Duration time.Duration // each run's chaos phase
	Out      string        // receives the run directories (runs/<cell>/)
	Markdown string        // the table's file (default Out/topologies.md)
	Binary   string        // the fenceline binary the nodes run ("" = this one)
	Parallel int           // runs at once (default 1)
	Cells    []Cell        // default Cells()
}

// Markdown is the table's default file name in Config.Out.
const Markdown = "topologies.md"

// Summary is what the runs of one cell came to.
type Summary struct {
	Cell
	Runs, Valid, Invalid, Unknown int
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

// Run runs the matrix and writes Markdown into cfg.Out. It blocks until every run has
// finished, or ctx ends (the runs in progress then heal and stop). The exit code is
// exitcode.Unknown if a run could not be completed, else OK: an invalid run is the
// finding the matrix measures, not a failure of it.
func Run(ctx context.Context, cfg Config, stdout, stderr io.Writer) int {
	if cfg.Seeds < 1 || cfg.Duration <= 0 {
		fmt.Fprintln(stderr, "fenceline topologies: need --seeds >= 1 and --duration > 0")
		return exitcode.Usage
	}
	if cfg.Cells == nil {
		cfg.Cells = Cells()
	}
	cfg.Parallel = max(cfg.Parallel, 1)
	wl, err := workloads.ByName("listener")
	if err != nil {
		fmt.Fprintf(stderr, "fenceline topologies: %v\n", err)
		return exitcode.Usage
	}
	type job struct {
		i    int
		spec chaosrun.Spec
	}
	sums := make([]Summary, len(cfg.Cells))
	var jobs []job
	for i, c := range cfg.Cells {
		sums[i] = Summary{Cell: c, Failed: map[string]int{}}
		for seed := int64(1); seed <= int64(cfg.Seeds); seed++ {
			s := chaosrun.Spec{
				Cmd: "topologies", Duration: cfg.Duration, Nodes: 3, Nemeses: []string{c.Fault}, Seed: seed,
				Workload: wl, Backend: "local", LeaseTTL: 2 * time.Second, Variant: "reference",
				Out:    filepath.Join(cfg.Out, "runs", CellName(c)),
				Binary: cfg.Binary, Quiet: true,
				Redis:     cluster.RedisSpec{Topology: c.Topology, MinReplicasToWrite: c.Mitigation.MinReplicas, MinReplicasMaxLag: 1},
				RedisWait: c.Mitigation.Wait,
			}
			if err := s.Prepare(); err != nil {
				fmt.Fprintf(stderr, "fenceline topologies: %s: %v\n", CellName(c), err)
				return exitcode.Usage
			}
			jobs = append(jobs, job{i, s})
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := make(chan job)
	for range cfg.Parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				o := j.spec.Run(ctx, io.Discard, io.Discard)
				mu.Lock()
				sums[j.i].add(o)
				s := sums[j.i]
				fmt.Fprintf(stderr, "fenceline topologies: %s seed %d: %s (%s)\n", CellName(s.Cell), j.spec.Seed, verdictOf(o), o.Dir)
				mu.Unlock()
			}
		}()
	}
	for _, j := range jobs {
		if ctx.Err() != nil {
			break
		}
		next <- j
	}
	close(next)
	wg.Wait()
	var b strings.Builder
	WriteMarkdown(&b, cfg, sums)
	md := cmp.Or(cfg.Markdown, filepath.Join(cfg.Out, Markdown))
	if err = os.MkdirAll(filepath.Dir(md), 0o755); err == nil {
		err = os.WriteFile(md, []byte(b.String()), 0o644)
	}
	if err != nil {
		fmt.Fprintf(stderr, "fenceline topologies: %v\n", err)
	}
	io.WriteString(stdout, b.String())
	for _, s := range sums {
		if s.Unknown > 0 || s.Runs < cfg.Seeds {
			return exitcode.Unknown
		}
	}
	return exitcode.OK
}

// CellName names a row: topology-mitigation-fault.
func CellName(c Cell) string { return c.Topology + "-" + c.Mitigation.Name + "-" + c.Fault }

func verdictOf(o chaosrun.Outcome) checker.Verdict {
	switch {
	case o.Code == exitcode.OK:
		return checker.Valid
	case o.Code == exitcode.Invalid && o.Result != nil:
		return checker.Invalid
	}
	return checker.Unknown
}

// add sums up one run.
func (s *Summary) add(o chaosrun.Outcome) {
	s.Runs++
	s.Dirs = append(s.Dirs, o.Dir)
	switch verdictOf(o) {
	case checker.Valid:
		s.Valid++
	case checker.Invalid:
		s.Invalid++
	default:
		s.Unknown++
	}
	res := o.Result
	if res == nil {
		return
	}
	run, err := history.LoadRun(o.Dir)
	if err != nil {
		return
	}
	if _, ok := reports.RedisLostWrites(run, res); ok {
		s.RedisLoss++
	}
	first := int64(0)
	for _, c := range res.Checks {
		if c.Verdict == checker.Invalid {
			s.Failed[c.Name]++
			if c.FirstViolation > 0 && (first == 0 || c.FirstViolation < first) {
				first = c.FirstViolation
			}
		}
	}
	if first > 0 {
		s.FirstViolation = append(s.FirstViolation, time.Duration(first-res.Start))
	}
	for _, w := range res.Windows {
		if w.Fault == s.Fault {
			s.Windows = append(s.Windows, w.ToNewToken)
		}
	}
	s.Promotions = append(s.Promotions, promotionTimes(o.Dir, run.Faults)...)
}

// promotionTimes pairs each injection of a fault with the first promotion after it.
func promotionTimes(dir string, fs []history.Event) []time.Duration {
	b, err := os.ReadFile(filepath.Join(dir, cluster.PromotionsFile))
	if err != nil {
		return nil
	}
	var ps []cluster.Promotion
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
	fmt.Fprintf(w, "`fenceline topologies --seeds %d --duration %s` (the reference implementation, 3 nodes, lease 2 s; seeds 1..%d per row), %s.\n\n",
		cfg.Seeds, cfg.Duration, cfg.Seeds, time.Now().UTC().Format("2006-01-02"))
	fmt.Fprintln(w, "| topology | mitigation | fault | runs | valid / invalid / unknown | checks failed (runs) | Redis lost acknowledged writes (runs) | first violation, median | failover window p50 / p99 | promotion p50 / max |")
	fmt.Fprintln(w, "|---|---|---|---:|---|---|---:|---:|---|---|")
	for _, s := range sums {
		var failed []string
		for _, k := range sortedKeys(s.Failed) {
			failed = append(failed, fmt.Sprintf("%s %d", k, s.Failed[k]))
		}
		fv := "—"
		if len(s.FirstViolation) > 0 {
			fv = round(pct(s.FirstViolation, 50))
		}
		win, prom := "—", "—"
		if len(s.Windows) > 0 {
			win = round(pct(s.Windows, 50)) + " / " + round(pct(s.Windows, 99))
		}
		if len(s.Promotions) > 0 {
			prom = round(pct(s.Promotions, 50)) + " / " + round(pct(s.Promotions, 100))
		}
		fmt.Fprintf(w, "| %s | %s | %s | %d | %d / %d / %d | %s | %d | %s | %s | %s |\n",
			s.Topology, s.Mitigation.Name, s.Fault, s.Runs, s.Valid, s.Invalid, s.Unknown,
			cmp.Or(strings.Join(failed, ", "), "—"), s.RedisLoss, fv, win, prom)
	}
	fmt.Fprintln(w, "\nMitigations:")
	for _, m := range Mitigations() {
		fmt.Fprintf(w, "- `%s`: %s.\n", m.Name, m.About)
	}
	fmt.Fprintln(w, "\nA failover window runs from the fault's injection to the first commit accepted under a newer token; a promotion from the injection to the `+switch-master` the Sentinels announced. Run directories are under `runs/`.")
}

// pct is the nearest-rank percentile p (0 < p <= 100) of ds.
func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (p*len(s) + 99) / 100
	return s[max(i, 1)-1]
}

func round(d time.Duration) string {
	if d >= time.Second {
		return d.Round(10 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}

func sortedKeys(m map[string]int) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
