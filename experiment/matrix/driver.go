//go:build chaos

package matrix

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/fenceline/fenceline/experiment/chaosrun"
)

// Row is one named configuration of a matrix: the settings of its runs. Name is also
// its directory under OUT/runs, so it must be a plain file name.
type Row struct {
	Name string
	// Spec is every run's settings, prepared (chaosrun.Spec.Prepare); the driver sets
	// Seed and Out for each run.
	Spec chaosrun.Spec
}

// Run is one planned run: a row with one seed.
type Run struct {
	Row
	Seed int64
	// Label is how the progress log names the run; default "<row>, seed N".
	Label string
}

// Cross plans rows × seeds seed by seed: every row with the first seed, then every
// row with the next, so that an interrupted matrix has run each row about as often.
func Cross(rows []Row, seeds Seeds) []Run {
	var out []Run
	for _, s := range seeds.List() {
		for _, r := range rows {
			out = append(out, Run{Row: r, Seed: s})
		}
	}
	return out
}

// ByRow plans rows × seeds row by row: every seed of the first row, then of the next.
func ByRow(rows []Row, seeds Seeds) []Run {
	var out []Run
	for _, r := range rows {
		for _, s := range seeds.List() {
			out = append(out, Run{Row: r, Seed: s})
		}
	}
	return out
}

func (r Run) label() string {
	if r.Label != "" {
		return r.Label
	}
	return fmt.Sprintf("%s, seed %d", r.Name, r.Seed)
}

// Result is what came of one planned run.
type Result struct {
	Run
	// Outcome is the chaos run's outcome; zero when NotRun.
	Outcome chaosrun.Outcome
	// NotRun: ctx had ended before the run could start.
	NotRun bool
}

// Driver runs a plan. The zero value runs nothing useful: Cmd and Out are required.
type Driver struct {
	// Cmd names the experiment in the progress log ("validate": "fenceline validate: ...").
	Cmd string
	// Out is the experiment's directory; run directories go to Out/runs/<row>/. Execute
	// makes it absolute (redis-server changes into its data directory before it opens
	// its log file, so a relative run directory breaks the local backend).
	Out string
	// Parallel is how many runs run at once. Default (0): 1.
	Parallel int
	// Progress receives a line when a run starts and one when it ends. Default: none.
	Progress io.Writer
	// RunLog receives each run's own log (its run directory, the harness's warnings).
	// Default: none. With Parallel > 1 the runs' lines interleave.
	RunLog io.Writer
	// Done, if set, gives the progress line of a finished run (the i-th of the plan);
	// default "<label>: <verdict> (<dir>)".
	Done func(i int, r Result) string
	// Exec runs one run; default: the chaos run of the row's Spec with the run's seed,
	// into Out/runs/<row>. Tests replace it.
	Exec func(ctx context.Context, r Run) chaosrun.Outcome

	abs string // Out, absolute; set by Execute
}

// Execute runs plan, Parallel at once, and returns one Result per planned run in plan
// order. It blocks until every started run has finished. Once ctx is done it starts no
// other run (those under way heal and stop: the harness watches ctx) and marks the
// rest NotRun. Its error is one of the experiment's directory, before any run.
func (d *Driver) Execute(ctx context.Context, plan []Run) ([]Result, error) {
	abs, err := filepath.Abs(d.Out)
	if err == nil {
		err = os.MkdirAll(abs, 0o755)
	}
	if err != nil {
		return nil, fmt.Errorf("fenceline %s: %w", d.Cmd, err)
	}
	d.abs = abs
	exec := d.Exec
	if exec == nil {
		exec = d.chaosRun
	}
	progress := d.Progress
	if progress == nil {
		progress = io.Discard
	}
	out := make([]Result, len(plan))
	for i, r := range plan {
		out[i] = Result{Run: r, NotRun: true}
	}
	var mu sync.Mutex // guards progress
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(d.Parallel, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if ctx.Err() != nil {
					continue // handed over as ctx ended: not started, stays NotRun
				}
				mu.Lock()
				fmt.Fprintf(progress, "fenceline %s: [%d/%d] %s\n", d.Cmd, i+1, len(plan), plan[i].label())
				mu.Unlock()
				r := Result{Run: plan[i], Outcome: exec(ctx, plan[i])}
				line := fmt.Sprintf("%s: %s (%s)", r.label(), orText(string(r.Verdict()), "not checked"), orText(r.Outcome.Dir, "no run directory"))
				if d.Done != nil {
					line = d.Done(i, r)
				}
				mu.Lock()
				out[i] = r
				fmt.Fprintf(progress, "fenceline %s: [%d/%d] %s\n", d.Cmd, i+1, len(plan), line)
				mu.Unlock()
			}
		}()
	}
	for i := range plan {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return out, nil
}

// chaosRun is the default Exec.
func (d *Driver) chaosRun(ctx context.Context, r Run) chaosrun.Outcome {
	s := r.Spec
	s.Seed, s.Out = r.Seed, d.RowDir(r.Name)
	logw := d.RunLog
	if logw == nil {
		logw = io.Discard
	}
	return s.Run(ctx, io.Discard, logw)
}

// RowDir is the directory that receives the run directories of row name: Out/runs/name,
// absolute once Execute has started.
func (d *Driver) RowDir(name string) string {
	return filepath.Join(d.Dir(), "runs", name)
}

// Rel returns path p relative to Out, as the experiment's own files link it; p itself
// when it is not below Out or is "".
func (d *Driver) Rel(p string) string {
	if p == "" {
		return ""
	}
	rel, err := filepath.Rel(d.Dir(), p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return p
	}
	return rel
}

// Dir is Out, absolute.
func (d *Driver) Dir() string {
	if d.abs != "" {
		return d.abs
	}
	if abs, err := filepath.Abs(d.Out); err == nil {
		return abs
	}
	return d.Out
}

func orText(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
