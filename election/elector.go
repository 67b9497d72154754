package election

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/internal/redisretries"
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
	terms   *Leadership // leads each term won; holds the Status

	// What the elector knows of the token counter, used only by Run's goroutine: floor is
	// the highest token it has seen issued (in a lock it read, or one it won), and
	// floorKnown says that some answer has told it one since it was created.
	floor      int64
	floorKnown bool
	unresolved bool  // an acquire got no answer since the last term started
	adopting   int64 // the token of an adoption whose outcome is unknown, else 0
	// lostTakeover is the lock value that every unanswered acquire since the last term
	// started tried to take over, "" if any of them was a plain acquire or another
	// takeover: a term adopted then began with that takeover, which the adoption records.
	lostTakeover string

	// The holder OnNewLeader was last called with (Run's goroutine only).
	lastLeader      string
	lastLeaderToken int64
}

// New returns an Elector for the election cfg.Name on client. It sends nothing: Run does.
// It returns a *ConfigError (errors.Is ErrInvalidConfig) if cfg is inconsistent.
//
// The client's commands must not be retried: build it with MaxRetries: -1 (as
// ClientOptions does). A retried acquire may issue a token that no history records, and a
// retried renew or release may land after the elector has recorded its outcome. New
// refuses a *redis.Client, *redis.ClusterClient or *redis.Ring that retries, with a
// *ConfigError on "client" that wraps ErrInvalidConfig and ErrRetryingClient. Use
// ContextTimeoutEnabled: true as well, so that RequestTimeout bounds each request on the
// socket; otherwise a blackholed request lasts the client's ReadTimeout (the local lease
// deadline still fires on time, but the next request waits for the stuck one).
func New(client redis.UniversalClient, cfg Config) (*Elector, error) {
	if client == nil {
		return nil, &ConfigError{Field: "client", Reason: "nil redis client"}
	}
	if n := redisretries.Of(client); n > 0 {
		return nil, &ConfigError{Field: "client", Err: ErrRetryingClient, Reason: fmt.Sprintf(
			"%v %s", ErrRetryingClient, redisretries.Refusal(client, n))}
	}
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return newElector(newRedisStore(client, cfg.Name, cfg.RequestTimeout, cfg.TakeoverOnDisconnect), cfg), nil
}

// newElector builds an Elector on any store; cfg must have its defaults and be valid.
func newElector(s store, cfg Config) *Elector {
	e := &Elector{
		cfg:   cfg,
		store: s,
		log:   cfg.Logger.With(slog.String("election", cfg.Name), slog.String("instance", cfg.InstanceID)),
	}
	e.terms = newLeadership(cfg, e.log)
	e.terms.failpoints = true
	e.terms.started = func(t Term) { e.newLeader(t.Instance, t.Token) }
	return e
}

// Status returns a snapshot of the elector's role and of the leader it last observed.
// It does not block on Redis.
func (e *Elector) Status() Status { return e.terms.Status() }

