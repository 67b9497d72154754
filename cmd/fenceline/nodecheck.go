//go:build chaos

package main

import (
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/fenceline/fenceline/election"

	"github.com/fenceline/fenceline/experiment/nodecheck"
)

// runNodeCheck checks a node of any language against the node protocol
// (docs/node-protocol.md): 0 when it conforms, 1 when not, 2 when it cannot be started.
func runNodeCheck(args []string, stdout, stderr io.Writer) int {
	var cfg nodecheck.Config
	fs := flag.NewFlagSet("node-check", flag.ContinueOnError)
	fs.StringVar(&cfg.Cmd, "node-cmd", "", "the node's command line, as for 'fenceline chaos --node-cmd' (required)")
	fs.DurationVar(&cfg.LeaseTTL, "lease-ttl", election.DefaultLeaseTTL, "lease TTL given to the node")
	fs.DurationVar(&cfg.Lead, "lead", 15*time.Second, "how long the node has to lead and commit")
	fs.StringVar(&cfg.Dir, "out", "", "directory that receives the check's run (default: a new temporary directory, kept)")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if err := cfg.Prepare(); err != nil {
		fmt.Fprintf(stderr, "fenceline node-check: %v\n", err)
		return exitUsage
	}
	ctx, stop := interruptible()
	defer stop()
	return nodecheck.Run(ctx, cfg, stdout, stderr)
}
