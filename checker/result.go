package checker

import (
	"time"

	"github.com/fenceline/fenceline/internal/exitcode"
)

// Verdict is the outcome of one check or of a whole run.
type Verdict string

// Verdicts. Unknown means the checker could not decide: a piece of the history timed
// out, the final store read is missing, the run was interrupted... It is never a pass.
const (
	Valid   Verdict = "valid"
	Invalid Verdict = "invalid"
	Unknown Verdict = "unknown"
	// NotApplicable is the verdict of a check whose premise the run lacks (no-stale-write
	// of a target that writes without a fence). It is neither a pass nor a failure, and
	// Combine leaves it out.
	NotApplicable Verdict = "not-applicable"
)

// ExitCode is the exit code of a verdict: exitcode.OK for Valid, exitcode.Invalid for
// Invalid, exitcode.Unknown for anything else.
func (v Verdict) ExitCode() int {
	switch v {
	case Valid:
		return exitcode.OK
	case Invalid:
		return exitcode.Invalid
	}
	return exitcode.Unknown
}

// Combine returns the combination of verdicts: any Invalid gives Invalid, else any
// Unknown gives Unknown, else Valid. NotApplicable counts for nothing. No verdicts at
// all give Valid.
func Combine(vs ...Verdict) Verdict {
	out := Valid
	for _, v := range vs {
		switch v {
		case Invalid:
			return Invalid
		case Unknown:
			out = Unknown
		case Valid, NotApplicable:
		default:
			out = Unknown // a verdict we do not know is not a pass
		}
	}
	return out
}

// Result is everything Check found about a run. It is plain data: it marshals to JSON
// and the reports package renders it. Times are host wall-clock nanoseconds since the
// Unix epoch, like the history's; durations are nanoseconds.
type Result struct {
	// Verdict combines the verdicts of Checks: Invalid if any check is invalid, else
	// Unknown if any is unknown, else Valid.
	Verdict Verdict `json:"verdict"`
	// Checks holds one result per check that ran, in a fixed order (see AllChecks).
	Checks []CheckResult `json:"checks"`
	// Failover holds failover-window statistics per fault kind, sorted by kind. Only
	// faults that displaced the leader appear (see Window).
	Failover []FailoverStats `json:"failover"`
	// Windows lists every failover window, in time order, for a timeline.
	Windows []Window `json:"windows"`
	// Overlaps lists the intervals in which two nodes each believed they were leader.
	// The lease-exclusion check judges them (a pause or a clock fault may explain one).
	Overlaps []Overlap `json:"overlaps"`
	// Terms lists every leadership term (one per acquired token), in start order.
	Terms []Term `json:"terms"`
	// LeaderChanges counts the times the store accepted a commit under a token higher
	// than every token it had accepted before, the first such commit excepted.
	LeaderChanges int `json:"leader_changes"`
	// Changes are those leader changes, in order, each with what explains it: the one
	// attribution that the unexplained-leader-change check and the reports read.
	Changes []LeaderChange `json:"changes,omitempty"`
	// FencingRejections counts commits the store rejected with ErrStaleToken: those a
	// node was told about, plus unknown outcomes the audit stream shows were rejected so.
	// Writes that move no cursor are not counted (the operations table counts theirs).
	FencingRejections int `json:"fencing_rejections"`
	// CursorConflicts counts commits rejected with ErrCursorConflict, counted the same way.
	CursorConflicts int `json:"cursor_conflicts"`
	// Throughput compares the chaos phase's rate, away from faults, with the warm-up's
	// (nil when the run has no fault-free warm-up with a commit, or no final heal).
	// Measured, not judged: reports flag a drop.
	Throughput *Throughput `json:"throughput,omitempty"`
	// Ops counts the operations of the history by kind and outcome.
	Ops OpCounts `json:"ops"`
	// Start is the time origin of the human-readable messages ("t+1.234s"): RunInfo.Start,
	// or the first event's time when that is zero.
	Start int64 `json:"start"`
	// Duration is how long Check took.
	Duration time.Duration `json:"duration_ns"`
	// Warnings lists what the run's files lacked (history.Run.Warnings: a torn last
	// line that was dropped). A run with warnings is never Valid: Verdict is at best
	// Unknown, because what was dropped might have shown a violation.
	Warnings []string `json:"warnings,omitempty"`
}

