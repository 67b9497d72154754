package election

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// pttlMargin is added to a held lease's remaining PTTL before the next acquire attempt,
// so that the attempt reaches Redis after the lease's expiry.
const pttlMargin = 2 * time.Millisecond

// Elector campaigns for the lease of one election on behalf of one instance.
// Create it with New; its methods are safe for concurrent use.
type Elector struct {
	cfg     Config // defaults applied, validated
	store   store
	log     *slog.Logger
	running atomic.Bool

	mu     sync.Mutex
	status Status
}

// New returns an Elector for the election cfg.Name on client. It sends nothing: Run does.
// It returns a *ConfigError (errors.Is ErrInvalidConfig) if cfg is inconsistent.
//
// The client's commands must not be retried: build it with MaxRetries: -1 (as
// ClientOptions does). A retried acquire may issue a token that no history records, and a
// retried renew or release may land after the elector has recorded its outcome. Use
// ContextTimeoutEnabled: true as well, so that RequestTimeout bounds each request on the
// socket; otherwise a blackholed request lasts the client's ReadTimeout (the local lease
// deadline still fires on time, but the next request waits for the stuck one).
func New(client redis.UniversalClient, cfg Config) (*Elector, error) {
	if client == nil {
		return nil, &ConfigError{Field: "client", Reason: "nil redis client"}
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return newElector(newRedisStore(client, cfg.Name, cfg.RequestTimeout), cfg), nil
}

// newElector builds an Elector on any store; cfg must have its defaults and be valid.
func newElector(s store, cfg Config) *Elector {
	return &Elector{
		cfg:    cfg,
		store:  s,
		log:    cfg.Logger.With(slog.String("election", cfg.Name), slog.String("instance", cfg.InstanceID)),
		status: Status{Role: RoleFollower},
	}
}

// Status returns a snapshot of the elector's role and of the leader it last observed.
// It does not block on Redis.
func (e *Elector) Status() Status {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.status
}

// Run campaigns until ctx is done, then returns nil. It blocks. Only one Run of an Elector
// may be active at a time (ErrRunning otherwise); it may be called again after it returns.
//
// Run subscribes to the release channel first. Each time it wins the lease it calls
// lead(termCtx, term) on a new goroutine and renews the lease while lead runs. termCtx is
// cancelled when the term ends, and context.Cause(termCtx) says why: ErrLeaseExpired (the
// local deadline passed without a successful renewal, whether or not Redis answers),
// ErrNotHeld (Redis rejected a renewal), or ctx's own cause (shutdown). If lead returns
// on its own, the term ends too (ErrLeadReturned): the lease is released and Run waits
// RetryInterval before campaigning again, so that a standby can take over.
//
// When a term ends, Run waits for lead to return (lead must honour termCtx) and for any
// renewal in flight before it sends anything else. Then, if ctx is done (or lead returned),
// it releases the lease with a fresh deadline of RequestTimeout, detached from ctx.
//
// While another instance holds the lease — including an earlier term of this instance,
// left by a restart or by an acquire whose reply was lost — Run waits for a release
// notice, for the lease's remaining PTTL, or for RetryInterval, whichever comes first.
// A failed acquire is never re-sent within the same attempt.
func (e *Elector) Run(ctx context.Context, lead func(ctx context.Context, t Term)) error {
	if lead == nil {
		return errors.New("election: Run: nil lead func")
	}
	if !e.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer e.running.Store(false)

	sub := e.store.subscribe(ctx)
	defer sub.Close()

	for ctx.Err() == nil {
		wait, notices := e.campaign(ctx, lead, sub)
		e.sleep(ctx, wait, notices)
	}
	return nil
}

// campaign makes one acquire attempt and, if it wins, leads the term to its end. It
// returns how long to wait before the next attempt, and the channel of release notices
// that may cut the wait short (nil if none may).
func (e *Elector) campaign(ctx context.Context, lead func(context.Context, Term), sub subscription) (time.Duration, <-chan struct{}) {
	sent := e.cfg.Clock.Now() // before the request: the lease is measured from here
	complete := e.cfg.Recorder.Invoke(OpAcquire, 0)
	rctx, cancel := e.requestContext(ctx)
	r, err := e.store.acquire(rctx, e.cfg.InstanceID, e.cfg.LeaseTTL)
	cancel()
	switch {
	case err != nil:
		// No retry: a lost reply may have issued a token. If it did, that lease expires
		// unrenewed and the next attempts see it as held.
		complete(Result{Outcome: Unknown, Err: err})
		e.log.Warn("acquire-failed", slog.Any("error", err))
		return e.cfg.RetryInterval, sub.C()
	case !r.won:
		complete(Result{Outcome: Fail, Err: ErrLeaseHeld})
		e.observe(r.holder)
		wait := e.cfg.RetryInterval
		if r.pttl >= 0 && r.pttl+pttlMargin < wait {
			wait = r.pttl + pttlMargin
		}
		return wait, sub.C()
	}
	complete(Result{Outcome: OK, Token: r.token})
	term := Term{Token: r.token, Instance: e.cfg.InstanceID, Name: e.cfg.Name, Start: sent}
	if e.leadTerm(ctx, term, lead) == ReasonLeadReturned {
		return e.cfg.RetryInterval, nil
	}
	return 0, nil
}

// sleep waits for d, a notice or ctx, whichever comes first.
func (e *Elector) sleep(ctx context.Context, d time.Duration, notices <-chan struct{}) {
	if d <= 0 {
		return
	}
	t := e.cfg.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C():
	case <-notices:
	}
}

