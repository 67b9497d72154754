package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/reports"
	"github.com/fenceline/fenceline/source"
	"github.com/fenceline/fenceline/workloads"
)

func runCheck(args []string, stdout, stderr io.Writer) int {
	return runDirCommand("check", "Re-checks a stored run and rewrites its report; exits 0 valid, 1 invalid, 2 bad input, 3 unknown.", args, stdout, stderr)
}

// runReport regenerates a stored run's report. The report is a rendering of the
// checker's result, so it checks the run again: the checker is deterministic and fast.
func runReport(args []string, stdout, stderr io.Writer) int {
	return runDirCommand("report", "Regenerates results.json, report.md, index.html and junit.xml of a stored run.", args, stdout, stderr)
}

// runDirCommand is a subcommand whose one argument is a run directory.
func runDirCommand(name, about string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: fenceline %s RUN_DIR\n\n%s\n", name, about)
	}
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitUsage
	}
	return checkAndReport(fs.Arg(0), stdout, stderr)
}

// checkAndReport checks the run in dir, writes its report files and prints the summary.
// It returns the exit code of the verdict.
func checkAndReport(dir string, stdout, stderr io.Writer) int {
	code, _ := checkRun(dir, stdout, stderr)
	return code
}

// checkRun is checkAndReport that also returns the checker's result (nil when the
// check could not run).
func checkRun(dir string, stdout, stderr io.Writer) (int, *checker.Result) {
	if os.Getenv("GOMEMLIMIT") == "" {
		// A million-operation history is about 600 MB in memory; without a limit the
		// collector lets the heap double. Measured: 1M operations in under 10 s and 1 GB.
		debug.SetMemoryLimit(800 << 20)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		fmt.Fprintf(stderr, "fenceline: %s is not a run directory\n", dir)
		return exitUsage, nil
	}
	run, err := history.LoadRun(dir)
	if err != nil {
		fmt.Fprintf(stderr, "fenceline: %v\n", err)
		return exitUsage, nil
	}
	opts := checker.Options{ExpectedBalances: source.Balances, OutDir: dir}
	if wl, err := workloads.ByName(run.Info.Workload); err == nil {
		opts.Checks = wl.Checks
	}
	res, err := checker.Check(context.Background(), run, opts)
	if err != nil {
		fmt.Fprintf(stderr, "fenceline: check %s: %v\n", dir, err)
		if errors.Is(err, context.DeadlineExceeded) {
			return exitUnknown, nil
		}
		return exitUsage, nil
	}
	if err := reports.Write(run, res); err != nil {
		fmt.Fprintf(stderr, "fenceline: report: %v\n", err)
		return exitUnknown, res
	}
	if err := reports.Summary(stdout, run, res); err != nil {
		fmt.Fprintf(stderr, "fenceline: summary: %v\n", err)
	}
	fmt.Fprintf(stdout, "\nreport: %s\n", dir)
	// The report's rule, not the checker's bare verdict: an interrupted run is unknown.
	switch reports.Verdict(run, res) {
	case checker.Valid:
		return exitOK, res
	case checker.Invalid:
		return exitInvalid, res
	}
	return exitUnknown, res
}
