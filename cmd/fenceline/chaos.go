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

	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/internal/chaosrun"
	"github.com/fenceline/fenceline/targets"
	"github.com/fenceline/fenceline/workloads"
)

func runChaos(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	duration := fs.Duration("duration", 60*time.Second, "length of the chaos phase (> 0)")
	nodes := fs.Int("nodes", 3, fmt.Sprintf("number of nodes (1 to %d)", chaosrun.MaxNodes))
	nem := fs.String("nemesis", "all", "faults, comma-separated: "+fmt.Sprint(faults.Known())+", partition (both flavours), all, or none for no faults")
	seed := fs.Int64("seed", 0, "seed of the fault schedule; the same seed gives the same schedule (0: pick one from the clock)")
	workload := fs.String("workload", "listener", "what the nodes do: listener or register")
	backend := fs.String("backend", "local", "where the nodes run: local (processes on 127.0.0.1), docker (containers; run 'make images' first), or auto (docker when an engine answers, else local)")
	lease := fs.Duration("lease-ttl", 2*time.Second, "lease TTL of the election (>= 100ms)")
	variant := fs.String("variant", "reference", "node variant (deliberately broken designs for self-validation; see 'fenceline node -h')")
	target := fs.String("target", targets.Reference, "the design under test: "+strings.Join(targets.Names(), ", ")+" (see 'fenceline node -h')")
	nodeCmd := fs.String("node-cmd", "", "run this command as each node instead of fenceline (any language; docs/node-protocol.md), e.g. 'python3 examples/python-node/node.py'")
	out := fs.String("out", "reports/runs", "directory that receives the run directory")
	binary := fs.String("binary", "", "fenceline binary to run as nodes (default: this executable)")
	quiet := fs.Bool("quiet", false, "print only the summary")
	budget := fs.String("budget", "", "failover budget: the run fails (exit 1) when a window statistic exceeds it, FAULT.STAT=DURATION comma-separated, STAT p50, p90, p99 or max (e.g. kill.p99=2.5s,stop.p99=50ms)")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if *seed == 0 {
		*seed = time.Now().UnixNano()%1_000_000 + 1
	}
	if strings.TrimSpace(*nem) == "" {
		// An empty list is more likely a shell variable that was not set than a wish
		// for a run without faults: that one is spelled none.
		fmt.Fprintln(stderr, "fenceline chaos: --nemesis is empty: name the faults, all, or none")
		return exitUsage
	}
	kinds, err := faults.ParseList(*nem)
	if err != nil {
		fmt.Fprintf(stderr, "fenceline chaos: %v\n", err)
		return exitUsage
	}
	wl, err := workloads.ByName(*workload)
	if err != nil {
		fmt.Fprintf(stderr, "fenceline chaos: %v\n", err)
		return exitUsage
	}
	spec := chaosrun.Spec{
		Cmd: "chaos", Duration: *duration, Nodes: *nodes, Nemeses: kinds, Seed: *seed,
		Workload: wl, Backend: *backend, LeaseTTL: *lease, Variant: *variant, Target: *target, NodeCmd: *nodeCmd, Out: *out,
		Binary: *binary, Quiet: *quiet, Budget: *budget,
	}
	if err := spec.Prepare(); err != nil {
		fmt.Fprintf(stderr, "fenceline chaos: %v\n", err)
		return exitUsage
	}
	// Ctrl-C cancels the run; the harness still heals, stops the nodes, reads the store
	// and writes what was recorded. A second Ctrl-C is ignored until cleanup is done.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return spec.Run(ctx, stdout, stderr).Code
}
