//go:build chaos

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/internal/chaosrun"
	"github.com/fenceline/fenceline/internal/exitcode"
	"github.com/fenceline/fenceline/nemesis"
	"github.com/fenceline/fenceline/shrink"
	"github.com/fenceline/fenceline/workloads"
)

func runShrink(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("shrink", flag.ContinueOnError)
	runs := fs.Int("runs", 2, "runs per candidate schedule; it fails if any run fails (timing varies)")
	budget := fs.Duration("budget", 15*time.Minute, "time for the whole search; the smallest failing schedule found by then is the result")
	out := fs.String("out", "", "directory of the candidate runs (default RUN_DIR/shrink)")
	binary := fs.String("binary", "", "fenceline binary to run as nodes (default: this executable)")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "fenceline shrink: "+format+"\n", a...)
		return exitUsage
	}
	if fs.NArg() != 1 || *runs < 1 || *budget <= 0 {
		return fail("usage: fenceline shrink [--runs K] [--budget D] [--out DIR] RUN_DIR")
	}
	dir := fs.Arg(0)
	info, steps, err := loadStored(dir)
	if err != nil {
		return fail("%v", err)
	}
	var verdict struct{ Verdict string }
	if err := readJSONFile(filepath.Join(dir, "results.json"), &verdict); err != nil {
		return fail("%v", err)
	}
	if verdict.Verdict != "invalid" {
		return fail("%s was %s: only a failing run can be shrunk", dir, verdict.Verdict)
	}
	wl, err := workloads.ByName(info.Workload)
	if err != nil {
		return fail("%s: %v", history.RunInfoFile, err)
	}
	if *out == "" {
		*out = filepath.Join(dir, "shrink")
	}
	base := chaosrun.Spec{Cmd: "shrink", Nodes: len(info.Nodes), Nemeses: info.Nemeses, Seed: info.Seed,
		Workload: wl, Backend: info.Backend, LeaseTTL: info.LeaseTTL, Variant: info.Variant, Out: *out,
		Binary: *binary, Quiet: true, Budget: info.Budget, Duration: info.Duration}
	if err := base.Prepare(); err != nil {
		return fail("%v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	oracle := func(ctx context.Context, c []nemesis.Step) (bool, string, error) {
		s := base
		s.Steps = append([]nemesis.Step{}, c...)
		s.Duration = candidateDuration(c, info)
		o := s.Run(ctx, io.Discard, io.Discard)
		if o.Code == exitcode.Usage {
			return false, o.Dir, fmt.Errorf("a candidate run failed to start: %v", o.RunErr)
		}
		return o.Code == exitcode.Invalid, o.Dir, nil
	}
	fmt.Fprintf(stderr, "fenceline shrink: %d faults, %d runs per candidate, budget %v, runs in %s\n", len(steps), *runs, *budget, *out)
	res, err := shrink.Minimize(ctx, steps, shrink.Config{Runs: *runs, Budget: *budget,
		Progress: func(n int, failed bool, d string) {
			fmt.Fprintf(stderr, "fenceline shrink: %d faults: failed %v (%s)\n", n, failed, d)
		}}, oracle)
	switch {
	case errors.Is(err, shrink.ErrNotReproduced):
		fmt.Fprintf(stderr, "fenceline shrink: %v in %d runs\n", err, res.Runs)
		return exitcode.Unknown
	case err != nil:
		fmt.Fprintf(stderr, "fenceline shrink: %v\n", err)
		return exitcode.Unknown
	}
	minimal := filepath.Join(*out, "shrunk-schedule.json")
	if err := history.WriteJSON(minimal, res.Steps); err != nil {
		fmt.Fprintf(stderr, "fenceline shrink: %v\n", err)
		return exitcode.Unknown
	}
	note := ""
	if res.OutOfTime {
		note = " (the budget ran out: perhaps not minimal)"
	}
	fmt.Fprintf(stdout, "shrunk from %d faults to %d in %d runs%s\nschedule: %s\nfailing run: %s\nreplay: fenceline chaos --replay %s\n",
		res.From, res.To, res.Runs, note, minimal, res.Dir, res.Dir)
	return exitcode.OK
}

// candidateDuration is the chaos phase a candidate needs: up to its last fault's heal
// and three leases more for the failure to show, but never longer than the original.
func candidateDuration(steps []nemesis.Step, info history.RunInfo) time.Duration {
	d := 3 * info.LeaseTTL
	if len(steps) > 0 {
		last := steps[len(steps)-1]
		d += last.At + last.Params.Hold
	}
	return min(max(d, 5*time.Second), info.Duration)
}
