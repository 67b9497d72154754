package election

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Lease is the lock a term holds, as Leadership needs it: the two requests a leader sends
// while it leads. Leadership calls them one at a time, each with a context whose deadline
// is RequestTimeout away and which is not cancelled with Lead's ctx.
type Lease interface {
	// Renew sets the lock's expiry to the lease TTL again if the lock still holds the
	// term's value. It returns true if it did, false with a nil error if Redis answered
	// that the lock is not the term's, and an error if the outcome is unknown (no answer,
	// a timeout, an error reply): the lock may have been extended all the same.
	Renew(ctx context.Context) (bool, error)
	// Release deletes the lock if it still holds the term's value. It returns true if it
	// did, false with a nil error if Redis answered that the lock is not the term's, and
	// an error if the outcome is unknown.
	Release(ctx context.Context) (bool, error)
}

// LostLease is a Lease that can also learn by itself that it is lost, without a renewal
// being refused: an etcd session whose keep-alive ended. Lead ends the term with
// ReasonLeaseLost when Lost's channel is closed.
type LostLease interface {
	Lease
	// Lost returns a channel that is closed once the lease is lost or no longer kept
	// alive. Its owner closes it.
	Lost() <-chan struct{}
}

// Leadership leads terms on a Lease: it is the term loop of Elector (the local lease
// deadline, the renewals, the step-down and the release), for a lock taken some other
// way, such as by another lock library. Create it with NewLeadership. Lead leads one term
// at a time; Status and Check are safe for concurrent use.
type Leadership struct {
	cfg   Config // defaults applied, validated
	log   *slog.Logger
	chaos chaosHooks // empty in a default build (chaos_off.go)

	// Set for an Elector's own terms only: they hit election's failpoints (a library's
	// lock has none of its requests), and each term start is a holder for OnNewLeader.
	failpoints bool
	started    func(Term)

	mu       sync.Mutex
	status   Status
	deadline time.Time // the local lease deadline while status.Role is RoleLeader
	overdue  overdue   // a lead func past LeadGrace, if any
}

// NewLeadership returns a Leadership that leads terms with cfg's LeaseTTL, RenewInterval,
// DriftMargin, RequestTimeout, LeadGrace, OnLeadOverdue and Clock, and reports them to cfg's Logger (as given: it
// adds no attributes), Metrics and Recorder, as an Elector with cfg would. It sends
// nothing. cfg takes its defaults and is validated as by New: it returns a *ConfigError
// (errors.Is ErrInvalidConfig) if cfg is inconsistent. RetryInterval and OnNewLeader are
// not used.
func NewLeadership(cfg Config) (*Leadership, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return newLeadership(cfg, cfg.Logger), nil
}

// newLeadership builds a Leadership; cfg must have its defaults and be valid.
func newLeadership(cfg Config, log *slog.Logger) *Leadership {
	return &Leadership{cfg: cfg, log: log, status: Status{Role: RoleFollower}}
}

// Status returns a snapshot of the role and of the leader last observed: this instance
// while a term runs (and after it, with Role RoleFollower and Token 0). It does not block
// on Redis.
func (l *Leadership) Status() Status {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.status
}

// Check returns an error wrapping ErrLeadOverdue while a lead func has not returned
// LeadGrace after its term ended, one wrapping ErrLeaseOverdue if a term is still led
// more than maxTolerable after its local lease deadline (measured on Config.Clock), and
// nil otherwise (see Elector.Check). It does not block on Redis.
func (l *Leadership) Check(maxTolerable time.Duration) error {
	l.mu.Lock()
	role, token, deadline, overdue := l.status.Role, l.status.Token, l.deadline, l.overdue
	l.mu.Unlock()
	if overdue.token != 0 {
		return fmt.Errorf("%w: term %d ended %v ago (LeadGrace %v)", ErrLeadOverdue, overdue.token,
			l.cfg.Clock.Now().Sub(overdue.ended), l.cfg.LeadGrace)
	}
	if role != RoleLeader {
		return nil
	}
	if over := l.cfg.Clock.Now().Sub(deadline); over > maxTolerable {
		return fmt.Errorf("%w: term %d still led %v after its deadline (tolerated %v)", ErrLeaseOverdue, token, over, maxTolerable)
	}
	return nil
}

