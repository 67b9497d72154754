package checker

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/fenceline/fenceline/history"
)

// Check checks a run: the linearizability of its loads and commits, the invariants of
// Options.Checks, and the failover windows, overlaps and terms it measures. It blocks
// until done; the linearizability check runs on Options.Parallelism goroutines, all
// finished when Check returns. Cancelling ctx (or its deadline) stops the checking of
// further pieces and makes the linearizability verdict Unknown.
//
// Check returns an error only for bad input: invalid Options (ErrBadOptions) or a
// malformed or inconsistent history (ErrBadHistory), with a message naming the problem.
// A history that breaks the rules it checks is not an error: it is an Invalid verdict.
func Check(ctx context.Context, run *history.Run, opts Options) (*Result, error) {
	began := time.Now()
	if run == nil {
		return nil, errors.New("checker: nil run")
	}
	opts, err := opts.withDefaults(run.Info.LeaseTTL)
	if err != nil {
		return nil, err
	}
	p, err := parse(run)
	if err != nil {
		return nil, err
	}
	if opts.NoFinalRead {
		p.forgetAbsence()
	}
	if st := run.Store; st != nil && !opts.NoFinalRead {
		// The harness stops every node before it reads the store, so the read follows
		// every recorded invoke; it is open-ended because its time is not recorded.
		p.ops = append(p.ops, op{call: p.end + 1, ret: never, a: st.Cursor, b: st.MaxToken,
			ev: -1, done: -1, audit: -1, kind: kLoad, out: outOK, final: true})
	}
	res := &Result{Start: p.start, Ops: p.counts}
	// The checks only read p, so they run side by side: linearizability (the longest,
	// its own pieces in parallel when the chain decision leaves it open) on a goroutine
	// of its own, everything else here. okByRet, which several share, is made first.
	p.okByRet()
	var names []string
	for _, name := range AllChecks() {
		if opts.enabled(name) {
			names = append(names, name)
		}
	}
	res.Checks = make([]CheckResult, len(names))
	var wg sync.WaitGroup
	if i := slices.Index(names, CheckLinearizability); i >= 0 {
		wg.Go(func() { res.Checks[i] = linearizability(ctx, p, opts) })
	}
	res.Terms = terms(p)
	res.Overlaps = overlaps(res.Terms)
	changes := leaderChanges(p)
	res.LeaderChanges = len(changes)
	res.Changes = explainChanges(p, changes, res.Terms)
	res.Windows, res.Failover = failovers(p, changes)
	res.Throughput = throughput(p, res.Terms)
	res.FencingRejections, res.CursorConflicts = rejections(p)
	for i, name := range names {
		var cr CheckResult
		switch name {
		case CheckLinearizability:
			continue
		case CheckStaleWrite:
			cr = staleWrite(p)
		case CheckUniqueTokens:
			cr = uniqueTokens(p, opts)
		case CheckExactlyOnce:
			cr = exactlyOnce(p, opts)
		case CheckCursorMonotonic:
			cr = cursorMonotonic(p, opts)
		case CheckProgress:
			cr = progress(p, opts)
		case CheckAudit:
			cr = auditConsistency(p, opts)
		case CheckLeadershipOverlap:
			cr = overlapCheck(p, res.Overlaps, len(res.Terms))
		case CheckLeaseExclusion:
			cr = leaseExclusion(p, res.Overlaps)
		case CheckLeaseGrant:
			cr = leaseGrant(p)
		case CheckStepDown:
			cr = stepDownCheck(p)
		case CheckTakeoverWindow:
			cr = takeoverWindow(p, res.Windows)
		case CheckUnexplainedLeaderChange:
			cr = unexplainedChanges(p, res.Changes)
		}
		res.Checks[i] = cr
	}
	wg.Wait()
	if len(opts.Budgets) > 0 {
		res.Checks = append(res.Checks, failoverBudget(res, opts.Budgets))
	}
	vs := make([]Verdict, len(res.Checks))
	for i, c := range res.Checks {
		vs[i] = c.Verdict
	}
	res.Verdict = Combine(vs...)
	if res.Warnings = run.Warnings; len(res.Warnings) > 0 && res.Verdict == Valid {
		res.Verdict = Unknown // data was dropped: no pass on what was not read
	}
	res.Duration = time.Since(began)
	return res, nil
}
