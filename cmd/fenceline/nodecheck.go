//go:build chaos

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/fenceline/fenceline/experiment/nodecheck"
)

func runNodeCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("node-check", flag.ContinueOnError)
	cmd := fs.String("node-cmd", "", "the node's command line, as for 'fenceline chaos --node-cmd' (required)")
	lease := fs.Duration("lease-ttl", 2*time.Second, "lease TTL given to the node")
	lead := fs.Duration("lead", 15*time.Second, "how long the node has to lead and commit")
	out := fs.String("out", "", "directory that receives the check's run (default: a new temporary directory, kept)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: fenceline node-check --node-cmd 'COMMAND ...' [flags]\n\nStarts one node with the node protocol's environment (docs/node-protocol.md) against a\nreal Redis and event source, watches its /status, stops it with SIGTERM and reports, line\nby line, what is missing or malformed in what it recorded; then the checker judges its\nrun. Exits 0 when the node conforms, 1 when it does not, 2 when it cannot be started or\nfor a usage error, 3 when the check could not be completed.\n\nflags:")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if strings.TrimSpace(*cmd) == "" || *lease < 100*time.Millisecond || *lead <= 0 {
		fmt.Fprintln(stderr, "fenceline node-check: need --node-cmd, --lease-ttl >= 100ms and --lead > 0")
		return exitUsage
	}
	bin, err := os.Executable()
	if err == nil && *out == "" {
		*out, err = os.MkdirTemp("", "fenceline-node-check-")
	}
	if err != nil {
		fmt.Fprintf(stderr, "fenceline node-check: %v\n", err)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return nodecheck.Run(ctx, nodecheck.Config{Cmd: *cmd, Binary: bin, LeaseTTL: *lease, Lead: *lead, Dir: *out}, stdout, stderr)
}