// Check returns the result of the named check, or nil if it did not run.
func (r *Result) Check(name string) *CheckResult {
	for i := range r.Checks {
		if r.Checks[i].Name == name {
			return &r.Checks[i]
		}
	}
	return nil
}

// CheckResult is the outcome of one check.
type CheckResult struct {
	// Name is the check's name, one of the Check* constants.
	Name string `json:"name"`
	// Verdict is Valid, Invalid or Unknown.
	Verdict Verdict `json:"verdict"`
	// Message says in one or two sentences what was checked and found.
	Message string `json:"message"`
	// Offending describes the first offending operations, human readable, earliest
	// first (entries with no time of their own last); empty when the check passed. It
	// is capped at a few entries.
	Offending []string `json:"offending,omitempty"`
	// Visualization is the file name (relative to Options.OutDir) of porcupine's HTML
	// visualization of the failing piece of history; empty if none was written.
	Visualization string `json:"visualization,omitempty"`
	// FirstViolation is the host time (wall-clock nanoseconds since the Unix epoch) of
	// the earliest violation an invalid check found: the completion of its earliest
	// offending operation (the invoke when it never completed), or, for a violation no
	// operation can be blamed for, when it became visible (the final store read, the end
	// of the progress bound). 0 when the check is not invalid.
	FirstViolation int64 `json:"first_violation,omitempty"`
	// Stats holds check-specific figures (for linearizability: ops, pieces,
	// largest_piece, unknown_outcomes, resolved_by_audit...).
	Stats map[string]int64 `json:"stats,omitempty"`
}

// OpCounts counts a history's operations. An operation is an invoke with its completion.
type OpCounts struct {
	// Total counts every operation of the nodes (store and election), faults excluded.
	Total int `json:"total"`
	// Loads, Commits and Writes (fenced writes that move no cursor) count store
	// operations; Acquires, Renews and Releases election operations; StepDowns the
	// step-down events; Faults the faults injected.
	Loads     int `json:"loads"`
	Commits   int `json:"commits"`
	Writes    int `json:"writes,omitempty"`
	Acquires  int `json:"acquires"`
	Renews    int `json:"renews"`
	Releases  int `json:"releases"`
	StepDowns int `json:"step_downs"`
	Faults    int `json:"faults"`
	// OK, Fail and Unknown count the outcomes of all operations; Unknown includes
	// invokes with no completion.
	OK      int `json:"ok"`
	Fail    int `json:"fail"`
	Unknown int `json:"unknown"`
	// UnknownCommits counts commits and writes with an unknown outcome; ResolvedByAudit
	// how many of them the audit stream resolved (applied, rejected, or never reached the
	// store).
	UnknownCommits  int `json:"unknown_commits"`
	ResolvedByAudit int `json:"resolved_by_audit"`
}

// Term is one leadership term: a node holding one token, from the moment it learned it
// had acquired the lease to the moment it stopped believing it led.
type Term struct {
	// Node holds the term; Token is the fencing token it acquired.
	Node  string `json:"node"`
	Token int64  `json:"token"`
	// Start is the time of the acquire's ok completion.
	Start int64 `json:"start"`
	// End is when the node stopped believing it led: its step-down, the invoke of its
	// release, its kill or stop, or (when none of these was recorded) its last renew or
	// commit, or the end of the run if it was still leading then. See EndReason.
	End int64 `json:"end"`
	// EndReason says which of those End is: "step-down: <reason>", "release", "kill",
	// "stop", "next-acquire", "last-activity" or "run-end".
	EndReason string `json:"end_reason"`
	// Commits counts the commits the store accepted under this term (known outcomes);
	// FirstCommit and LastCommit are the completion times of the first and last (0 if none).
	Commits     int   `json:"commits"`
	FirstCommit int64 `json:"first_commit,omitempty"`
	LastCommit  int64 `json:"last_commit,omitempty"`
}

