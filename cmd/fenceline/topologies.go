//go:build chaos

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/experiment/topologies"
)

func runTopologies(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("topologies", flag.ContinueOnError)
	var cfg topologies.Config
	fs.IntVar(&cfg.Seeds, "seeds", 3, "runs per row: seeds 1..K")
	fs.DurationVar(&cfg.Duration, "duration", 60*time.Second, "length of each run's chaos phase")
	fs.StringVar(&cfg.Out, "out", "reports/topologies", "directory that receives the runs")
	fs.StringVar(&cfg.Markdown, "md", "", "file that receives the table (default OUT/"+topologies.Markdown+")")
	fs.StringVar(&cfg.Binary, "binary", "", "fenceline binary to run as nodes (default: this executable)")
	fs.IntVar(&cfg.Parallel, "parallel", 1, "runs at once")
	fs.StringVar(&cfg.Backend, "backend", "local", "where the runs run: local (processes) or docker (containers; 'make images' first)")
	only := fs.String("only", "", "run only the rows whose name (topology-mitigation-fault) contains this")
	topology := fs.String("topology", "", "run only the rows of this topology ("+strings.Join(backend.Topologies(), ", ")+")")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: fenceline topologies [flags]\n\nRuns the reference on each Redis topology, with each mitigation, under each Redis fault,\nand prints one table (also written to --md; with --topology or --only, the rows run\nreplace theirs in --md's table and the others stay). Exits 0 when every run\nfinished (an invalid run is the finding, not a failure), 2 for a usage error, 3 when a\nrun could not be completed.\n\nflags:")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if cfg.Backend != "local" && cfg.Backend != "docker" {
		fmt.Fprintf(stderr, "fenceline topologies: unknown --backend %q (local, docker)\n", cfg.Backend)
		return exitUsage
	}
	if *topology != "" && !slices.Contains(backend.Topologies(), *topology) {
		fmt.Fprintf(stderr, "fenceline topologies: unknown --topology %q (%s)\n", *topology, strings.Join(backend.Topologies(), ", "))
		return exitUsage
	}
	for _, c := range topologies.Cells() {
		if strings.Contains(topologies.CellName(c), *only) && (*topology == "" || c.Topology == *topology) {
			cfg.Cells = append(cfg.Cells, c)
		}
	}
	if len(cfg.Cells) == 0 {
		fmt.Fprintf(stderr, "fenceline topologies: no row matches --only %q --topology %q\n", *only, *topology)
		return exitUsage
	}
	cfg.Merge, cfg.Only = *only != "" || *topology != "", *only
	cfg.Command = "fenceline topologies"
	if cfg.Backend != "local" {
		cfg.Command += " --backend " + cfg.Backend
	}
	if *topology != "" {
		cfg.Command += " --topology " + *topology
	}
	if *only != "" {
		cfg.Command += " --only " + *only
	}
	cfg.Command += fmt.Sprintf(" --seeds %d --duration %s", cfg.Seeds, cfg.Duration)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return topologies.Run(ctx, cfg, stdout, stderr)
}