// Check reports whether the elector is healthy in the sense of client-go's leader-election
// health check: it returns an error wrapping ErrLeaseOverdue if the elector believes it
// leads but its local lease deadline passed more than maxTolerable ago (measured on
// Config.Clock) — a leader whose term should have ended and did not, because Run's
// goroutine is stuck (a Recorder, Metrics or OnNewLeader that blocks, a starved process).
// It returns an error wrapping ErrLeadOverdue, whatever maxTolerable, while a lead func
// has not returned Config.LeadGrace after its term ended. A follower, or a leader within
// its lease, is healthy: Check returns nil. It does not block on Redis. Wire it to a liveness probe, with maxTolerable of a few seconds.
func (e *Elector) Check(maxTolerable time.Duration) error { return e.terms.Check(maxTolerable) }

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
// When a term ends, Run waits for lead to return (lead must honour termCtx; past
// Config.LeadGrace it reports lead overdue) and for any renewal in flight before it
// sends anything else. Then, if ctx is done (or lead returned),
// it releases the lease with a fresh deadline of RequestTimeout, detached from ctx.
//
// While another instance holds the lease, Run waits for a release notice, for the lease's
// remaining PTTL, or for RetryInterval, whichever comes first. A failed acquire is never
// re-sent within the same attempt: its outcome is unknown, and the next attempt is a new
// request, RetryInterval later.
//
// A reply can be lost although the request ran (a timeout while Redis was stopped, a
// reset connection): an acquire may then have taken the lock, a renewal may have extended
// it. When an attempt finds the lock holding this instance's own value "<instance>:<t>",
// Run resolves it at once instead of waiting for it to expire:
//
//   - if an acquire of this elector got no answer since its last term started, and t is
//     greater than every token it has seen issued, t can only come from one of its own
//     acquires whose reply was lost: Run adopts that term. It sends a
//     compare-and-PEXPIRE of the value (recorded as an acquire with token t, see Recorder);
//     if Redis confirms, the term starts with token t, and Term.Start is that request's
//     send time.
//   - otherwise it is a lease no term uses (a term of this elector that ended after a
//     lost renewal or release, or an earlier process of this instance): Run releases it,
//     which also wakes the standbys, and campaigns again at once. (Two processes that run
//     with one InstanceID at once break Config's rule; they may release each other's
//     leases, and one that lost an acquire reply may adopt the other's term.)
func (e *Elector) Run(ctx context.Context, lead func(ctx context.Context, t Term)) error {
	if lead == nil {
		return errors.New("election: Run: nil lead func")
	}
	if !e.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer e.running.Store(false)
	return e.loop(ctx, lead, nil)
}

// loop is Run's body, shared with the lock API (lock.go): it campaigns until ctx is
// done, then returns nil. If until is not nil, loop also returns, with the pause's err,
// as soon as until says so of the pause that follows an attempt.
func (e *Elector) loop(ctx context.Context, lead func(context.Context, Term), until func(pause) bool) error {
	presence := ""
	if e.cfg.TakeoverOnDisconnect {
		presence = e.cfg.InstanceID
	}
	sub := e.store.subscribe(ctx, presence)
	defer sub.Close()

	takeFrom := ""
	for ctx.Err() == nil {
		next := e.campaign(ctx, lead, sub, takeFrom)
		if until != nil && until(next) {
			return next.err
		}
		takeFrom = e.sleep(ctx, next)
	}
	return nil
}

// pause is what comes between two acquire attempts.
type pause struct {
	wait    time.Duration   // the longest wait
	notices <-chan struct{} // release notices that cut the wait short; nil if none may
	// watch is the lock value of another instance whose presence the wait polls
	// (Config.TakeoverOnDisconnect); "" if none.
	watch string
	// err is why the attempt led no term: ErrLeaseHeld, ErrNotPresent or the request's
	// error; nil after a term, or when the next attempt follows at once.
	err error
}

