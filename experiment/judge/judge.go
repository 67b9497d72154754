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
	"strings"

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
		debug.SetMemoryLimit(memoryLimit(dir))
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
	opts := workloads.CheckerOptions(run.Info, dir)
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
	return reports.Verdict(run, res).ExitCode(), res
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

// memoryLimit is the soft memory limit for checking the run in dir: 1.15 times the size
// of what it reads (a compressed file counted ten times: histories compress about
// tenfold), and at least 256 MiB. What a check holds at its peak is below that size
// (measured: about 390-430 MB live for the 402 MB of a million-operation run, whose
// peak RSS is then 460 MB with the limit and 490-530 MB without it): the limit only
// trims the garbage the collector would let pile up near the peak. A run that needs
// more than the estimate makes the collector work harder, never fail: the limit is soft.
func memoryLimit(dir string) int64 {
	var size int64
	add := func(path string) {
		if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
			if strings.HasSuffix(path, history.GzipSuffix) {
				size += 10 * st.Size()
			} else {
				size += st.Size()
			}
		}
	}
	for _, f := range []string{history.AuditFile, history.FaultsFile} {
		add(filepath.Join(dir, f))
		add(filepath.Join(dir, f+history.GzipSuffix))
	}
	add(filepath.Join(dir, history.StoreFile))
	files, _ := filepath.Glob(filepath.Join(dir, history.HistoryDir, "*.jsonl*")) // the pattern is well formed
	for _, f := range files {
		add(f)
	}
	return max(256<<20, size+size*15/100)
}
