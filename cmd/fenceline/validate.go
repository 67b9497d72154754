//go:build chaos

package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/fenceline/fenceline/election"

	"github.com/fenceline/fenceline/experiment/validate"
)

func runValidate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	seed := fs.Int64("seed", 1, "first seed: runs use seeds N..N+K-1")
	seeds := fs.Int("seeds", 3, "seeds per variant (K)")
	duration := fs.Duration("duration", 60*time.Second, "length of each run's chaos phase")
	names := fs.String("variants", "all", "broken variants to run, comma-separated, or all: "+strings.Join(validate.BrokenNames(), ", "))
	lease := fs.Duration("lease-ttl", election.DefaultLeaseTTL, "lease TTL of the election")
	out := fs.String("out", "reports/validate", "directory that receives the runs, "+validate.Markdown+" and "+validate.JSONFile)
	nodes := fs.Int("nodes", 3, "number of nodes")
	parallel := fs.Int("parallel", 1, "runs at once (each on its own Redis, ports and processes)")
	stopAt := fs.Bool("stop-at-violation", false, "end each run's chaos phase at its first violation, as chaos --stop-at-violation does (the zoo's runs always do): whether and when a variant is caught, in less time; the overlaps counted are those before the stop")
	zoo := fs.Bool("zoo", false, "measure the known-bug zoo instead (docs/known-bugs.md): each variant and the reference at the default settings of 'make chaos' (every fault, random schedule, the probes that open it), detections of K, median and p95 time to the first violation, the check that found it; --variants all then means the zoo's: "+strings.Join(validate.ZooNames(), ", "))
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if *zoo && *names == "all" {
		*names = strings.Join(validate.ZooNames(), ",")
	}
	vs, err := validate.PickVariants(*names)
	if err != nil {
		fmt.Fprintf(stderr, "fenceline validate: %v\n", err)
		return exitUsage
	}
	if *seed < 1 || *seeds < 1 || *duration <= 0 || *parallel < 1 {
		fmt.Fprintln(stderr, "fenceline validate: need --seed >= 1, --seeds >= 1, --duration > 0 and --parallel >= 1")
		return exitUsage
	}
	// Ctrl-C stops the run under way (the harness heals and cleans up), skips the rest
	// and still writes the table of what ran.
	ctx, stop := interruptible()
	defer stop()
	cfg := validate.Config{
		Variants: vs, Seed: *seed, Seeds: *seeds, Duration: *duration, LeaseTTL: *lease, Nodes: *nodes, Out: *out,
		Parallel: *parallel, Command: strings.TrimSpace("fenceline validate " + strings.Join(args, " ")),
		StopAtViolation: *stopAt,
	}
	if *zoo {
		return validate.RunZoo(ctx, cfg, stdout, stderr)
	}
	return validate.Run(ctx, cfg, stdout, stderr)
}