// Overlap is an interval in which two nodes each believed they were leader.
type Overlap struct {
	// A and B are the two terms' nodes and tokens; A started first.
	NodeA  string `json:"node_a"`
	TokenA int64  `json:"token_a"`
	NodeB  string `json:"node_b"`
	TokenB int64  `json:"token_b"`
	// Start and End bound the overlap; Duration is End - Start.
	Start    int64         `json:"start"`
	End      int64         `json:"end"`
	Duration time.Duration `json:"duration_ns"`
}

// Window is one failover caused by a fault: the store accepted commits under OldToken
// (held by OldNode), the fault hit, and later the store accepted a commit under
// NewToken (held by NewNode).
//
// A leader change is attributed to a fault when the fault was injected between the
// invoke of the last commit accepted under the old token and the first commit accepted
// under the new one, and the fault either targets the old leader's node or acts on
// Redis (a target that is not a node). The earliest such fault gets the window; a
// leader change with no such fault gets none, and so do faults on followers.
type Window struct {
	// Fault is the fault kind, FaultNode its target, Injected its injection time.
	Fault     string `json:"fault"`
	FaultNode string `json:"fault_node"`
	Injected  int64  `json:"injected"`
	// OldNode/OldToken led before; NewNode/NewToken after.
	OldNode  string `json:"old_node"`
	OldToken int64  `json:"old_token"`
	NewNode  string `json:"new_node"`
	NewToken int64  `json:"new_token"`
	// LastOld is the completion time of the last commit accepted under OldToken;
	// FirstNew that of the first commit accepted under NewToken.
	LastOld  int64 `json:"last_old"`
	FirstNew int64 `json:"first_new"`
	// ToNewToken is FirstNew - Injected: how long from the fault to the first commit
	// accepted under a newer token. Gap is FirstNew - LastOld: how long the store
	// accepted nothing across the change.
	ToNewToken time.Duration `json:"to_new_token_ns"`
	Gap        time.Duration `json:"gap_ns"`
}

// FailoverStats summarizes the windows of one fault kind.
type FailoverStats struct {
	// Fault is the fault kind.
	Fault string `json:"fault"`
	// Injected counts the faults of this kind; Windows how many displaced the leader.
	Injected int `json:"injected"`
	Windows  int `json:"windows"`
	// ToNewToken and Gap summarize Window.ToNewToken and Window.Gap.
	ToNewToken Distribution `json:"to_new_token"`
	Gap        Distribution `json:"gap"`
}

// Distribution summarizes durations. Percentiles use the nearest-rank method: Pxx is
// the smallest sample not exceeded by xx% of the samples. All zero when Count is 0.
type Distribution struct {
	Count int           `json:"count"`
	Min   time.Duration `json:"min_ns"`
	P50   time.Duration `json:"p50_ns"`
	P90   time.Duration `json:"p90_ns"`
	P99   time.Duration `json:"p99_ns"`
	Max   time.Duration `json:"max_ns"`
}

// LeaderChange is one leader change: the store accepting its first commit under a token
// higher than every token it had accepted, and its cause (see explainChanges).
type LeaderChange struct {
	At       int64  `json:"at"` // completion of the first commit under NewToken (host ns)
	OldNode  string `json:"old_node"`
	OldToken int64  `json:"old_token"`
	NewNode  string `json:"new_node"`
	NewToken int64  `json:"new_token"`
	// Cause is CauseFault (then Fault, FaultNode and FaultAt, its injection in host ns,
	// name the fault), CauseStall, CauseAfterHeal, or "" when nothing explains it.
	Cause     string `json:"cause,omitempty"`
	Fault     string `json:"fault,omitempty"`
	FaultNode string `json:"fault_node,omitempty"`
	FaultAt   int64  `json:"fault_at,omitempty"`
}
