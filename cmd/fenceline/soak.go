//go:build chaos

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/fenceline/fenceline/experiment/soak"
	"github.com/fenceline/fenceline/node"
)

func runSoak(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	runs := fs.Int("runs", 20, "number of runs of the whole soak")
	duration := fs.Duration("duration", 5*time.Minute, "chaos phase of each run (every fault kind)")
	seed0 := fs.Int64("seed0", 1, "base seed: run i has seed seed0+i")
	shard := fs.String("shard", "1/1", "run only the i-th of N disjoint slices of the runs (i/N): run j belongs to shard (j mod N)+1")
	out := fs.String("out", "reports/soak", "soak directory: run i goes to OUT/run-NNN; finished runs found there are not run again")
	binary := fs.String("binary", "", "fenceline binary each run executes (default: this executable)")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	sh, err := soak.ParseShard(*shard)
	if err != nil {
		fmt.Fprintf(stderr, "fenceline: %v\n", err)
		return exitUsage
	}
	if *runs < 1 || *duration <= 0 || *seed0 < 1 {
		fmt.Fprintln(stderr, "fenceline soak: need --runs >= 1, --duration > 0 and --seed0 >= 1")
		return exitUsage
	}
	if *binary == "" {
		if *binary, err = os.Executable(); err != nil {
			fmt.Fprintf(stderr, "fenceline: %v\n", err)
			return exitUsage
		}
	}
	// Each run is `BINARY chaos`: a binary without the harness would fail every run.
	if err := exec.Command(*binary, "chaos", "-h").Run(); err != nil {
		fmt.Fprintf(stderr, "fenceline soak: --binary %s has no chaos command (%v): %s\n", *binary, err, node.ChaosBuildHint)
		return exitUsage
	}
	cfg := soak.Config{
		Binary: *binary, Out: *out, Runs: *runs, Duration: *duration, Seed0: *seed0, Shard: sh,
		Logger: slog.New(slog.NewTextHandler(stderr, nil)),
	}
	// Ctrl-C or SIGTERM: the current run gets one SIGINT and is waited for; the table
	// of what finished is still printed and written.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sum, err := soak.Run(ctx, cfg)
	if sum == nil {
		fmt.Fprintf(stderr, "fenceline: %v\n", err)
		return exitUsage
	}
	switch {
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(stderr, "fenceline soak: interrupted; the same command resumes it (finished runs are kept)")
	case err != nil:
		fmt.Fprintf(stderr, "fenceline: %v\n", err)
	}
	sum.Terminal(stdout)
	fmt.Fprintf(stdout, "summary: %s\n", filepath.Join(*out, cfg.SummaryName()+".md"))
	return sum.Verdict.ExitCode()
}

func runSoakReport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("soak-report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "directory that receives soak.md and soak.json (default: the first DIR)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: fenceline soak-report [--out DIR] DIR...\n\nMerges soak directories (run-NNN), soak summaries (soak*.json) or run directories into one table.")
		fs.PrintDefaults()
	}
	// Flags may come before, between or after the directories.
	var dirs []string
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return exitOK
			}
			return exitUsage
		}
		if fs.NArg() == 0 {
			break
		}
		dirs = append(dirs, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(dirs) == 0 {
		fmt.Fprintln(stderr, "fenceline soak-report: usage: fenceline soak-report [--out DIR] DIR...")
		return exitUsage
	}
	var sets [][]soak.Record
	for _, d := range dirs {
		rs, err := soak.LoadDir(d)
		if err != nil {
			fmt.Fprintf(stderr, "fenceline: %v\n", err)
			return exitUsage
		}
		if len(dirs) > 1 {
			// Say which input each run came from.
			for i := range rs {
				if rs[i].Index >= 0 && !filepath.IsAbs(rs[i].Dir) {
					rs[i].Dir = filepath.ToSlash(filepath.Join(summaryDir(d), rs[i].Dir))
				}
			}
		}
		sets = append(sets, rs)
	}
	merged, err := soak.Merge(sets...)
	if err != nil {
		fmt.Fprintf(stderr, "fenceline: %v\n", err)
		return exitUsage
	}
	sum := soak.Summarize(merged, soak.ExpectedOf(merged))
	dst := *out
	if dst == "" {
		dst = summaryDir(dirs[0])
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		fmt.Fprintf(stderr, "fenceline: %v\n", err)
		return exitUsage
	}
	if err := sum.WriteFiles(dst, soak.SummaryName); err != nil {
		fmt.Fprintf(stderr, "fenceline: %v\n", err)
		return exitUnknown
	}
	sum.Terminal(stdout)
	fmt.Fprintf(stdout, "summary: %s\n", filepath.Join(dst, soak.SummaryName+".md"))
	return sum.Verdict.ExitCode()
}

// summaryDir is d, or its directory when d is a summary file.
func summaryDir(d string) string {
	if st, err := os.Stat(d); err == nil && !st.IsDir() {
		return filepath.Dir(d)
	}
	return d
}
