package judge

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/workloads"
)

// prefixChecks are the checks whose violation in the history so far of a running run
// stays a violation whatever comes later: each judges what happened, not what must
// still happen (progress, exactly-once and the audit need the final store; the leader
// changes are judged by the stalls around them, which the run may not have recorded
// yet). leadership-overlap never fails.
var prefixChecks = []string{
	checker.CheckLinearizability, checker.CheckStaleWrite, checker.CheckUniqueTokens,
	checker.CheckCursorMonotonic, checker.CheckLeaseExclusion, checker.CheckLeaseGrant,
	checker.CheckStepDown,
}

// SoFar checks the history a running run in dir has recorded so far, with the audit
// stream of store (a snapshot read before it; nil: none), and returns what the first
// violation is ("" when none, or when the directory cannot be read or checked yet):
// the harness's Config.StopAtViolation. The store's final state (cursor, sink, token
// counter) is not judged: the run goes on. It writes nothing. Its answer only ends the
// chaos phase; the complete check of the finished run gives the verdict.
func SoFar(ctx context.Context, dir string, store *history.Store) string {
	// The nodes' files are read one after another while the nodes write on: a file read
	// late can hold an effect (a commit refused as stale) whose cause (a newer leader's
	// commit) a file read earlier does not, and that prefix is no history at all (a false
	// linearizability violation, seen under load). Every event recorded before the read
	// began is in the files, and a node records an operation's invoke before it sends
	// it, so the events stamped up to then are a consistent cut. Record stamps with the
	// host's clock, which a clock fault leaves alone.
	cut := time.Now().UnixNano()
	run, err := history.LoadRun(dir)
	if err != nil {
		return "" // no history yet, or a node's file is being created
	}
	run.Events = run.Events.Until(cut)
	run.Faults = slices.DeleteFunc(run.Faults, func(e history.Event) bool { return e.Time > cut })
	run.Store = store
	opts := workloads.CheckerOptions(run.Info, "")
	opts.NoFinalRead = true
	if len(opts.Checks) == 0 {
		opts.Checks = checker.AllChecks()
	}
	opts.Checks = slices.DeleteFunc(slices.Clone(opts.Checks), func(c string) bool {
		return !slices.Contains(prefixChecks, c)
	})
	if len(opts.Checks) == 0 {
		return ""
	}
	// One core: the run being checked shares the machine.
	opts.Parallelism, opts.PieceTimeout = 1, 10*time.Second
	res, err := checker.Check(ctx, run, opts)
	if err != nil {
		return ""
	}
	v, ok := res.FirstViolation()
	if !ok {
		return ""
	}
	return fmt.Sprintf("%s at t+%.3fs", v.Check, time.Duration(v.Time-run.Info.Start).Seconds())
}
