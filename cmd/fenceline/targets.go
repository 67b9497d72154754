//go:build chaos

package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/fenceline/fenceline/election"

	"github.com/fenceline/fenceline/experiment/targetmatrix"
	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/targets"
)

func runTargets(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("targets", flag.ContinueOnError)
	names := fs.String("targets", "all", "designs to run, comma-separated, or all: the targets ("+strings.Join(targets.Names(), ", ")+
		") and the example nodes of other languages ("+strings.Join(nodePrograms(), ", ")+")")
	seed := fs.Int64("seed", 1, "first seed: runs use seeds N..N+K-1 (the stops-only runs seed N)")
	seeds := fs.Int("seeds", 3, "seeds per target (K)")
	duration := fs.Duration("duration", 60*time.Second, "length of each run's chaos phase")
	nem := fs.String("nemesis", "all", "faults of every run (as for chaos)")
	lease := fs.Duration("lease-ttl", election.DefaultLeaseTTL, "lease TTL")
	nodes := fs.Int("nodes", 3, "number of nodes")
	parallel := fs.Int("parallel", 1, "runs at once (each on its own Redis, ports and processes; the failover figures are then of a busier machine)")
	out := fs.String("out", "reports/targets", "directory that receives the runs and targets.json")
	table := fs.String("table", "reports/targets.md", "Markdown file that receives the whole report")
	doc := fs.String("doc", "", "Markdown page whose block between '<!-- make targets: begin -->' and '<!-- make targets: end -->' receives the comparison table (make targets: docs/targets.md)")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	ts, err := targetmatrix.Pick(*names)
	if err == nil && (*seed < 1 || *seeds < 1 || *duration <= 0 || *parallel < 1) {
		err = fmt.Errorf("need --seed >= 1, --seeds >= 1, --duration > 0 and --parallel >= 1")
	}
	var kinds []string
	if err == nil {
		kinds, err = faults.ParseList(*nem)
	}
	if err != nil {
		fmt.Fprintf(stderr, "fenceline targets: %v\n", err)
		return exitUsage
	}
	// Ctrl-C stops the run under way, skips the rest and writes the table of what ran.
	ctx, stop := interruptible()
	defer stop()
	return targetmatrix.Run(ctx, targetmatrix.Config{
		Designs: ts, Seed: *seed, Seeds: *seeds, Duration: *duration, LeaseTTL: *lease, Nodes: *nodes, Nemeses: kinds, Parallel: *parallel,
		Out: *out, Table: *table, Doc: *doc, Command: strings.TrimSpace("fenceline targets " + strings.Join(args, " ")),
	}, stdout, stderr)
}

// nodePrograms lists the names of the example nodes the matrix runs.
func nodePrograms() []string {
	var out []string
	for _, d := range targetmatrix.NodePrograms {
		out = append(out, d.Name)
	}
	return out
}
