//go:build chaos

// Package shrink searches a failing chaos run's fault schedule for a smaller one that
// still fails: delta debugging (Zeller's ddmin) over its faults, each candidate run
// several times because timing varies, within a time limit.
//
// Two things make the search fit a time limit of minutes with real runs of a minute each.
// A failing run says when its first violation happened: the faults injected after it
// cannot have caused it, so the prefix before it is the next candidate, tried before
// ddmin's halves. And a candidate starts when the original did: its first fault is moved
// to the original's first fault's time, the spacing of its faults kept, so that a
// candidate made of the last two faults of a minute does not idle for most of it.
// Every candidate is run before it is believed: both are guesses that a run confirms.
package shrink

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/fenceline/fenceline/nemesis"
)

// Oracle runs a candidate schedule once and reports what the run showed. An error means
// the run could not be judged.
type Oracle func(ctx context.Context, steps []nemesis.Step) (Run, error)

// Run is what one run of a candidate showed.
type Run struct {
	// Failed: the checker found the run invalid.
	Failed bool
	// Dir is the run's directory.
	Dir string
	// Before is, for a failed run, how many of the candidate's faults were injected
	// before its first violation (the others cannot have caused it); 0 when unknown.
	Before int
}

// Config bounds the search.
type Config struct {
	// Repeat is how many times a candidate is run; it fails if any run fails. Default 2.
	Repeat int
	// TimeLimit bounds the whole search; the smallest failing schedule found by then is
	// the result. Default 15 minutes.
	TimeLimit time.Duration
	// Progress, if set, is told about every run and the size of its candidate.
	Progress func(steps int, r Run)
}

// Result is what the search found.
type Result struct {
	From, To  int            // faults before and after
	Steps     []nemesis.Step // the smallest schedule that failed
	Dir       string         // a failing run of Steps
	Runs      int            // runs made
	OutOfTime bool           // the time limit ran out before the search ended
	Elapsed   time.Duration  // how long the search took
}

// ErrNotReproduced: the original schedule did not fail in any of its runs.
var ErrNotReproduced = errors.New("shrink: the original schedule did not fail again")

// Minimize runs ddmin over steps. It blocks until the search ends, the time limit runs out
// or ctx is done. The original schedule is run first: if it never fails, nothing can be
// shrunk (ErrNotReproduced). Result.Steps are the candidate as it was run: aligned to the
// original's first fault (see the package doc).
func Minimize(ctx context.Context, steps []nemesis.Step, cfg Config, run Oracle) (Result, error) {
	if cfg.Repeat <= 0 {
		cfg.Repeat = 2
	}
	if cfg.TimeLimit <= 0 {
		cfg.TimeLimit = 15 * time.Minute
	}
	began := time.Now()
	ctx, cancel := context.WithTimeout(ctx, cfg.TimeLimit)
	defer cancel()
	res := Result{From: len(steps)}
	var first time.Duration
	if len(steps) > 0 {
		first = steps[0].At
	}
	// fails runs c (aligned) up to cfg.Repeat times and reports whether it failed, and how
	// many of its faults came before the first violation of the failing run.
	fails := func(c []nemesis.Step) (bool, int, error) {
		c = Align(c, first)
		for range cfg.Repeat {
			if ctx.Err() != nil {
				return false, 0, ctx.Err()
			}
			r, err := run(ctx, c)
			res.Runs++
			if cfg.Progress != nil {
				cfg.Progress(len(c), r)
			}
			if err != nil {
				return false, 0, err
			}
			if r.Failed {
				res.Steps, res.Dir, res.To = c, r.Dir, len(c)
				return true, r.Before, nil
			}
		}
		return false, 0, nil
	}
	done := func(r Result, err error) (Result, error) {
		r.Elapsed = time.Since(began)
		return r, err
	}
	ok, before, err := fails(steps)
	if err != nil {
		return done(res, err)
	}
	if !ok {
		return done(res, ErrNotReproduced)
	}
	// trim tries the prefix of c that came before its first violation, again and
	// again while it fails and is shorter.
	trim := func(c []nemesis.Step, before int) ([]nemesis.Step, error) {
		for before > 0 && before < len(c) {
			ok, b, err := fails(c[:before])
			if err != nil || !ok {
				return c, err
			}
			c, before = c[:before], b
		}
		return c, nil
	}
	c, n := steps, 2
	if c, err = trim(c, before); err != nil {
		return done(res.stop(err))
	}
	for len(c) >= 2 {
		reduced := false
		chunks := split(c, n)
		// Each chunk alone, then each complement.
		for i := 0; i < len(chunks) && !reduced; i++ {
			if ok, b, err := fails(chunks[i]); err != nil {
				return done(res.stop(err))
			} else if ok {
				c, n, reduced = chunks[i], 2, true
				if c, err = trim(c, b); err != nil {
					return done(res.stop(err))
				}
			}
		}
		for i := 0; i < len(chunks) && !reduced && n > 2; i++ {
			comp := complement(chunks, i)
			if ok, b, err := fails(comp); err != nil {
				return done(res.stop(err))
			} else if ok {
				c, n, reduced = comp, max(n-1, 2), true
				if c, err = trim(c, b); err != nil {
					return done(res.stop(err))
				}
			}
		}
		if !reduced {
			if n >= len(c) {
				break
			}
			n = min(2*n, len(c))
		}
	}
	return done(res, nil)
}

// Align returns a copy of steps moved in time so that the first comes at first, the
// spacing between them kept.
func Align(steps []nemesis.Step, first time.Duration) []nemesis.Step {
	out := slices.Clone(steps)
	if len(out) == 0 {
		return out
	}
	shift := out[0].At - first
	for i := range out {
		out[i].At -= shift
	}
	return out
}

// stop ends the search: running out of time is not an error, the best so far stands.
func (r Result) stop(err error) (Result, error) {
	if errors.Is(err, context.DeadlineExceeded) {
		r.OutOfTime = true
		return r, nil
	}
	return r, err
}

// split cuts c into n parts of near-equal size, in order.
func split(c []nemesis.Step, n int) [][]nemesis.Step {
	var out [][]nemesis.Step
	for i := range n {
		lo, hi := i*len(c)/n, (i+1)*len(c)/n
		if hi > lo {
			out = append(out, c[lo:hi:hi])
		}
	}
	return out
}

// complement is every chunk but the i-th, in order.
func complement(chunks [][]nemesis.Step, i int) []nemesis.Step {
	var out []nemesis.Step
	for j, ch := range chunks {
		if j != i {
			out = append(out, ch...)
		}
	}
	return out
}