// observe notes a lock holder found by someone else's acquire.
func (l *Leadership) observe(instance string, token int64) {
	l.mu.Lock()
	l.status.Leader, l.status.LeaderToken = instance, token
	l.mu.Unlock()
}

// requestContext bounds one request by RequestTimeout. It is detached from ctx's
// cancellation: a request under way when ctx is cancelled gets its answer, so its outcome
// is known and an acquired lease can still be released.
func (l *Leadership) requestContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), l.cfg.RequestTimeout)
}

type renewResult struct {
	sent time.Time // Clock reading before the request was sent
	ok   bool
	err  error
}

// Lead leads term, whose lease was just taken, until the term ends, and returns why it
// ended. It blocks. Calls of Lead must not overlap, and no other request of the caller's
// that Recorder is told about may be under way while Lead runs.
//
// Lead calls lead(termCtx, term) on a new goroutine, unless ctx is already done or the
// term's first local deadline, term.Start + LeaseTTL - DriftMargin, has passed already.
// It renews the lease while lead runs: the first renewal RenewInterval after renewFrom
// (term.Start, if the lease was set by a request sent then), each next one RenewInterval
// after the last was sent, one in flight at a time. A renewal confirmed before the
// deadline moves the deadline to its send time + LeaseTTL - DriftMargin. termCtx is
// cancelled when the term ends, and context.Cause(termCtx) says why: ErrLeaseExpired
// (the deadline passed, whether or not Redis answers), ErrNotHeld (Redis rejected a
// renewal), ErrLeaseLost (a LostLease said so), ErrLeadReturned (lead returned on its
// own) or ctx's cause (shutdown).
//
// When the term ends, Lead records the step-down, waits for lead to return (lead must
// honour termCtx) and for any renewal in flight; then, if ctx is done or lead returned,
// it releases the lease with a fresh deadline of RequestTimeout, detached from ctx.
// Every request and the step-down are told to Recorder (see Recorder), and logged and
// measured as Elector's are (became-leader, renew-failed, lost-leadership, released,
// release-failed).
func (l *Leadership) Lead(ctx context.Context, term Term, lease Lease, renewFrom time.Time, lead func(ctx context.Context, t Term)) Reason {
	cfg := l.cfg
	deadline := term.Start.Add(cfg.LeaseTTL - cfg.DriftMargin)
	granted := term.Start // the send time of the grant that set deadline
	if l.chaos.trustsGrant() {
		// The lease is believed to start now, its renewals too: a renewal due at once
		// would find a lock lost meanwhile before the work acted on it.
		renewFrom = cfg.Clock.Now()
		deadline, granted = renewFrom.Add(cfg.LeaseTTL-cfg.DriftMargin), renewFrom
	}
	termCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	leadCtx, stopLeadCtx := l.chaos.leadContext(ctx, termCtx)
	defer stopLeadCtx()

	l.mu.Lock()
	l.status = Status{Role: RoleLeader, Token: term.Token, Leader: term.Instance, LeaderToken: term.Token}
	l.deadline = deadline
	l.mu.Unlock()
	cfg.Metrics.BecameLeader(term.Token)
	l.log.Info("became-leader", slog.Int64("token", term.Token))
	if l.started != nil {
		l.started(term)
	}

	var (
		reason   Reason
		leadDone chan struct{}    // closed when lead returns; nil once seen
		renewing chan renewResult // the renewal in flight; nil if none
		lost     <-chan struct{}  // closed when a LostLease is lost; nil for other leases
	)
	if ll, ok := lease.(LostLease); ok {
		lost = ll.Lost()
	}
	now := cfg.Clock.Now()
	switch {
	case ctx.Err() != nil:
		reason = ReasonShutdown
	case !now.Before(deadline) && !l.chaos.ignoreDeadline():
		// The acquire's reply took so long that the lease may already be someone else's.
		reason = ReasonLeaseExpired
	default:
		// Arm the timers before lead starts, each from a fresh reading, so that they are
		// as close as possible to the absolute times they stand for.
		deadlineT := cfg.Clock.NewTimer(deadline.Sub(cfg.Clock.Now()))
		defer deadlineT.Stop()
		renewT := cfg.Clock.NewTimer(renewFrom.Add(cfg.RenewInterval).Sub(cfg.Clock.Now()))
		defer renewT.Stop()
		leadDone = make(chan struct{})
		go func() {
			defer close(leadDone)
			lead(leadCtx, term)
		}()
	loop:
		for {
			select {
			case <-ctx.Done():
				reason = ReasonShutdown
				break loop
			case <-leadDone:
				leadDone = nil
				reason = ReasonLeadReturned
				if ctx.Err() != nil {
					reason = ReasonShutdown // lead saw the shutdown first
				}
				break loop
			case <-lost:
				reason = ReasonLeaseLost
				break loop
			case <-deadlineT.C():
				if l.chaos.ignoreDeadline() {
					continue
				}
				reason = ReasonLeaseExpired
				break loop
			case <-renewT.C():
				renewing = l.startRenew(ctx, term, lease)
			case r := <-renewing:
				renewing = nil
				now := cfg.Clock.Now()
				switch {
				case r.err != nil:
					cfg.Metrics.RenewFailed()
					l.log.Warn("renew-failed", slog.Int64("token", term.Token), slog.Any("error", r.err))
				case !r.ok:
					reason = ReasonRenewRejected
					break loop
				case !now.Before(deadline) && !l.chaos.ignoreDeadline():
					// Confirmed too late: the deadline passed before we knew.
					reason = ReasonLeaseExpired
					break loop
				default:
					deadline, granted = r.sent.Add(cfg.LeaseTTL-cfg.DriftMargin), r.sent
					deadlineT.Reset(deadline.Sub(cfg.Clock.Now()))
					l.mu.Lock()
					l.deadline = deadline
					l.mu.Unlock()
				}
				// One renewal in flight at a time; the next is due RenewInterval after
				// this one was sent (at once if that has passed).
				renewT.Reset(max(0, r.sent.Add(cfg.RenewInterval).Sub(cfg.Clock.Now())))
			}
		}
	}

	switch reason {
	case ReasonLeaseExpired:
		cancel(ErrLeaseExpired)
	case ReasonRenewRejected:
		cancel(ErrNotHeld)
	case ReasonLeaseLost:
		cancel(ErrLeaseLost)
	case ReasonLeadReturned:
		cancel(ErrLeadReturned)
	default:
		cancel(context.Cause(ctx))
	}
	counted := deadline.Sub(granted)
	told := !l.chaos.neverTells()
	if told {
		l.stepDown(term, reason, counted)
	}
	if leadDone != nil {
		l.awaitLead(term, leadDone) // bounded wait: overdue.go
	}
	if !told {
		l.stepDown(term, reason, counted) // the node learns it only when its work stops
	}
	if renewing != nil {
		<-renewing // bounded by RequestTimeout if the client honours deadlines
	}
	if reason == ReasonShutdown || reason == ReasonLeadReturned {
		l.release(ctx, term.Token, lease, "")
	}
	return reason
}

