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

	"github.com/fenceline/fenceline/experiment/validate"
)

func runValidate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	seeds := fs.Int("seeds", 3, "seeds per variant: runs use seeds 1..K")
	duration := fs.Duration("duration", 60*time.Second, "length of each run's chaos phase")
	names := fs.String("variants", "all", "broken variants to run, comma-separated, or all: "+strings.Join(validate.BrokenNames(), ", "))
	lease := fs.Duration("lease-ttl", 2*time.Second, "lease TTL of the election")
	out := fs.String("out", "reports/validate", "directory that receives the runs, "+validate.Markdown+" and "+validate.JSONFile)
	nodes := fs.Int("nodes", 3, "number of nodes")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: fenceline validate [flags]\n\nRuns each deliberately broken variant under its faults, and the reference under the same\nfaults and seeds, and prints the detection rates. Exits 0 when the reference has no false\nalarm and every variant that must be caught is caught in at least 95% of its runs, 1 when\nnot, 2 for a usage error, 3 when runs could not be completed.\n\nflags:")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	vs, err := validate.PickVariants(*names)
	if err != nil {
		fmt.Fprintf(stderr, "fenceline validate: %v\n", err)
		return exitUsage
	}
	if *seeds < 1 || *duration <= 0 {
		fmt.Fprintln(stderr, "fenceline validate: need --seeds >= 1 and --duration > 0")
		return exitUsage
	}
	// Ctrl-C stops the run under way (the harness heals and cleans up), skips the rest
	// and still writes the table of what ran.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return validate.Run(ctx, validate.Config{
		Variants: vs, Seeds: *seeds, Duration: *duration, LeaseTTL: *lease, Nodes: *nodes, Out: *out,
		Command: strings.TrimSpace("fenceline validate " + strings.Join(args, " ")),
	}, stdout, stderr)
}
