//go:build chaos

package soak

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/experiment/chaosrun"
	"github.com/fenceline/fenceline/experiment/matrix"
	"github.com/fenceline/fenceline/history"
)

// Config is one soak, or one shard of it.
type Config struct {
	// Binary is the fenceline executable each run starts (`Binary chaos ...`). Required.
	Binary string
	// Out is the soak directory; run i goes to Out/run-NNN. Required.
	Out string
	// Runs is the number of runs of the whole soak. Default 20.
	Runs int
	// Duration is each run's chaos phase. Default 5m.
	Duration time.Duration
	// Seed0 is the base seed: run i has seed Seed0+i. Default 1.
	Seed0 int64
	// Shard selects the slice of run indices this process runs. Default 1/1 (all).
	Shard Shard
	// ChaosArgs are extra flags passed to every chaos command (after the soak's own).
	ChaosArgs []string
	// Profiles make the soak a campaign over several configurations: each run also
	// gets its profile's flags (see ProfileOf). None: every run is the same.
	Profiles []Profile
	// RunTimeout bounds one run: past it the run gets SIGINT, as on Ctrl-C, and counts
	// as unknown (a hung run must not hang the soak). Default 2 × Duration + 10m.
	RunTimeout time.Duration
	// KillAfter bounds how long a run may take to stop after it got SIGINT (the soak
	// was interrupted or the run timed out): then its process group is killed.
	// Default 2m.
	KillAfter time.Duration
	// Logger receives one line per run. Default: discard.
	Logger *slog.Logger

	binarySum string // set by Run
}

// pinBinary copies the executable bin into a new temporary directory and returns the
// copy, the first 12 hex digits of its SHA-256 and a function that removes it.
func pinBinary(bin string) (string, string, func(), error) {
	src, err := os.Open(bin)
	if err != nil {
		return "", "", nil, fmt.Errorf("%w: fenceline binary: %v", ErrBadConfig, err)
	}
	defer src.Close()
	dir, err := os.MkdirTemp("", "fenceline-soak-")
	if err != nil {
		return "", "", nil, fmt.Errorf("soak: %w", err)
	}
	cleanup := func() { os.RemoveAll(dir) }
	dst := filepath.Join(dir, "fenceline")
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err == nil {
		h := sha256.New()
		_, err = io.Copy(io.MultiWriter(f, h), src)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			return dst, hex.EncodeToString(h.Sum(nil))[:12], cleanup, nil
		}
	}
	cleanup()
	return "", "", nil, fmt.Errorf("soak: copy the fenceline binary: %w", err)
}

// Errors of a soak's configuration and state.
var (
	// ErrBadConfig is returned (wrapped) for a configuration that cannot run.
	ErrBadConfig = errors.New("soak: bad configuration")
	// ErrOtherSoak is returned (wrapped) when Out holds runs of another soak (another
	// base seed or run count): resuming them would mix two soaks.
	ErrOtherSoak = errors.New("soak: the directory holds another soak")
)

func (c *Config) defaults() error {
	if c.Runs == 0 {
		c.Runs = 20
	}
	if c.Duration == 0 {
		c.Duration = 5 * time.Minute
	}
	if c.Seed0 == 0 {
		c.Seed0 = 1
	}
	if c.Shard.N == 0 {
		c.Shard = Shard{1, 1}
	}
	if c.KillAfter == 0 {
		c.KillAfter = 2 * time.Minute
	}
	if c.RunTimeout == 0 {
		c.RunTimeout = 2*c.Duration + 10*time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case c.Binary == "":
		return fmt.Errorf("%w: no fenceline binary", ErrBadConfig)
	case c.Out == "":
		return fmt.Errorf("%w: no output directory", ErrBadConfig)
	case c.Runs < 1 || c.Runs > 10000:
		return fmt.Errorf("%w: runs %d, want 1..10000", ErrBadConfig, c.Runs)
	case c.Duration < 0:
		return fmt.Errorf("%w: negative duration %s", ErrBadConfig, c.Duration)
	case c.Seed0 < 1 || c.Seed0 > 1<<62:
		return fmt.Errorf("%w: base seed %d, want 1..2^62", ErrBadConfig, c.Seed0)
	case len(c.Profiles) > c.Runs:
		return fmt.Errorf("%w: %d profiles but %d runs: every profile needs a run", ErrBadConfig, len(c.Profiles), c.Runs)
	case c.Shard.I < 1 || c.Shard.I > c.Shard.N:
		return fmt.Errorf("%w: shard %d/%d", ErrBadShard, c.Shard.I, c.Shard.N)
	}
	return nil
}

// SummaryName returns the base name of the summary files the soak writes in Out:
// "soak" for a whole soak, "soak-shard-I-of-N" for a shard (shards may share Out).
func (c *Config) SummaryName() string {
	s := c.Shard.norm()
	if s.N == 1 {
		return SummaryName
	}
	return fmt.Sprintf("%s-shard-%d-of-%d", SummaryName, s.I, s.N)
}