// startRenew sends one renewal on a new goroutine. The returned channel (buffered)
// receives its result; the caller must receive it before the term's cleanup ends.
func (l *Leadership) startRenew(ctx context.Context, term Term, lease Lease) chan renewResult {
	ch := make(chan renewResult, 1)
	sent := l.cfg.Clock.Now()
	complete := l.cfg.Recorder.Invoke(OpRenew, term.Token)
	go func() {
		var ferr error
		if l.failpoints {
			ferr = hit("election/renew-before-send") // a late renewal: the deadline must fire
		}
		rctx, cancel := l.requestContext(ctx)
		defer cancel()
		start := time.Now() // metrics measure real time, not the injected clock
		ok, err := false, ferr
		if ferr == nil {
			ok, err = lease.Renew(rctx)
		}
		switch {
		case err != nil:
			complete(Result{Outcome: Unknown, Token: term.Token, Err: err})
		case ok:
			l.cfg.Metrics.RenewAnswered(time.Since(start))
			complete(Result{Outcome: OK, Token: term.Token})
		default:
			l.cfg.Metrics.RenewAnswered(time.Since(start))
			complete(Result{Outcome: Fail, Token: term.Token, Err: ErrNotHeld})
		}
		ch <- renewResult{sent: sent, ok: ok, err: err}
	}()
	return ch
}

