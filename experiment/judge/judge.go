// Package judge checks a stored run directory and, unless asked not to, writes its
// report: what `fenceline check` (which writes nothing) and `fenceline report` do, and
// what a chaos run does once its cluster is gone.
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

// Mode is what Judge does with the verdict besides returning its exit code.
type Mode int

const (
	// Write writes the report files (results.json, report.md, index.html, junit.xml and
	// porcupine's visualizations) into the run directory and prints the summary.
	Write Mode = iota
	// Summary prints the summary and writes nothing anywhere in the run directory.
	Summary
	// JSON prints the verdict as JSON (what results.json holds) and writes nothing.
	JSON
)

// Dir is Judge with Write: what `fenceline report` and a chaos run do.
func Dir(dir string, stdout, stderr io.Writer) (int, *checker.Result) {
	return Judge(dir, Write, stdout, stderr)
}

// Judge checks the run in dir, does what mode says with the verdict, and returns the
// exit code of the verdict (exitcode.Usage for a directory it cannot read) with the
// checker's result (nil when the check could not run). It blocks until done.
func Judge(dir string, mode Mode, stdout, stderr io.Writer) (int, *checker.Result) {
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
	if mode != Write {
		// Porcupine's visualizations go to a directory of their own, thrown away.
		tmp, err := os.MkdirTemp("", "fenceline-check-")
		if err != nil {
			fmt.Fprintf(stderr, "fenceline: %v\n", err)
			return exitcode.Unknown, nil
		}
		defer os.RemoveAll(tmp)
		opts.OutDir = tmp
	}
	res, err := checker.Check(context.Background(), run, opts)
	if err != nil {
		fmt.Fprintf(stderr, "fenceline: check %s: %v\n", dir, err)
		if errors.Is(err, context.DeadlineExceeded) {
			return exitcode.Unknown, nil
		}
		return exitcode.Usage, nil
	}
	if mode != Write {
		keepStoredVisualizations(dir, res)
	}
	switch mode {
	case Write:
		err = reports.WriteAndSummarize(stdout, run, res)
	case Summary:
		err = reports.Summary(stdout, run, res)
	case JSON:
		err = reports.WriteResults(stdout, run, res)
	}
	if err != nil {
		fmt.Fprintf(stderr, "fenceline: report: %v\n", err)
		if mode == Write && !errors.Is(err, reports.ErrSummary) {
			return exitcode.Unknown, res
		}
	}
	if mode == Write {
		fmt.Fprintf(stdout, "\nreport: %s\n", dir)
	}
	// The report's rule, not the checker's bare verdict: an interrupted run is unknown.
	return reports.Verdict(run, res).ExitCode(), res
}

// keepStoredVisualizations keeps, in a result checked without writing, only the names
// of visualizations the run directory has (an earlier report wrote them): the others
// were written to a directory that is gone.
func keepStoredVisualizations(dir string, res *checker.Result) {
	for i := range res.Checks {
		c := &res.Checks[i]
		if c.Visualization == "" {
			continue
		}
		if st, err := os.Stat(filepath.Join(dir, c.Visualization)); err != nil || !st.Mode().IsRegular() {
			c.Visualization = ""
		}
	}
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