// Run runs the shard's runs that have not finished yet, one after another, and
// returns the summary of the shard's finished runs; it also writes it to Out (see
// SummaryName). It blocks until the last run is done. When ctx is cancelled, the
// current run gets SIGINT (it heals, stops and writes what it recorded), Run waits for
// it — killing it after KillAfter — starts no other, and returns the summary of what
// finished with ctx's error. Other errors (bad configuration, a directory it cannot
// use) return no summary.
func Run(ctx context.Context, cfg Config) (*Summary, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return nil, fmt.Errorf("soak: %w", err)
	}
	indices := cfg.Shard.Indices(cfg.Runs)
	// Every run of this soak executes the same binary, even if the one it was given is
	// rebuilt meanwhile (a soak lasts hours; a checkout changes).
	pinned, sum, cleanup, err := pinBinary(cfg.Binary)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	cfg.Binary, cfg.binarySum = pinned, sum
	// First read every slot, so that a directory of another soak is refused before
	// anything runs.
	finished := map[int]Record{}
	var todo []int
	for _, i := range indices {
		seed := SeedOf(cfg.Seed0, i)
		r, done, err := loadSlot(cfg.Out, i)
		if err != nil {
			return nil, err
		}
		if !done {
			todo = append(todo, i)
			continue
		}
		if (r.Planned != 0 && r.Planned != cfg.Runs) || (r.Seed0 != 0 && r.Seed0 != cfg.Seed0) || r.Seed != seed ||
			(r.ChaosDuration != 0 && r.ChaosDuration != cfg.Duration) {
			return nil, fmt.Errorf("%w: %s has seed %d of %d runs of %s from base seed %d; this soak has seed %d of %d runs of %s from base seed %d: use another output directory",
				ErrOtherSoak, filepath.Join(cfg.Out, slotName(i)), r.Seed, r.Planned, r.ChaosDuration, r.Seed0, seed, cfg.Runs, cfg.Duration, cfg.Seed0)
		}
		if p := ProfileOf(cfg.Profiles, cfg.Runs, i); r.Planned != 0 && r.Profile != p.Name {
			return nil, fmt.Errorf("%w: %s ran profile %q; this soak's run %d is profile %q: use another output directory",
				ErrOtherSoak, filepath.Join(cfg.Out, slotName(i)), r.Profile, i, p.Name)
		}
		cfg.Logger.Info("run-already-finished", "run", i, "seed", seed, "verdict", string(r.Verdict))
		finished[i] = r
	}
	runErr, err := cfg.runAll(ctx, todo, finished)
	if err != nil {
		return nil, err
	}
	var runs []Record
	for _, i := range indices {
		if r, ok := finished[i]; ok {
			runs = append(runs, r)
		}
	}
	s := Summarize(runs, indices)
	if err := s.WriteFiles(cfg.Out, cfg.SummaryName()); err != nil {
		return s, fmt.Errorf("soak: write summary: %w", err)
	}
	return s, runErr
}

// runAll runs the slots todo one after another on the matrix driver (one row per slot,
// so the driver's plan order is the soak's), adding each finished run to finished. It
// returns ctx's error when a run was interrupted or ctx ended first, and an error of the
// soak itself (a slot it cannot write), which ends it at once.
func (c *Config) runAll(parent context.Context, todo []int, finished map[int]Record) (runErr, err error) {
	plan := make([]matrix.Run, len(todo))
	type slot struct{ index, n int } // the run's index, and its place in todo
	slots := map[string]slot{}
	for n, i := range todo {
		name := slotName(i)
		slots[name] = slot{i, n}
		plan[n] = matrix.Run{Row: matrix.Row{Name: name}, Seed: SeedOf(c.Seed0, i)}
	}
	ctx, stop := context.WithCancel(parent)
	defer stop()
	var soakErr error
	interrupted := false
	d := matrix.Driver{Cmd: "soak", Out: c.Out, Exec: func(ctx context.Context, run matrix.Run) chaosrun.Outcome {
		i, n := slots[run.Name].index, slots[run.Name].n
		if err := moveAside(c.Out, i); err != nil {
			soakErr = err
			stop()
			return chaosrun.Outcome{RunErr: err}
		}
		c.Logger.Info("run-starting", "run", i, "seed", run.Seed, "of", fmt.Sprintf("%d/%d", n+1, len(todo)))
		r, err := c.runOne(ctx, i, run.Seed)
		if err != nil {
			soakErr = err
			stop()
			return chaosrun.Outcome{RunErr: err}
		}
		c.Logger.Info("run-finished", "run", i, "seed", run.Seed, "verdict", string(r.Verdict), "exit", r.ExitCode,
			"runner_peak_mb", float64(r.RunnerPeakRSS)/1e6, "reason", r.Reason)
		if r.Interrupted { // ctx has ended: the driver starts no other run
			interrupted = true
			return chaosrun.Outcome{Dir: r.Dir, Code: r.ExitCode}
		}
		finished[i] = r
		return chaosrun.Outcome{Dir: r.Dir, Code: r.ExitCode}
	}}
	results, err := d.Execute(ctx, plan)
	switch {
	case err != nil:
		return nil, fmt.Errorf("soak: %w", err)
	case soakErr != nil:
		return nil, soakErr
	case interrupted || (len(results) > 0 && results[len(results)-1].NotRun):
		return parent.Err(), nil
	}
	return nil, nil
}

