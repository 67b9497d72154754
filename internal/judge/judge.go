// Package judge checks a stored run directory and writes its report: what `fenceline
// check` and `fenceline report` do, and what a chaos run does once its cluster is gone.
// It reads only the run directory; it imports the checker and the reports, never the
// code under test.
package judge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/internal/exitcode"
	"github.com/fenceline/fenceline/reports"
	"github.com/fenceline/fenceline/workloads"
)

// Dir checks the run in dir, writes its report files, prints the summary to stdout and
// returns the exit code of the verdict (exitcode.Usage for a directory it cannot read)
// with the checker's result (nil when the check could not run). It blocks until done.
func Dir(dir string, stdout, stderr io.Writer) (int, *checker.Result) {
	if os.Getenv("GOMEMLIMIT") == "" {
		// A million-operation history is about 600 MB in memory; without a limit the
		// collector lets the heap double. Measured: 1M operations in under 10 s and 1 GB.
		debug.SetMemoryLimit(800 << 20)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		fmt.Fprintf(stderr, "fenceline: %s is not a run directory\n", dir)
		return exitcode.Usage, nil
	}
	run, err := history.LoadRun(dir)
	if err != nil {
		fmt.Fprintf(stderr, "fenceline: %v\n", err)
		if interrupted(dir) {
			// The harness's own record of a run it could not finish (one that
			// recorded nothing, a torn audit): undecided, not bad input.
			return exitcode.Unknown, nil
		}
		return exitcode.Usage, nil
	}
	opts := workloads.CheckerOptions(run.Info.Workload, dir)
	if opts.Budgets, err = checker.ParseBudgets(run.Info.Budget); err != nil {
		fmt.Fprintf(stderr, "fenceline: %s: %v\n", history.RunInfoFile, err)
		return exitcode.Usage, nil
	}
	res, err := checker.Check(context.Background(), run, opts)
	if err != nil {
		fmt.Fprintf(stderr, "fenceline: check %s: %v\n", dir, err)
		if errors.Is(err, context.DeadlineExceeded) {
			return exitcode.Unknown, nil
		}
		return exitcode.Usage, nil
	}
	if err := reports.WriteAndSummarize(stdout, run, res); err != nil {
		fmt.Fprintf(stderr, "fenceline: report: %v\n", err)
		if !errors.Is(err, reports.ErrSummary) {
			return exitcode.Unknown, res
		}
	}
	fmt.Fprintf(stdout, "\nreport: %s\n", dir)
	// The report's rule, not the checker's bare verdict: an interrupted run is unknown.
	return exitcode.Of(reports.Verdict(run, res)), res
}

// interrupted reports whether dir's run.json is readable and says the run was not
// completed.
func interrupted(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, history.RunInfoFile))
	if err != nil {
		return false
	}
	var info history.RunInfo
	return json.Unmarshal(b, &info) == nil && info.Interrupted != ""
}
