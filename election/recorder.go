package election

import "time"

// Op names an election request that a Recorder is told about.
type Op string

// Requests. The history kinds of the same names map one to one.
const (
	// OpAcquire: SET NX PX + INCR of the token counter. An acquire invoked with a token
	// (not 0) is an adoption: the lock was found holding this instance's value with that
	// token, taken by an earlier acquire whose reply was lost, and the request is a
	// compare-and-PEXPIRE of that value. OK means the term with that token starts.
	OpAcquire Op = "acquire"
	OpRenew   Op = "renew"   // compare-and-PEXPIRE
	OpRelease Op = "release" // compare-and-DEL + PUBLISH
)

// Outcome is what a request came to.
type Outcome string

// Outcomes, as in Jepsen's ok / fail / info.
const (
	// OK: it happened (an acquire obtained Result.Token; a renew extended the lease; a
	// release deleted the lock and published the notice).
	OK Outcome = "ok"
	// Fail: it certainly did not happen. Result.Err is ErrLeaseHeld (acquire) or
	// ErrNotHeld (renew, release, adoption): Redis answered and the lock was not ours.
	Fail Outcome = "fail"
	// Unknown: no answer (timeout, connection error, or an error reply). It may have
	// happened: a lost acquire reply may have issued a token. Result.Err says why.
	Unknown Outcome = "unknown"
)

// Result is the outcome of a recorded request.
type Result struct {
	Outcome Outcome
	// Token is the token obtained by an OK acquire (0 for the other outcomes of an
	// acquire), the adopted token for every outcome of an adoption, and the term's token
	// for renew and release.
	Token int64
	// Err is nil for OK, ErrLeaseHeld, ErrNotPresent or ErrNotHeld for Fail, the cause
	// for Unknown.
	Err error
	// TookOver is, for an OK acquire that took the lease from a holder whose presence
	// had vanished (Config.TakeoverOnDisconnect), the holder's lock value; for an OK
	// adoption of a term that such a takeover won with its answer lost, the same; else "".
	TookOver string
}

// Reason says why a term ended. It is the "reason" attribute of lost-leadership, the label
// of the leadership-losses metric and the reason recorded by Recorder.StepDown.
type Reason string

// Reasons a term ends.
const (
	// ReasonLeaseExpired: the local deadline passed without a successful renewal.
	ReasonLeaseExpired Reason = "lease-expired"
	// ReasonRenewRejected: Redis answered a renewal with "the lock is not ours".
	ReasonRenewRejected Reason = "renew-rejected"
	// ReasonLeaseLost: the lease said by itself that it is lost (a LostLease: an etcd
	// session whose keep-alive ended), before the local deadline passed.
	ReasonLeaseLost Reason = "lease-lost"
	// ReasonShutdown: Run's ctx is done. The lease is then released.
	ReasonShutdown Reason = "shutdown"
	// ReasonLeadReturned: lead returned on its own. The lease is then released and the
	// elector waits RetryInterval before campaigning again, so a standby can take over.
	ReasonLeadReturned Reason = "lead-returned"
)

// Recorder records every election step, for the history that the checker reads.
//
// The elector calls Invoke just before it sends a request, from the goroutine that sends
// it, and calls the returned function exactly once with the outcome (also when the term
// has already ended). Requests of one Elector never overlap: each completes before the
// next is invoked. StepDown records the local decision to stop leading, which sends no
// request; it is called when the term's context is cancelled, before any release.
//
// Both run on the lease's critical path: they must not block for long.
//
// In fenceline's history format an Invoke is an invoke event of the op's kind, OK an ok
// event (with the acquired token), Fail a fail event with error "not-held", Unknown an
// info event, and StepDown a step-down event (type info, no invoke) with the reason.
//
// A lost reply is resolved by later requests, not by amending the unknown one: when a
// lost acquire took the lock, the history shows that acquire as unknown, then an attempt
// that failed (the lease is held, by this instance), then an adoption: an acquire invoked
// with the token, OK with the token. The token is acquired OK exactly once. A lock value
// of this instance that no term uses is deleted by a release of its token.
type Recorder interface {
	// Invoke is called before op is sent. token is 0 for acquire (the token to adopt for
	// an adoption, see OpAcquire) and the term's token for renew and release (for a
	// release that ends no term, the token of the lock value it deletes).
	Invoke(op Op, token int64) (complete func(Result))
	// StepDown records that the term with token ended for reason.
	StepDown(token int64, reason Reason)
}

// LeaseRecorder is a Recorder that is also told, when a term ends, the lease its local
// deadline counted on: the time from the send of the grant that set the deadline (the
// acquire, or the last renewal confirmed in time) to the deadline. Lead calls
// StepDownCounted instead of StepDown when Config.Recorder implements it.
//
// For fenceline's elector it is LeaseTTL - DriftMargin, always: the lock's TTL runs from
// Redis's receipt of the grant, after its send, and the margin absorbs a clock that runs
// slower than Redis's. A longer one is a leader that believes past its lock by as much,
// which only a clock fault would otherwise show; fenceline's history records it, so
// that the step-down check can hold the elector to it without judging time.
type LeaseRecorder interface {
	Recorder
	// StepDownCounted records that the term with token ended for reason, its local
	// deadline counted lease after the send of the grant that set it.
	StepDownCounted(token int64, reason Reason, lease time.Duration)
}

type nopRecorder struct{}

func (nopRecorder) Invoke(Op, int64) func(Result) { return func(Result) {} }
func (nopRecorder) StepDown(int64, Reason)        {}