// moveAside renames an existing, unfinished slot to run-NNN.incomplete-K.
func moveAside(out string, index int) error {
	slot := filepath.Join(out, slotName(index))
	if _, err := os.Lstat(slot); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	for k := 1; ; k++ {
		dst := fmt.Sprintf("%s.incomplete-%d", slot, k)
		if _, err := os.Lstat(dst); errors.Is(err, os.ErrNotExist) {
			if err := os.Rename(slot, dst); err != nil {
				return fmt.Errorf("soak: move aside unfinished %s: %w", slot, err)
			}
			return nil
		}
	}
}

// runOne runs the chaos command of run index into its slot, records the marker and
// returns the run. Its error is one of the soak itself (a slot it cannot write); a
// failed run is a Record with an unknown verdict.
func (c *Config) runOne(ctx context.Context, index int, seed int64) (Record, error) {
	slot := filepath.Join(c.Out, slotName(index))
	if err := os.Mkdir(slot, 0o755); err != nil {
		return Record{}, fmt.Errorf("soak: %w", err)
	}
	logf, err := os.Create(filepath.Join(slot, LogFile))
	if err != nil {
		return Record{}, fmt.Errorf("soak: %w", err)
	}
	defer logf.Close()
	profile := ProfileOf(c.Profiles, c.Runs, index)
	args := append([]string{"chaos", "--duration", c.Duration.String(), "--seed", strconv.FormatInt(seed, 10),
		"--out", slot, "--quiet"}, c.ChaosArgs...)
	args = append(args, profile.Args...)
	cmd := exec.Command(c.Binary, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group: a Ctrl-C on the terminal reaches only the soak, which
	// forwards exactly one SIGINT to the run.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r := unknownRun(index, seed)
	r.Planned, r.Seed0, r.ChaosDuration, r.Binary, r.Profile = c.Runs, c.Seed0, c.Duration, c.binarySum, profile.Name
	start := time.Now()
	if err := cmd.Start(); err != nil {
		r.Reason = fmt.Sprintf("could not start the chaos command: %v", err)
		return r, writeMarker(slot, r)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	timeout := time.NewTimer(c.RunTimeout)
	defer timeout.Stop()
	var werr error
	timedOut := false
	select {
	case werr = <-waited:
	case <-ctx.Done():
		r.Interrupted = true
	case <-timeout.C:
		timedOut = true
	}
	if r.Interrupted || timedOut {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case werr = <-waited:
		case <-time.After(c.KillAfter):
			// The whole group: the run's own children too.
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			werr = <-waited
		}
	}
	r.Elapsed = time.Since(start)
	if ps := cmd.ProcessState; ps != nil {
		r.ExitCode = ps.ExitCode()
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			r.RunnerPeakRSS = int64(ru.Maxrss) * 1024 // kilobytes on Linux
		}
	}
	runDir, err := runDirIn(slot)
	if err != nil {
		r.Reason = err.Error()
	} else if runDir == "" {
		r.Reason = fmt.Sprintf("the chaos command made no run directory (%v; see %s)", werr, LogFile)
	} else {
		r.Dir = rel(c.Out, runDir)
		elapsed := r.Elapsed
		r.fill(runDir)
		r.Elapsed = elapsed
	}
	if r.ExitCode == 2 || r.ExitCode < 0 {
		r.Verdict = checker.Combine(r.Verdict, checker.Unknown)
		r.Reason = fmt.Sprintf("the chaos command %s (see %s)", exitText(werr, r.ExitCode), filepath.ToSlash(filepath.Join(slotName(index), LogFile)))
	}
	if r.ExitCode == 1 {
		r.Verdict = checker.Invalid
	}
	if timedOut {
		r.Verdict = checker.Combine(r.Verdict, checker.Unknown)
		r.Reason = fmt.Sprintf("the run took longer than %s and was stopped", c.RunTimeout)
	}
	return r, writeMarker(slot, r)
}

func exitText(werr error, code int) string {
	if code >= 0 {
		return fmt.Sprintf("exited %d", code)
	}
	return fmt.Sprint(werr)
}

func writeMarker(slot string, r Record) error {
	if err := history.WriteJSON(filepath.Join(slot, MarkerFile), r); err != nil {
		return fmt.Errorf("soak: %w", err)
	}
	return nil
}
