//go:build chaos

// Package matrix is the one driver of fenceline's multi-run experiments (`fenceline
// validate`, `targets`, `topologies`, `soak`): a plan of rows, each a named configuration of
// one chaos run (a chaosrun.Spec), crossed with seeds N..N+K-1, run through
// experiment/chaosrun in this process, one after another or several at once, each
// into OUT/runs/<row>/<timestamp>-<seed> (chaosrun.NewRunDir). It reads each run's
// outcome back and hands the results to the experiment, in plan order, and it renders
// the experiments' tables: compact GitHub Markdown (one line a row, so that a
// committed table diffs and merges by row) and boxed tables for a terminal
// (tablewriter, through package reports).
//
// What it guarantees: every planned run has exactly one Result, in the plan's order,
// whatever the parallelism; a run that did not start because ctx ended is marked
// NotRun, never counted as run; the seed of a run is the one its plan names, so two
// experiments with the same first seed and count run the same schedules.
//
// What it does not do: judge. A Result carries the chaos run's outcome (exit code,
// checker result, error); what counts as a detection, a false alarm or a failure is
// the experiment's. It does not resume: an experiment run again runs every planned
// run again, into new run directories beside the old ones (soak resumes by planning
// only its unfinished slots, and runs each as a subprocess through its own Exec). It
// exists in chaos builds only.
package matrix
