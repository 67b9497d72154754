// Command fenceline runs the fenced listener (node, source, status), judges stored runs
// (check, report) and, in a chaos build (go build -tags chaos; bin/fenceline-chaos), runs
// the chaos harness that verifies it (chaos, validate, soak). See README.md.
//
// Exit codes: 0 valid (or success), 1 invalid, 2 usage or bad input, 3 unknown — the
// checker could not decide or the run could not be completed; never a pass.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/fenceline/fenceline/internal/exitcode"
)

// Exit codes.
const (
	exitOK      = exitcode.OK
	exitInvalid = exitcode.Invalid
	exitUsage   = exitcode.Usage
	exitUnknown = exitcode.Unknown
)

type command struct {
	name, summary string
	run           func(args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"node", "run one listener instance (leader election + fenced listener)", runNode},
		{"source", "serve the deterministic event feed", runSource},
		{"status", "print the current leader, token and cursor as JSON", runStatus},
		{"check", "re-check a stored run directory", runCheck},
		{"report", "regenerate the report of a stored run directory", runReport},
		{"chaos", "run a chaos experiment, check it and write its report" + chaosOnly, runChaos},
		{"validate", "run the broken variants and the reference, and measure detection rates" + chaosOnly, runValidate},
		{"soak", "run many seeded all-fault chaos runs (or a shard of them) and sum them up" + chaosOnly, runSoak},
		{"targets", "run every target (lock libraries, the reference) under the same faults and tabulate them" + chaosOnly, runTargets},
		{"node-check", "check that a node in any language follows the node protocol (--node-cmd)" + chaosOnly, runNodeCheck},
		{"soak-report", "merge soak directories or shard summaries into one table" + chaosOnly, runSoakReport},
		{"shrink", "search a failing run's schedule for a smaller one that still fails" + chaosOnly, runShrink},
		{"topologies", "run the reference on each Redis topology and mitigation under each Redis fault, in one table" + chaosOnly, runTopologies},
		{"bus-relay", "relay a Redis Cluster's bus so that one sender can be cut (the docker backend runs it)" + chaosOnly, runBusRelay},
	}
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "fenceline: unknown command %q\n\n", args[0])
	usage(stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: fenceline <command> [flags]\n\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-11s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'fenceline <command> -h' for a command's flags.")
}

// parseFlags parses a subcommand's flags. It returns (code, false) when the command
// must stop: -h (exit 0) or a usage error (exit 2, with the message on stderr).
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) (int, bool) {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK, false
		}
		return exitUsage, false
	}
	if fs.NArg() > 0 && fs.Name() != "check" && fs.Name() != "report" && fs.Name() != "shrink" {
		fmt.Fprintf(stderr, "fenceline %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return exitUsage, false
	}
	return 0, true
}
