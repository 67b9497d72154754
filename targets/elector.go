package targets

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/election"
)

// Config configures an Elector. Zero fields take the documented default.
type Config struct {
	// Target is the target's name (Redsync, RedsyncFenced, Redislock, RedislockFenced).
	// Required.
	Target string
	// InstanceID names this elector in logs and in the history. Required.
	InstanceID string
	// Name is the election name, the hash tag of the lock key and of the token counter.
	// Default election.DefaultName.
	Name string
	// LeaseTTL is the lock's expiry. Default election.DefaultLeaseTTL (2s).
	LeaseTTL time.Duration
	// RenewInterval is the time between extensions. Default LeaseTTL/3.
	RenewInterval time.Duration
	// RetryInterval is how long a standby waits after an acquire that got no answer (the
	// library's own retry delays apply between refused tries). Default LeaseTTL/4.
	RetryInterval time.Duration
	// DriftMargin is subtracted from the local lease deadline. Default LeaseTTL/20.
	DriftMargin time.Duration
	// RequestTimeout bounds each extend, release and INCR. Default RenewInterval/2.
	RequestTimeout time.Duration
	// Clock measures the lease. Default the system clock.
	Clock election.Clock
	// Logger receives became-leader, lost-leadership, renew-failed, released. Default: discard.
	Logger *slog.Logger
	// Recorder receives every acquire, renew, release and step-down, as election's
	// recorder does (see election.Recorder). Default: none.
	Recorder election.Recorder
}

// Elector runs a library's lock as a leader election. Create it with New.
type Elector struct {
	cfg    election.Config // defaults applied
	client redis.UniversalClient
	lock   Lock
	terms  *election.Leadership // leads each term won; holds the Status
}

// New returns an Elector for cfg.Target on client. It sends nothing. The client must not
// retry commands (MaxRetries -1), as for election.New. cfg's timings take their defaults
// and are validated as election.New's are (a *election.ConfigError otherwise).
func New(client redis.UniversalClient, cfg Config) (*Elector, error) {
	if client == nil || cfg.InstanceID == "" {
		return nil, errors.New("targets: need a redis client and an InstanceID")
	}
	ecfg := election.Config{
		InstanceID: cfg.InstanceID, Name: cfg.Name, LeaseTTL: cfg.LeaseTTL, RenewInterval: cfg.RenewInterval,
		RetryInterval: cfg.RetryInterval, DriftMargin: cfg.DriftMargin, RequestTimeout: cfg.RequestTimeout,
		Clock: cfg.Clock, Logger: cfg.Logger, Recorder: cfg.Recorder,
	}.WithDefaults()
	ecfg.Logger = ecfg.Logger.With(slog.String("target", cfg.Target))
	terms, err := election.NewLeadership(ecfg)
	if err != nil {
		return nil, err
	}
	var lock Lock
	switch cfg.Target {
	case Redsync, RedsyncFenced:
		lock = NewRedsync(client, ecfg.Name, ecfg.LeaseTTL)
	case Redislock, RedislockFenced:
		lock = NewRedislock(client, ecfg.Name, ecfg.LeaseTTL)
	default:
		t, err := ByName(cfg.Target)
		if err != nil {
			return nil, err
		}
		if t.Etcd {
			return nil, fmt.Errorf("targets: %q elects through etcd (package targets/etcdelect), not with a Redis lock library", cfg.Target)
		}
		if t.Library == ClientGoLibrary {
			return nil, fmt.Errorf("targets: %q elects with client-go's LeaderElector (package targets/clientgo), not with a lock library", cfg.Target)
		}
		return nil, fmt.Errorf("targets: %q elects with package election, not with a lock library", cfg.Target)
	}
	return &Elector{cfg: ecfg, client: client, lock: lock, terms: terms}, nil
}

// Status returns the elector's role and token. A library does not say who holds its lock,
// so Leader is set only once this elector has led.
func (e *Elector) Status() election.Status { return e.terms.Status() }

// Check returns an error if the elector believes it leads more than maxTolerable past its
// local deadline (see election.Elector.Check).
func (e *Elector) Check(maxTolerable time.Duration) error { return e.terms.Check(maxTolerable) }

// Run campaigns until ctx is done, then returns nil. It blocks. Each time the lock is
// taken and a token drawn, it calls lead(termCtx, term) on a new goroutine and extends the
// lock while lead runs; termCtx is cancelled when the local deadline passes, an extend is
// refused, or ctx is done. Run waits for lead to return before it releases the lock or
// campaigns again.
func (e *Elector) Run(ctx context.Context, lead func(ctx context.Context, t election.Term)) error {
	for ctx.Err() == nil {
		term, err := e.acquire(ctx)
		switch {
		case err == nil:
			// The library's acquire retried: its lock was set after term.Start, at the
			// latest now, so the first extend is due RenewInterval from now.
			if e.terms.Lead(ctx, term, lockLease{e.lock}, e.cfg.Clock.Now(), lead) == election.ReasonLeadReturned {
				e.sleep(ctx, e.cfg.RetryInterval)
			}
		case errors.Is(err, ErrHeld):
			// The library has already waited its retry delays.
		default:
			e.sleep(ctx, e.cfg.RetryInterval)
		}
	}
	return nil
}

// acquire is one recorded acquire: the library's Acquire (with its retries, for at most
// half a lease, so that a term starts with at least half a lease ahead of it) and the
// INCR of the token counter.
func (e *Elector) acquire(ctx context.Context) (election.Term, error) {
	start := e.cfg.Clock.Now() // before the first try: the deadline can only be early
	complete := e.cfg.Recorder.Invoke(election.OpAcquire, 0)
	actx, cancel := context.WithTimeout(ctx, e.cfg.LeaseTTL/2)
	err := e.lock.Acquire(actx)
	cancel()
	if errors.Is(err, ErrHeld) {
		complete(election.Result{Outcome: election.Fail, Err: election.ErrLeaseHeld})
		return election.Term{}, err
	}
	if err != nil {
		complete(election.Result{Outcome: election.Unknown, Err: err})
		return election.Term{}, err
	}
	rctx, cancel := e.requestContext(ctx)
	token, err := e.client.Incr(rctx, election.TokenKey(e.cfg.Name)).Result()
	cancel()
	if err != nil {
		// The counter may have moved, but no term uses the number: free the lock.
		complete(election.Result{Outcome: election.Unknown, Err: err})
		rctx, cancel := e.requestContext(context.WithoutCancel(ctx))
		_ = e.lock.Release(rctx) // not recorded: it ends no term
		cancel()
		return election.Term{}, err
	}
	complete(election.Result{Outcome: election.OK, Token: token})
	return election.Term{Token: token, Instance: e.cfg.InstanceID, Name: e.cfg.Name, Start: start}, nil
}

// lockLease is a Lock as the term loop sees it.
type lockLease struct{ l Lock }

func (l lockLease) Renew(ctx context.Context) (bool, error)   { return answered(l.l.Extend(ctx)) }
func (l lockLease) Release(ctx context.Context) (bool, error) { return answered(l.l.Release(ctx)) }

// answered turns a Lock's error into election.Lease's answer: ErrNotHeld is Redis saying
// that the lock is not ours, any other error an unknown outcome.
func answered(err error) (bool, error) {
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrNotHeld):
		return false, nil
	}
	return false, err
}

func (e *Elector) requestContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, e.cfg.RequestTimeout)
}

// sleep waits d or until ctx is done.
func (e *Elector) sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
