//go:build chaos

package main

import (
	"flag"
	"io"
	"log/slog"
	"time"

	"github.com/fenceline/fenceline/experiment/soak"
)

func runSoak(args []string, stdout, stderr io.Writer) int {
	cfg := soak.Config{Shard: soak.Shard{I: 1, N: 1}, Logger: slog.New(slog.NewTextHandler(stderr, nil))}
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.Int64Var(&cfg.Seed0, "seed", 1, "first seed: the runs use seeds N..N+K-1 (K: --seeds)")
	fs.IntVar(&cfg.Runs, "seeds", 20, "how many runs (seeds) the whole soak has")
	fs.DurationVar(&cfg.Duration, "duration", 5*time.Minute, "chaos phase of each run (every fault kind)")
	fs.Func("shard", "run only the i-th of N disjoint slices of the runs (i/N): run j belongs to shard (j mod N)+1 (default 1/1)", func(v string) (err error) {
		cfg.Shard, err = soak.ParseShard(v)
		return err
	})
	fs.StringVar(&cfg.Out, "out", "reports/soak", "soak directory: run i goes to OUT/run-NNN; finished runs found there are not run again")
	fs.StringVar(&cfg.Binary, "binary", "", "fenceline binary each run executes (default: this executable)")
	fs.Func("profiles", "a campaign: FILE holds profiles, one 'NAME: CHAOS FLAGS' per line; the runs are cut into one block of seeds per profile, and each run gets its profile's flags", func(v string) (err error) {
		cfg.Profiles, err = soak.LoadProfiles(v)
		return err
	})
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	// Ctrl-C or SIGTERM: the current run gets one SIGINT and is waited for; the table
	// of what finished is still printed and written.
	ctx, stop := interruptible()
	defer stop()
	return soak.RunAndPrint(ctx, cfg, stdout, stderr)
}

func runSoakReport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("soak-report", flag.ContinueOnError)
	out := fs.String("out", "", "directory that receives soak.md and soak.json (default: the first DIR)")
	dirs, code, ok := parseArgs(fs, args, stderr)
	if !ok {
		return code
	}
	return soak.ReportAndPrint(dirs, *out, stdout, stderr)
}
