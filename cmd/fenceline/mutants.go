//go:build chaos

package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/fenceline/fenceline/experiment/mutants"
)

func runMutants(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mutants", flag.ContinueOnError)
	repo := fs.String("repo", ".", "the module's root, whose working tree is mutated (in copies)")
	out := fs.String("out", "reports/mutants", "directory that receives the runs, mutants.json and mutants.md")
	report := fs.String("report", "", "Markdown file that receives the report (default OUT/mutants.md)")
	gremlins := fs.String("gremlins", "bin/gremlins", "the gremlins binary (make mutants installs "+mutants.GremlinsVersion+")")
	sample := fs.Int("sample", 0, "run only N mutants, spread evenly over the list (0: all)")
	only := fs.String("only", "", "run only the mutants with these IDs, comma-separated (not with --sample)")
	list := fs.Bool("list", false, "print the IDs of the mutants that would run, one per line, and run nothing")
	seed := fs.Int64("seed", 1, "seed of each mutant's chaos run; a survivor gets a second run with seed+1 and --takeover-on-disconnect")
	duration := fs.Duration("duration", 60*time.Second, "length of each chaos run's random schedule, after its probes (make chaos: 60s)")
	parallel := fs.Int("parallel", 1, "mutants at once, each in a copy of its own")
	resume := fs.Bool("resume", false, "take the mutants already decided from OUT/progress.jsonl (a run of the same code cut short) and run only the rest")
	equivalent := fs.String("equivalent", "experiment/mutants/equivalent.txt", "the survivors argued equivalent: 'ID: why' per line")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	var ids []string
	if *only != "" {
		ids = strings.Split(*only, ",")
	}
	if *seed < 1 || *duration <= 0 || *parallel < 1 || *sample < 0 || (*sample > 0 && len(ids) > 0) {
		fmt.Fprintln(stderr, "fenceline mutants: need --seed >= 1, --duration > 0, --parallel >= 1, --sample >= 0, and not both --sample and --only")
		return exitUsage
	}
	eq, err := mutants.ReadEquivalentFile(*equivalent)
	if err != nil {
		fmt.Fprintf(stderr, "fenceline mutants: --equivalent %v\n", err)
		return exitUsage
	}
	ctx, stop := interruptible()
	defer stop()
	return mutants.Run(ctx, mutants.Config{
		Repo: *repo, Out: *out, Report: *report, Gremlins: *gremlins, Sample: *sample, Only: ids, List: *list, Seed: *seed,
		Duration: *duration, Parallel: *parallel, Equivalent: eq, Resume: *resume,
		Command: strings.TrimSpace("fenceline mutants " + strings.Join(args, " ")),
	}, stdout, stderr)
}