// Release releases lease, token's, outside Lead: after a term that Lead ended without
// releasing (its lease may outlive the local deadline, as an etcd session does), or for
// a lease that no term used. It sends one request with a fresh deadline of
// RequestTimeout, also when ctx is done, records it and logs it as Lead does (why, if
// set, as the reason), and reports whether the release was confirmed. It must not
// overlap Lead.
func (l *Leadership) Release(ctx context.Context, token int64, lease Lease, why string) bool {
	return l.release(ctx, token, lease, why)
}

// release releases lease (token's), with a fresh deadline also when ctx is done. It
// reports whether Redis confirmed the release. why, if set, is logged as the reason of a
// release that ends no term.
func (l *Leadership) release(ctx context.Context, token int64, lease Lease, why string) bool {
	complete := l.cfg.Recorder.Invoke(OpRelease, token)
	var ferr error
	if l.failpoints {
		// A late release: the lease may have expired and been taken meanwhile.
		ferr = hit("election/release-before-send")
	}
	rctx, cancel := l.requestContext(ctx)
	ok, err := false, ferr
	if ferr == nil {
		ok, err = lease.Release(rctx)
	}
	cancel()
	attrs := []any{slog.Int64("token", token)}
	if why != "" {
		attrs = append(attrs, slog.String("reason", why))
	}
	switch {
	case err != nil:
		complete(Result{Outcome: Unknown, Token: token, Err: err})
		l.log.Warn("release-failed", append(attrs, slog.Any("error", err))...)
	case ok:
		complete(Result{Outcome: OK, Token: token})
		l.log.Info("released", attrs...)
	default:
		complete(Result{Outcome: Fail, Token: token, Err: ErrNotHeld})
		l.log.Info("release-failed", append(attrs, slog.Any("error", ErrNotHeld))...)
	}
	return ok && err == nil
}

// stepDown ends term for reason; counted is the lease its deadline counted from the send of
// the grant that set it (LeaseRecorder).
func (l *Leadership) stepDown(term Term, reason Reason, counted time.Duration) {
	l.mu.Lock()
	l.status.Role, l.status.Token = RoleFollower, 0
	l.mu.Unlock()
	// Recorded first: its time is when the term ended, which a log write that blocks
	// (a busy disk) must not move.
	if lr, ok := l.cfg.Recorder.(LeaseRecorder); ok {
		lr.StepDownCounted(term.Token, reason, counted)
	} else {
		l.cfg.Recorder.StepDown(term.Token, reason)
	}
	l.cfg.Metrics.LostLeadership(reason)
	level := slog.LevelWarn
	if reason == ReasonShutdown || reason == ReasonLeadReturned {
		level = slog.LevelInfo
	}
	l.log.Log(context.Background(), level, "lost-leadership",
		slog.Int64("token", term.Token), slog.String("reason", string(reason)))
}