// campaign makes one acquire attempt, a takeover of lock value takeFrom if it is not "",
// and, if it wins, leads the term to its end. It returns what to wait for before the
// next attempt.
func (e *Elector) campaign(ctx context.Context, lead func(context.Context, Term), sub subscription, takeFrom string) pause {
	if takeFrom != "" {
		// The poll saw the holder's presence gone; the lock may change before the
		// takeover runs, which is why the takeover script checks again.
		_ = hit("election/takeover-between-steps")
	}
	sent := e.cfg.Clock.Now() // before the request: the lease is measured from here
	complete := e.cfg.Recorder.Invoke(OpAcquire, 0)
	rctx, cancel := e.terms.requestContext(ctx)
	var r acquireReply
	var err error
	if takeFrom != "" {
		r, err = e.store.takeover(rctx, e.cfg.InstanceID, e.cfg.LeaseTTL, takeFrom)
	} else {
		r, err = e.store.acquire(rctx, e.cfg.InstanceID, e.cfg.LeaseTTL)
	}
	cancel()
	if ferr := hit("election/acquire-before-reply"); ferr != nil && err == nil {
		err = ferr // the reply is lost: Redis may have issued a token
	}
	switch {
	case err != nil && refusedUnrun(err):
		// Refused before it ran (a MOVED after a Redis Cluster failover): no token.
		complete(Result{Outcome: Fail, Err: err})
		e.log.Warn("acquire-refused", slog.Any("error", err))
		return pause{wait: e.cfg.RetryInterval, notices: sub.C(), err: err}
	case err != nil:
		// No retry: a lost reply may have issued a token. If it did, the next attempt
		// finds this instance's value in the lock and adopts the term (see recover).
		complete(Result{Outcome: Unknown, Err: err})
		if !e.unresolved {
			e.lostTakeover = takeFrom
		} else if e.lostTakeover != takeFrom {
			e.lostTakeover = ""
		}
		e.unresolved = true
		e.log.Warn("acquire-failed", slog.Any("error", err))
		return pause{wait: e.cfg.RetryInterval, notices: sub.C(), err: err}
	case !r.won && r.absent:
		// Our subscription is being made or remade: no lease may be held without it.
		complete(Result{Outcome: Fail, Err: ErrNotPresent})
		return pause{wait: e.cfg.PresenceInterval, notices: sub.C(), err: ErrNotPresent}
	case !r.won:
		complete(Result{Outcome: Fail, Err: ErrLeaseHeld})
		inst, token, perr := ParseLockValue(r.holder)
		if perr == nil && inst == e.cfg.InstanceID {
			return e.recover(ctx, lead, sub, token)
		}
		if perr == nil {
			e.learn(token)
		}
		e.observe(r.holder)
		p := pause{wait: e.cfg.RetryInterval, notices: sub.C(), err: ErrLeaseHeld}
		if r.pttl >= 0 && r.pttl+pttlMargin < p.wait {
			p.wait = r.pttl + pttlMargin
		}
		if e.cfg.TakeoverOnDisconnect && perr == nil {
			p.watch = r.holder
		}
		return p
	}
	took := ""
	if r.tookOver {
		took = takeFrom
	}
	complete(Result{Outcome: OK, Token: r.token, TookOver: took})
	e.learn(r.token)
	e.unresolved, e.lostTakeover = false, ""
	if took != "" {
		e.log.Info("took-over", slog.Int64("token", r.token), slog.String("from", took))
	}
	_ = hit("election/acquire-after-win") // a pause or crash of a brand-new leader
	return e.lead(ctx, Term{Token: r.token, Instance: e.cfg.InstanceID, Name: e.cfg.Name, Start: sent}, lead)
}

// lead leads term to its end and returns what to wait for before the next attempt.
func (e *Elector) lead(ctx context.Context, term Term, lead func(context.Context, Term)) pause {
	if e.terms.Lead(ctx, term, e.lease(term.Token), term.Start, lead) == ReasonLeadReturned {
		return pause{wait: e.cfg.RetryInterval}
	}
	return pause{}
}

// learn notes that token was issued by the counter. A lock value of this instance with a
// greater token can then only come from an acquire of this elector whose reply was lost.
func (e *Elector) learn(token int64) {
	e.floor = max(e.floor, token)
	e.floorKnown = true
}

