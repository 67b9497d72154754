package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/fenceline/fenceline/experiment/judge"
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
	code, _ := judge.Dir(dir, stdout, stderr)
	return code
}
