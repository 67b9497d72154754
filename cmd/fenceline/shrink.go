//go:build chaos

package main

import (
	"flag"
	"io"
	"time"

	"github.com/fenceline/fenceline/experiment/shrink"
)

func runShrink(args []string, stdout, stderr io.Writer) int {
	var cfg shrink.SearchConfig
	fs := flag.NewFlagSet("shrink", flag.ContinueOnError)
	fs.IntVar(&cfg.Repeat, "repeat", 2, "runs per candidate schedule; it fails if any run fails (timing varies)")
	fs.DurationVar(&cfg.TimeLimit, "time-limit", 15*time.Minute, "time for the whole search; the smallest failing schedule found by then is the result")
	fs.StringVar(&cfg.Out, "out", "", "directory of the candidate runs (default RUN_DIR/shrink)")
	fs.StringVar(&cfg.Binary, "binary", "", "fenceline binary to run as nodes (default: this executable)")
	dir, code, ok := parseArgs(fs, args, stderr)
	if !ok {
		return code
	}
	cfg.Dir = dir[0]
	ctx, stop := interruptible()
	defer stop()
	return shrink.Search(ctx, cfg, stdout, stderr)
}
