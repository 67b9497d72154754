//go:build chaos

package shrink

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fenceline/fenceline/experiment/chaosrun"
	"github.com/fenceline/fenceline/experiment/judge"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/internal/exitcode"
	"github.com/fenceline/fenceline/nemesis"
	"github.com/fenceline/fenceline/workloads"
)

// SearchConfig is `fenceline shrink`: the stored failing run to shrink and how.
type SearchConfig struct {
	Dir    string // the failing run's directory (required)
	Out    string // directory of the candidate runs; default Dir/shrink
	Binary string // the fenceline binary the nodes run; default this executable
	// Repeat and TimeLimit are Config's.
	Repeat    int
	TimeLimit time.Duration
}

// Search shrinks the stored failing run of cfg.Dir: Minimize over its schedule, each
// candidate a chaos run with the stored run's settings. It writes the smallest failing
// schedule to Out/shrunk-schedule.json, marks the failing run it found as shrunk (its
// run.json and its report), prints what it found to stdout and its progress to stderr,
// and returns the exit code of `fenceline shrink`: 0 when it found a failing schedule,
// 2 for a run that is not a failing one (or a directory without its schedule), 3 when
// the search could not complete. It blocks until the search ends or ctx is done.
func Search(ctx context.Context, cfg SearchConfig, stdout, stderr io.Writer) int {
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "fenceline shrink: "+format+"\n", a...)
		return code
	}
	if cfg.Repeat < 1 || cfg.TimeLimit <= 0 {
		return fail(exitcode.Usage, "need --repeat >= 1 and --time-limit > 0")
	}
	dir := cfg.Dir
	info, steps, err := chaosrun.LoadStored(dir)
	if err != nil {
		return fail(exitcode.Usage, "%v", err)
	}
	var verdict struct{ Verdict string }
	if err := chaosrun.ReadJSONFile(filepath.Join(dir, "results.json"), &verdict); err != nil {
		return fail(exitcode.Usage, "%v", err)
	}
	if verdict.Verdict != "invalid" {
		return fail(exitcode.Usage, "%s was %s: only a failing run can be shrunk", dir, verdict.Verdict)
	}
	wl, err := workloads.ByName(info.Workload)
	if err != nil {
		return fail(exitcode.Usage, "%s: %v", history.RunInfoFile, err)
	}
	if cfg.Out == "" {
		cfg.Out = filepath.Join(dir, "shrink")
	}
	base := chaosrun.Spec{Cmd: "shrink", Nodes: len(info.Nodes), Nemeses: info.Nemeses, Seed: info.Seed,
		Workload: wl, Backend: info.Backend, LeaseTTL: info.LeaseTTL, Variant: info.Variant, Out: cfg.Out,
		Binary: cfg.Binary, Quiet: true, Budget: info.Budget, Duration: info.Duration,
		StartToken: info.StartToken, StartCursor: info.StartCursor, StartPinned: true}
	if err := base.Prepare(); err != nil {
		return fail(exitcode.Usage, "%v", err)
	}
	oracle := func(ctx context.Context, c []nemesis.Step) (Run, error) {
		s := base
		s.Steps = append([]nemesis.Step{}, c...)
		s.Duration = candidateDuration(c, info)
		o := s.Run(ctx, io.Discard, io.Discard)
		if o.Code == exitcode.Usage {
			return Run{Dir: o.Dir}, fmt.Errorf("a candidate run failed to start: %v", o.RunErr)
		}
		r := Run{Failed: o.Code == exitcode.Invalid, Dir: o.Dir}
		if r.Failed && o.Result != nil {
			if v, ok := o.Result.FirstViolation(); ok {
				r.Before = faultsBefore(o.Dir, v.Time)
			}
		}
		return r, nil
	}
	fmt.Fprintf(stderr, "fenceline shrink: %d faults, %d runs per candidate, time limit %v, runs in %s\n", len(steps), cfg.Repeat, cfg.TimeLimit, cfg.Out)
	res, err := Minimize(ctx, steps, Config{Repeat: cfg.Repeat, TimeLimit: cfg.TimeLimit,
		Progress: func(n int, r Run) {
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
	case errors.Is(err, ErrNotReproduced):
		return fail(exitcode.Unknown, "%v in %d runs", err, res.Runs)
	case err != nil:
		return fail(exitcode.Unknown, "%v", err)
	}
	minimal := filepath.Join(cfg.Out, "shrunk-schedule.json")
	if err := history.WriteJSON(minimal, res.Steps); err != nil {
		return fail(exitcode.Unknown, "%v", err)
	}
	// The failing run found says what it is, in its run.json and so in its report.
	if err := markShrunk(res.Dir, dir, res.From, res.To); err != nil {
		return fail(exitcode.Unknown, "%v", err)
	}
	if code, _ := judge.Dir(res.Dir, io.Discard, stderr); code != exitcode.Invalid {
		fmt.Fprintf(stderr, "fenceline shrink: the report of %s could not be written again (exit %d)\n", res.Dir, code)
	}
	note := ""
	if res.OutOfTime {
		note = " (the time limit ran out: perhaps not minimal)"
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
	if err := chaosrun.ReadJSONFile(path, &info); err != nil {
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