// requestContext bounds one request by RequestTimeout. It is detached from ctx's
// cancellation: a request under way when ctx is cancelled gets its answer, so its outcome
// is known and an acquired lease can still be released.
func (e *Elector) requestContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), e.cfg.RequestTimeout)
}

type renewResult struct {
	sent time.Time // Clock reading before the request was sent
	ok   bool
	err  error
}

// leadTerm runs one term: it calls lead, renews the lease while lead runs, ends the term
// and cleans up. It returns why the term ended.
func (e *Elector) leadTerm(ctx context.Context, term Term, lead func(context.Context, Term)) Reason {
	cfg := e.cfg
	value := LockValue(term.Instance, term.Token)
	deadline := term.Start.Add(cfg.LeaseTTL - cfg.DriftMargin)
	termCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	e.setStatus(Status{Role: RoleLeader, Token: term.Token, Leader: term.Instance, LeaderToken: term.Token})
	cfg.Metrics.becameLeader(term.Token)
	e.log.Info("became-leader", slog.Int64("token", term.Token))

	var (
		reason   Reason
		leadDone chan struct{}    // closed when lead returns; nil once seen
		renewing chan renewResult // the renewal in flight; nil if none
	)
	now := cfg.Clock.Now()
	switch {
	case ctx.Err() != nil:
		reason = ReasonShutdown
	case !now.Before(deadline):
		// The acquire's reply took so long that the lease may already be someone else's.
		reason = ReasonLeaseExpired
	default:
		// Arm the timers before lead starts, each from a fresh reading, so that they are
		// as close as possible to the absolute times they stand for.
		deadlineT := cfg.Clock.NewTimer(deadline.Sub(cfg.Clock.Now()))
		defer deadlineT.Stop()
		renewT := cfg.Clock.NewTimer(term.Start.Add(cfg.RenewInterval).Sub(cfg.Clock.Now()))
		defer renewT.Stop()
		leadDone = make(chan struct{})
		go func() {
			defer close(leadDone)
			lead(termCtx, term)
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
			case <-deadlineT.C():
				reason = ReasonLeaseExpired
				break loop
			case <-renewT.C():
				renewing = e.startRenew(ctx, term, value)
			case r := <-renewing:
				renewing = nil
				now := cfg.Clock.Now()
				switch {
				case r.err != nil:
					cfg.Metrics.renewFailed()
					e.log.Warn("renew-failed", slog.Int64("token", term.Token), slog.Any("error", r.err))
				case !r.ok:
					reason = ReasonRenewRejected
					break loop
				case !now.Before(deadline):
					// Confirmed too late: the deadline passed before we knew.
					reason = ReasonLeaseExpired
					break loop
				default:
					deadline = r.sent.Add(cfg.LeaseTTL - cfg.DriftMargin)
					deadlineT.Reset(deadline.Sub(cfg.Clock.Now()))
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
	case ReasonLeadReturned:
		cancel(ErrLeadReturned)
	default:
		cancel(context.Cause(ctx))
	}
	e.stepDown(term, reason)
	if leadDone != nil {
		<-leadDone
	}
	if renewing != nil {
		<-renewing // bounded by RequestTimeout if the client honours deadlines
	}
	if reason == ReasonShutdown || reason == ReasonLeadReturned {
		e.release(ctx, term, value)
	}
	return reason
}

// startRenew sends one renewal on a new goroutine. The returned channel (buffered)
// receives its result; the caller must receive it before the term's cleanup ends.
func (e *Elector) startRenew(ctx context.Context, term Term, value string) chan renewResult {
	ch := make(chan renewResult, 1)
	sent := e.cfg.Clock.Now()
	complete := e.cfg.Recorder.Invoke(OpRenew, term.Token)
	go func() {
		rctx, cancel := e.requestContext(ctx)
		defer cancel()
		start := time.Now() // metrics measure real time, not the injected clock
		ok, err := e.store.renew(rctx, value, e.cfg.LeaseTTL)
		switch {
		case err != nil:
			complete(Result{Outcome: Unknown, Token: term.Token, Err: err})
		case ok:
			e.cfg.Metrics.renewed(time.Since(start))
			complete(Result{Outcome: OK, Token: term.Token})
		default:
			e.cfg.Metrics.renewed(time.Since(start))
			complete(Result{Outcome: Fail, Token: term.Token, Err: ErrNotHeld})
		}
		ch <- renewResult{sent: sent, ok: ok, err: err}
	}()
	return ch
}

// release deletes the lock if it still holds value and publishes the release notice.
func (e *Elector) release(ctx context.Context, term Term, value string) {
	complete := e.cfg.Recorder.Invoke(OpRelease, term.Token)
	rctx, cancel := e.requestContext(ctx)
	ok, err := e.store.release(rctx, value)
	cancel()
	switch {
	case err != nil:
		complete(Result{Outcome: Unknown, Token: term.Token, Err: err})
		e.log.Warn("release-failed", slog.Int64("token", term.Token), slog.Any("error", err))
	case ok:
		complete(Result{Outcome: OK, Token: term.Token})
		e.log.Info("released", slog.Int64("token", term.Token))
	default:
		complete(Result{Outcome: Fail, Token: term.Token, Err: ErrNotHeld})
		e.log.Info("release-failed", slog.Int64("token", term.Token), slog.Any("error", ErrNotHeld))
	}
}

func (e *Elector) stepDown(term Term, reason Reason) {
	e.mu.Lock()
	e.status.Role, e.status.Token = RoleFollower, 0
	e.mu.Unlock()
	e.cfg.Metrics.lostLeadership(reason)
	level := slog.LevelWarn
	if reason == ReasonShutdown || reason == ReasonLeadReturned {
		level = slog.LevelInfo
	}
	e.log.Log(context.Background(), level, "lost-leadership",
		slog.Int64("token", term.Token), slog.String("reason", string(reason)))
	e.cfg.Recorder.StepDown(term.Token, reason)
}

func (e *Elector) setStatus(s Status) {
	e.mu.Lock()
	e.status = s
	e.mu.Unlock()
}

// observe notes the lock holder an acquire attempt found.
func (e *Elector) observe(holder string) {
	inst, token, err := ParseLockValue(holder)
	if err != nil {
		inst, token = holder, 0 // not ours to judge; show it as found
	}
	e.mu.Lock()
	e.status.Leader, e.status.LeaderToken = inst, token
	e.mu.Unlock()
}
