//go:build chaos

// Package shrink searches a failing chaos run's fault schedule for a smaller one that
// still fails: delta debugging (Zeller's ddmin) over its faults, each candidate run
// several times because timing varies, within a time budget.
package shrink

import (
	"context"
	"errors"
	"time"

	"github.com/fenceline/fenceline/nemesis"
)

// Oracle runs a candidate schedule once and reports whether the run failed (the checker
// found it invalid) and the run's directory. An error means the run could not be judged.
type Oracle func(ctx context.Context, steps []nemesis.Step) (failed bool, dir string, err error)

// Config bounds the search.
type Config struct {
	// Runs is how many times a candidate is run; it fails if any run fails. Default 2.
	Runs int
	// Budget bounds the whole search; the smallest failing schedule found by then is
	// the result. Default 15 minutes.
	Budget time.Duration
	// Progress, if set, is told about every run.
	Progress func(steps int, failed bool, dir string)
}

// Result is what the search found.
type Result struct {
	From, To  int            // faults before and after
	Steps     []nemesis.Step // the smallest schedule that failed
	Dir       string         // a failing run of Steps
	Runs      int            // runs made
	OutOfTime bool           // the budget ran out before the search ended
}

// ErrNotReproduced: the original schedule did not fail in any of its runs.
var ErrNotReproduced = errors.New("shrink: the original schedule did not fail again")

// Minimize runs ddmin over steps. It blocks until the search ends, the budget runs out
// or ctx is done. The original schedule is run first: if it never fails, nothing can be
// shrunk (ErrNotReproduced).
func Minimize(ctx context.Context, steps []nemesis.Step, cfg Config, run Oracle) (Result, error) {
	if cfg.Runs <= 0 {
		cfg.Runs = 2
	}
	if cfg.Budget <= 0 {
		cfg.Budget = 15 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Budget)
	defer cancel()
	res := Result{From: len(steps)}
	fails := func(c []nemesis.Step) (bool, error) {
		for range cfg.Runs {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			failed, dir, err := run(ctx, c)
			res.Runs++
			if cfg.Progress != nil {
				cfg.Progress(len(c), failed, dir)
			}
			if err != nil {
				return false, err
			}
			if failed {
				res.Steps, res.Dir, res.To = c, dir, len(c)
				return true, nil
			}
		}
		return false, nil
	}
	ok, err := fails(steps)
	if err != nil {
		return res, err
	}
	if !ok {
		return res, ErrNotReproduced
	}
	c, n := steps, 2
	for len(c) >= 2 {
		reduced := false
		chunks := split(c, n)
		// Each chunk alone, then each complement.
		for i := 0; i < len(chunks) && !reduced; i++ {
			if ok, err := fails(chunks[i]); err != nil {
				return res.stop(err)
			} else if ok {
				c, n, reduced = chunks[i], 2, true
			}
		}
		for i := 0; i < len(chunks) && !reduced && n > 2; i++ {
			comp := complement(chunks, i)
			if ok, err := fails(comp); err != nil {
				return res.stop(err)
			} else if ok {
				c, n, reduced = comp, max(n-1, 2), true
			}
		}
		if !reduced {
			if n >= len(c) {
				break
			}
			n = min(2*n, len(c))
		}
	}
	return res, nil
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
