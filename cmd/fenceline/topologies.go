//go:build chaos

package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/experiment/topologies"
)

func runTopologies(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("topologies", flag.ContinueOnError)
	var cfg topologies.Config
	fs.Int64Var(&cfg.Seed, "seed", 1, "first seed: runs use seeds N..N+K-1")
	fs.IntVar(&cfg.Seeds, "seeds", 3, "runs per row (K)")
	fs.DurationVar(&cfg.Duration, "duration", 60*time.Second, "length of each run's chaos phase")
	fs.StringVar(&cfg.Out, "out", "reports/topologies", "directory that receives the runs")
	fs.StringVar(&cfg.Table, "table", "", "file that receives the table (default OUT/"+topologies.Markdown+"); with --topology or --only, the rows run replace theirs in it and the others stay")
	fs.StringVar(&cfg.Binary, "binary", "", "fenceline binary to run as nodes (default: this executable)")
	fs.IntVar(&cfg.Parallel, "parallel", 1, "runs at once")
	fs.StringVar(&cfg.Backend, "backend", "local", "where the runs run: local (processes) or docker (containers; 'make images' first)")
	only := fs.String("only", "", "run only the rows whose name (topology-mitigation-fault) contains this")
	topology := fs.String("topology", "", "run only the rows of this topology ("+strings.Join(backend.Topologies(), ", ")+")")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if cfg.Seed < 1 {
		fmt.Fprintf(stderr, "fenceline topologies: need --seed >= 1 (got %d)\n", cfg.Seed)
		return exitUsage
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
	if cfg.Seed != 1 {
		cfg.Command += fmt.Sprintf(" --seed %d", cfg.Seed)
	}
	cfg.Command += fmt.Sprintf(" --seeds %d --duration %s", cfg.Seeds, cfg.Duration)
	ctx, stop := interruptible()
	defer stop()
	return topologies.Run(ctx, cfg, stdout, stderr)
}
