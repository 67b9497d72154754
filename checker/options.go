package checker

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"
)

// Names of the checks, in the order a Result lists them.
const (
	// CheckLinearizability checks the loads and commits against a fenced cursor
	// register with porcupine.
	CheckLinearizability = "linearizability"
	// CheckStaleWrite checks that the store never accepted a commit whose token is lower
	// than one it had already accepted.
	CheckStaleWrite = "no-stale-write"
	// CheckUniqueTokens checks that each token was acquired once, by one node, that no
	// acquire was answered with a malformed token (history.ErrMalformedReply) or refused for
	// want of a presence the run did not ask for (history.ErrNotPresent), and that
	// every accepted commit carries a token its node acquired.
	CheckUniqueTokens = "unique-tokens"
	// CheckExactlyOnce checks that the sink holds events InitialCursor+1..Store.Cursor,
	// each once and in order, and that the balances are those the events imply.
	CheckExactlyOnce = "exactly-once"
	// CheckCursorMonotonic checks that the cursor never moves backwards.
	CheckCursorMonotonic = "cursor-monotonic"
	// CheckProgress checks that a commit is accepted soon after the final heal.
	CheckProgress = "progress"
	// CheckAudit checks that the nodes' records of their commits agree with the store's
	// audit stream, and that no store operation was answered outside the fence's
	// protocol (history.ErrMalformedReply).
	CheckAudit = "audit-consistency"
	// CheckLeadershipOverlap measures the intervals in which two nodes each believed
	// they led. It is always Valid: it informs, it does not judge.
	CheckLeadershipOverlap = "leadership-overlap"
)

// AllChecks returns the name of every check, in the order a Result lists them.
func AllChecks() []string {
	return []string{
		CheckLinearizability, CheckStaleWrite, CheckUniqueTokens, CheckExactlyOnce,
		CheckCursorMonotonic, CheckProgress, CheckAudit, CheckLeadershipOverlap,
		CheckLeaseExclusion, CheckLeaseGrant, CheckStepDown, CheckTakeoverWindow, CheckUnexplainedLeaderChange,
	}
}

// RegisterChecks returns the checks that apply to the register workload, whose clients
// load and commit with tokens of their own: no elections, no sink, no balances.
func RegisterChecks() []string {
	return []string{CheckLinearizability, CheckStaleWrite, CheckCursorMonotonic, CheckProgress, CheckAudit}
}

// Options configure Check. The zero value checks everything with the defaults below.
type Options struct {
	// Checks names the checks to run (the Check* constants). Nil or empty runs
	// AllChecks. An unknown name makes Check fail.
	Checks []string
	// ExpectedBalances returns the balances that events InitialCursor+1..upTo imply
	// (pass source.Balances). Nil skips the balance half of CheckExactlyOnce, and the
	// check's message says so.
	ExpectedBalances func(upTo int64) map[string]int64
	// InitialCursor and InitialToken are the cursor record before the run. Default 0, 0:
	// a fresh store.
	InitialCursor int64
	InitialToken  int64
	// Budgets, if any, add CheckFailoverBudget: a run whose failover windows exceed one
	// is invalid (see ParseBudgets). Default none.
	Budgets []Budget
	// OutDir is where the visualization of a failing linearizability piece is written.
	// Empty writes nothing. The directory must exist.
	OutDir string
	// PieceOps is the size, in operations, above which the linearizability check cuts
	// the history at the next point where that is sound. Default 2000. Porcupine's
	// memory grows with the square of a piece's size; its time barely depends on it.
	PieceOps int
	// MaxPieceOps is the size above which a piece that could not be cut is not checked
	// (its verdict is Unknown) rather than risk exhausting memory. Default 50000
	// (about 0.5 GB in porcupine).
	MaxPieceOps int
	// PieceTimeout bounds the check of one piece; a piece that times out makes the
	// verdict Unknown. Default 1 minute. A deadline on Check's context also bounds it.
	PieceTimeout time.Duration
	// Parallelism is how many pieces are checked at once. Default GOMAXPROCS.
	Parallelism int
	// ProgressBound is how soon after RunInfo.HealTime a commit must be accepted.
	// Default 2 × RunInfo.LeaseTTL + 5 s (10 s when the lease TTL is unknown).
	ProgressBound time.Duration
	// CrossCheck checks with porcupine (on pieces) also a history the chain decision
	// (near-linear, see decideChain) found linearizable. By default porcupine runs only
	// where the chain decision gives up, and to explain a violation.
	CrossCheck bool
	// NoFinalRead leaves the store's final state (Store.Cursor, Store.MaxToken,
	// Store.TokenCounter) out of the checks, which then use only its audit stream: for a
	// store read while the run goes on. By default the linearizability check takes it as
	// a load invoked after every recorded event (the harness stops every node before it
	// reads the store), and cursor-monotonic compares it with the acknowledged cursors.
	// Absence from the audit stream of a store read while the run goes on proves
	// nothing: a commit in flight may be applied after the read.
	NoFinalRead bool
}

// ErrBadOptions is returned (wrapped) for invalid Options.
var ErrBadOptions = errors.New("checker: bad options")

// withDefaults validates o and fills in defaults.
func (o Options) withDefaults(leaseTTL time.Duration) (Options, error) {
	if len(o.Checks) == 0 {
		o.Checks = AllChecks()
	}
	all := AllChecks()
	for _, c := range o.Checks {
		if !slices.Contains(all, c) {
			return o, fmt.Errorf("%w: unknown check %q (known: %v)", ErrBadOptions, c, all)
		}
	}
	if o.PieceOps < 0 || o.MaxPieceOps < 0 || o.PieceTimeout < 0 || o.Parallelism < 0 || o.ProgressBound < 0 {
		return o, fmt.Errorf("%w: negative size, timeout, parallelism or bound", ErrBadOptions)
	}
	if o.PieceOps == 0 {
		o.PieceOps = 2000
	}
	if o.MaxPieceOps == 0 {
		o.MaxPieceOps = 50000
	}
	if o.PieceOps > o.MaxPieceOps {
		return o, fmt.Errorf("%w: PieceOps %d > MaxPieceOps %d", ErrBadOptions, o.PieceOps, o.MaxPieceOps)
	}
	if o.PieceTimeout == 0 {
		o.PieceTimeout = time.Minute
	}
	if o.Parallelism == 0 {
		o.Parallelism = runtime.GOMAXPROCS(0)
	}
	if o.ProgressBound == 0 {
		o.ProgressBound = 10 * time.Second
		if leaseTTL > 0 {
			o.ProgressBound = 2*leaseTTL + 5*time.Second
		}
	}
	return o, nil
}

func (o Options) enabled(name string) bool { return slices.Contains(o.Checks, name) }