// recover deals with a lock found holding this instance's own value with token: it adopts
// the term if an acquire of this elector whose reply was lost took it, and releases the
// lease otherwise (see Run). It returns what to wait for before the next attempt.
func (e *Elector) recover(ctx context.Context, lead func(context.Context, Term), sub subscription, token int64) pause {
	lease := e.lease(token)
	ours := (e.unresolved && e.floorKnown && token > e.floor) || token == e.adopting
	e.learn(token)
	e.adopting = 0
	if !ours {
		if e.terms.release(ctx, token, lease, "unused-own-lease") {
			e.cfg.Metrics.Recovered(RecoveryReleased)
			return pause{} // the lease is free: campaign again at once
		}
		return pause{wait: e.cfg.RetryInterval, notices: sub.C(), err: ErrLeaseHeld}
	}
	// Adopt: extend the lock if it still holds value. Redis runs the request after it was
	// sent, so the lease lasts at least LeaseTTL from the send time, as for an acquire.
	sent := e.cfg.Clock.Now()
	complete := e.cfg.Recorder.Invoke(OpAcquire, token)
	rctx, cancel := e.terms.requestContext(ctx)
	ok, err := lease.Renew(rctx)
	cancel()
	switch {
	case err != nil:
		outcome := Unknown
		if refusedUnrun(err) {
			outcome = Fail // not run; the next attempt may still adopt the term
		}
		complete(Result{Outcome: outcome, Token: token, Err: err})
		e.log.Warn("acquire-failed", slog.Int64("token", token), slog.Any("error", err))
		e.adopting = token // still ours to adopt if the next attempt finds it
		return pause{wait: e.cfg.RetryInterval, notices: sub.C(), err: err}
	case !ok:
		// It expired (or was released) since the attempt read it: campaign again at once.
		complete(Result{Outcome: Fail, Token: token, Err: ErrNotHeld})
		return pause{}
	}
	took := ""
	if e.unresolved {
		took = e.lostTakeover // the term began with the takeover whose answer was lost
	}
	complete(Result{Outcome: OK, Token: token, TookOver: took})
	e.unresolved, e.lostTakeover = false, ""
	e.cfg.Metrics.Recovered(RecoveryAdopted)
	e.log.Info("adopted", slog.Int64("token", token))
	return e.lead(ctx, Term{Token: token, Instance: e.cfg.InstanceID, Name: e.cfg.Name, Start: sent}, lead)
}

// lease is the lease of this instance's term with token: the lock holding its value.
func (e *Elector) lease(token int64) Lease {
	return redisLease{s: e.store, value: LockValue(e.cfg.InstanceID, token), ttl: e.cfg.LeaseTTL}
}

// redisLease is a term's lease in the store. Its release also publishes the notice.
type redisLease struct {
	s     store
	value string
	ttl   time.Duration
}

func (l redisLease) Renew(ctx context.Context) (bool, error)   { return l.s.renew(ctx, l.value, l.ttl) }
func (l redisLease) Release(ctx context.Context) (bool, error) { return l.s.release(ctx, l.value) }

// sleep waits for p.wait, a notice or ctx, whichever comes first. With p.watch, it
// also polls the watched holder's presence every PresenceInterval: it returns early when
// the lock changed, and returns p.watch, to be taken over, when the lock still holds it
// and nobody listens on the holder's presence channel. Otherwise it returns "".
func (e *Elector) sleep(ctx context.Context, p pause) (takeFrom string) {
	if p.wait <= 0 {
		return ""
	}
	t := e.cfg.Clock.NewTimer(p.wait)
	defer t.Stop()
	var poll <-chan time.Time
	if p.watch != "" {
		pt := e.cfg.Clock.NewTimer(e.cfg.PresenceInterval)
		defer pt.Stop()
		poll = pt.C()
		for {
			select {
			case <-ctx.Done():
				return ""
			case <-t.C():
				return ""
			case <-p.notices:
				return ""
			case <-poll:
			}
			rctx, cancel := e.terms.requestContext(ctx)
			value, listened, err := e.store.present(rctx, p.watch)
			cancel()
			switch {
			case err == nil && value != p.watch:
				return "" // released, expired or taken: attempt at once
			case err == nil && !listened:
				return p.watch
			}
			pt.Reset(e.cfg.PresenceInterval)
		}
	}
	select {
	case <-ctx.Done():
	case <-t.C():
	case <-p.notices:
	}
	return ""
}

// observe notes the lock holder an acquire attempt found.
func (e *Elector) observe(holder string) {
	inst, token, err := ParseLockValue(holder)
	if err != nil {
		inst, token = holder, 0 // not ours to judge; show it as found
	}
	e.terms.observe(inst, token)
	if inst != "" {
		e.newLeader(inst, token)
	}
}

// newLeader calls OnNewLeader if (instance, token) differs from the last holder it was
// called with. Only Run's goroutine calls it.
func (e *Elector) newLeader(instance string, token int64) {
	if e.cfg.OnNewLeader == nil || (instance == e.lastLeader && token == e.lastLeaderToken) {
		return
	}
	e.lastLeader, e.lastLeaderToken = instance, token
	e.cfg.OnNewLeader(instance, token)
}
