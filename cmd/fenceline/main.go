// Command fenceline runs the fenced listener (node, source, status), judges stored runs
// (check, report) and, in a chaos build (go build -tags chaos; bin/fenceline-chaos), runs
// the chaos harness that verifies it (chaos, validate, soak, ...). See docs/cli.md.
//
// Exit codes: 0 valid (or success), 1 invalid, 2 usage or bad input, 3 unknown — the
// checker could not decide or the run could not be completed; never a pass.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/fenceline/fenceline/internal/buildinfo"
	"github.com/fenceline/fenceline/internal/cli"
	"github.com/fenceline/fenceline/internal/exitcode"
	"github.com/fenceline/fenceline/node"
)

// Exit codes.
const (
	exitOK      = exitcode.OK
	exitInvalid = exitcode.Invalid
	exitUsage   = exitcode.Usage
	exitUnknown = exitcode.Unknown
)

// program is the binary: its commands, each -h made from its Args and Summary.
func program() cli.Program {
	const c = chaosBuild
	return cli.Program{Name: "fenceline", Summary: "fenced leader election on Redis, and the harness that verifies it",
		Version: "version", Absent: "the chaos harness is not in this build; " + node.ChaosBuildHint, Commands: []cli.Command{
			{Name: "node", Summary: "run one listener instance (leader election + fenced listener)", Present: true, Run: runNode},
			{Name: "source", Summary: "serve the deterministic event feed", Present: true, Run: runSource},
			{Name: "status", Summary: "print the current leader, token and cursor as JSON", Present: true, Run: runStatus},
			{Name: "check", Args: "RUN_DIR", Summary: "judge a stored run and print its verdict, rewriting nothing in it", Present: true, Run: runCheck},
			{Name: "report", Args: "RUN_DIR", Summary: "judge a stored run and rewrite its results.json, report.md, index.html and junit.xml", Present: true, Run: runReport},
			{Name: "version", Summary: "print the module version and the VCS revision", Present: true, Run: runVersion},
			{Name: "chaos", Summary: "run a chaos experiment, check it and write its report", Present: c, Run: runChaos},
			{Name: "validate", Summary: "run the broken variants and the reference, and measure detection rates", Present: c, Run: runValidate},
			{Name: "targets", Summary: "run every target (lock libraries, the reference) under the same faults and tabulate them", Present: c, Run: runTargets},
			{Name: "topologies", Summary: "run the reference on each Redis topology and mitigation under each Redis fault, in one table", Present: c, Run: runTopologies},
			{Name: "soak", Summary: "run many seeded all-fault chaos runs (or a shard of them) and sum them up", Present: c, Run: runSoak},
			{Name: "soak-report", Args: "DIR...", Summary: "merge soak directories or shard summaries into one table", Present: c, Run: runSoakReport},
			{Name: "mutants", Summary: "generate mutants of the safety-critical code and grade the unit tests and the harness on them", Present: c, Run: runMutants},
			{Name: "shrink", Args: "RUN_DIR", Summary: "search a failing run's schedule for a smaller one that still fails", Present: c, Run: runShrink},
			{Name: "node-check", Summary: "check that a node in any language follows the node protocol (--node-cmd)", Present: c, Run: runNodeCheck},
			{Name: "bus-relay", Summary: "relay a Redis Cluster's bus so that one sender can be cut (the docker backend runs it)", Present: c, Run: runBusRelay},
		}}
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int { return program().Run(args, stdout, stderr) }

func runVersion(args []string, stdout, stderr io.Writer) int {
	if code, ok := parseFlags(flag.NewFlagSet("version", flag.ContinueOnError), args, stderr); !ok {
		return code
	}
	fmt.Fprint(stdout, buildinfo.Read().Text())
	return exitOK
}

// parseFlags parses a command's flags (cli.Program.Parse). It returns (code, false) when
// the command must stop: -h (exit 0) or a usage error (exit 2, one line on stderr).
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) (int, bool) {
	_, code, ok := program().Parse(fs, args, stderr)
	return code, ok
}

// parseArgs is parseFlags for a command with arguments, which it returns.
func parseArgs(fs *flag.FlagSet, args []string, stderr io.Writer) ([]string, int, bool) {
	return program().Parse(fs, args, stderr)
}

// interruptible is the context of a command that stops cleanly on Ctrl-C or SIGTERM.
func interruptible() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}
