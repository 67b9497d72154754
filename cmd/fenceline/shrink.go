//go:build chaos

package main

import (
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/fenceline/fenceline/experiment/chaosrun"
	"github.com/fenceline/fenceline/experiment/judge"
	"github.com/fenceline/fenceline/experiment/shrink"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/internal/exitcode"
	"github.com/fenceline/fenceline/nemesis"
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
		Binary: *binary, Quiet: true, Budget: info.Budget, Duration: info.Duration,
		StartToken: info.StartToken, StartCursor: info.StartCursor, StartPinned: true}
	if err := base.Prepare(); err != nil {
		return fail("%v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	oracle := func(ctx context.Context, c []nemesis.Step) (shrink.Run, error) {
		s := base
		s.Steps = append([]nemesis.Step{}, c...)
		s.Duration = candidateDuration(c, info)
		o := s.Run(ctx, io.Discard, io.Discard)
		if o.Code == exitcode.Usage {
			return shrink.Run{Dir: o.Dir}, fmt.Errorf("a candidate run failed to start: %v", o.RunErr)
		}
		r := shrink.Run{Failed: o.Code == exitcode.Invalid, Dir: o.Dir}
		if r.Failed && o.Result != nil {
			if v, ok := o.Result.FirstViolation(); ok {
				r.Before = faultsBefore(o.Dir, v.Time)
			}
		}
		return r, nil
	}
	fmt.Fprintf(stderr, "fenceline shrink: %d faults, %d runs per candidate, budget %v, runs in %s\n", len(steps), *runs, *budget, *out)
	res, err := shrink.Minimize(ctx, steps, shrink.Config{Runs: *runs, Budget: *budget,
		Progress: func(n int, r shrink.Run) {
			verdict := "valid or unknown"
			if r.Failed {
				verdict = "invalid"
				if r.Before > 0 {
					verdict += fmt.Sprintf(", first violation after fault %d", r.Before)
				}
			}
			fmt.Fprintf(stderr, "fenceline shrink: %d faults: %s (%s)\n", n, verdict, r.Dir)
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
	// The failing run found says what it is, in its run.json and so in its report.
	if err := markShrunk(res.Dir, dir, res.From, res.To); err != nil {
		fmt.Fprintf(stderr, "fenceline shrink: %v\n", err)
		return exitcode.Unknown
	}
	if code, _ := judge.Dir(res.Dir, io.Discard, stderr); code != exitcode.Invalid {
		fmt.Fprintf(stderr, "fenceline shrink: the report of %s could not be written again (exit %d)\n", res.Dir, code)
	}
	note := ""
	if res.OutOfTime {
		note = " (the budget ran out: perhaps not minimal)"
	}
	fmt.Fprintf(stdout, "shrunk from %d faults to %d in %d runs, %v%s\nschedule: %s\nfailing run: %s\nreplay: fenceline chaos --replay %s\n",
		res.From, res.To, res.Runs, res.Elapsed.Round(time.Second), note, minimal, res.Dir, res.Dir)
	return exitcode.OK
}

// markShrunk records in run's run.json that its schedule was shrunk from the from
// faults of the run in orig to to.
func markShrunk(run, orig string, from, to int) error {
	path := filepath.Join(run, history.RunInfoFile)
	var info history.RunInfo
	if err := readJSONFile(path, &info); err != nil {
		return err
	}
	info.ShrunkFrom, info.ShrunkTo, info.ShrunkFromRun = from, to, orig
	return history.WriteJSON(path, info)
}

// faultsBefore is how many of a run's faults were injected before first (host
// nanoseconds): read from its fault log, plain or compressed. 0 when unknown.
func faultsBefore(dir string, first int64) int {
	if first == 0 {
		return 0
	}
	var evs []history.Event
	for _, name := range []string{history.FaultsFile, history.FaultsFile + ".gz"} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		var rd io.Reader = f
		if strings.HasSuffix(name, ".gz") {
			zr, err := gzip.NewReader(f)
			if err != nil {
				f.Close()
				return 0
			}
			rd = zr
		}
		evs, err = history.Read(rd, name)
		f.Close()
		if err != nil {
			return 0
		}
		break
	}
	n := 0
	for _, e := range evs {
		if e.Type == history.Invoke && e.Time <= first {
			n++
		}
	}
	return n
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
