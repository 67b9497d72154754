package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/fenceline/fenceline/experiment/judge"
)

// runCheck judges a stored run and writes nothing in it, unless --write.
func runCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the verdict as JSON (what results.json holds) instead of the summary")
	write := fs.Bool("write", false, "rewrite the run's report files, as 'fenceline report' does")
	dir, code, ok := parseArgs(fs, args, stderr)
	mode := judge.Summary
	switch {
	case !ok:
		return code
	case *write && *asJSON:
		fmt.Fprintln(stderr, "fenceline check: --json and --write do not go together")
		return exitUsage
	case *write:
		mode = judge.Write
	case *asJSON:
		mode = judge.JSON
	}
	code, _ = judge.Judge(dir[0], mode, stdout, stderr)
	return code
}

// runReport regenerates a stored run's report. The report is a rendering of the
// checker's result, so it checks the run again: the checker is deterministic and fast.
func runReport(args []string, stdout, stderr io.Writer) int {
	dir, code, ok := parseArgs(flag.NewFlagSet("report", flag.ContinueOnError), args, stderr)
	if ok {
		code, _ = judge.Dir(dir[0], stdout, stderr)
	}
	return code
}
