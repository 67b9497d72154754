package targets

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
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
	cfg    Config
	client redis.UniversalClient
	lock   Lock

	mu       sync.Mutex
	status   election.Status
	deadline time.Time
}

// New returns an Elector for cfg.Target on client. It sends nothing. The client must not
// retry commands (MaxRetries -1), as for election.New.
func New(client redis.UniversalClient, cfg Config) (*Elector, error) {
	if client == nil || cfg.InstanceID == "" {
		return nil, errors.New("targets: need a redis client and an InstanceID")
	}
	cfg.Name = cmp.Or(cfg.Name, election.DefaultName)
	cfg.LeaseTTL = cmp.Or(cfg.LeaseTTL, election.DefaultLeaseTTL)
	cfg.RenewInterval = cmp.Or(cfg.RenewInterval, cfg.LeaseTTL/3)
	cfg.RetryInterval = cmp.Or(cfg.RetryInterval, cfg.LeaseTTL/4)
	cfg.DriftMargin = cmp.Or(cfg.DriftMargin, cfg.LeaseTTL/20)
	cfg.RequestTimeout = cmp.Or(cfg.RequestTimeout, cfg.RenewInterval/2)
	if cfg.RenewInterval >= cfg.LeaseTTL-cfg.DriftMargin || cfg.RequestTimeout >= cfg.RenewInterval {
		return nil, fmt.Errorf("targets: need RequestTimeout < RenewInterval < LeaseTTL - DriftMargin (got %v, %v, %v - %v)",
			cfg.RequestTimeout, cfg.RenewInterval, cfg.LeaseTTL, cfg.DriftMargin)
	}
	if cfg.Clock == nil {
		cfg.Clock = election.SystemClock()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Logger = cfg.Logger.With(slog.String("target", cfg.Target))
	if cfg.Recorder == nil {
		cfg.Recorder = nopRecorder{}
	}
	var lock Lock
	switch cfg.Target {
	case Redsync, RedsyncFenced:
		lock = NewRedsync(client, cfg.Name, cfg.LeaseTTL)
	case Redislock, RedislockFenced:
		lock = NewRedislock(client, cfg.Name, cfg.LeaseTTL)
	default:
		if _, err := ByName(cfg.Target); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("targets: %q elects with package election, not with a lock library", cfg.Target)
	}
	return &Elector{cfg: cfg, client: client, lock: lock, status: election.Status{Role: election.RoleFollower}}, nil
}

// Status returns the elector's role and token. A library does not say who holds its lock,
// so Leader is set only while this elector leads.
func (e *Elector) Status() election.Status {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.status
}

// Check returns an error if the elector believes it leads more than maxTolerable past its
// local deadline (see election.Elector.Check).
func (e *Elector) Check(maxTolerable time.Duration) error {
	e.mu.Lock()
	role, token, deadline := e.status.Role, e.status.Token, e.deadline
	e.mu.Unlock()
	if role != election.RoleLeader {
		return nil
	}
	if over := e.cfg.Clock.Now().Sub(deadline); over > maxTolerable {
		return fmt.Errorf("%w: term %d still led %v after its deadline (tolerated %v)", election.ErrLeaseOverdue, token, over, maxTolerable)
	}
	return nil
}

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
			if e.leadTerm(ctx, term, lead) == election.ReasonLeadReturned {
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

// leadTerm runs one term and returns why it ended.
func (e *Elector) leadTerm(ctx context.Context, term election.Term, lead func(context.Context, election.Term)) election.Reason {
	cfg := e.cfg
	deadline := term.Start.Add(cfg.LeaseTTL - cfg.DriftMargin)
	termCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	e.setLeader(term, deadline)
	cfg.Logger.Info("became-leader", slog.Int64("token", term.Token))

	var reason election.Reason
	leadDone := make(chan struct{})
	type extended struct {
		sent time.Time
		err  error
	}
	var extending chan extended
	if !cfg.Clock.Now().Before(deadline) {
		// The acquire took so long that the lease may already be someone else's.
		reason = election.ReasonLeaseExpired
		close(leadDone)
	} else {
		deadlineT := cfg.Clock.NewTimer(deadline.Sub(cfg.Clock.Now()))
		defer deadlineT.Stop()
		renewT := cfg.Clock.NewTimer(cfg.RenewInterval)
		defer renewT.Stop()
		go func() {
			defer close(leadDone)
			lead(termCtx, term)
		}()
	loop:
		for {
			select {
			case <-ctx.Done():
				reason = election.ReasonShutdown
				break loop
			case <-leadDone:
				reason = election.ReasonLeadReturned
				if ctx.Err() != nil {
					reason = election.ReasonShutdown
				}
				break loop
			case <-deadlineT.C():
				reason = election.ReasonLeaseExpired
				break loop
			case <-renewT.C():
				extending = make(chan extended, 1)
				sent := cfg.Clock.Now()
				complete := cfg.Recorder.Invoke(election.OpRenew, term.Token)
				go func(ch chan extended) {
					rctx, cancel := e.requestContext(ctx)
					defer cancel()
					err := e.lock.Extend(rctx)
					switch {
					case err == nil:
						complete(election.Result{Outcome: election.OK, Token: term.Token})
					case errors.Is(err, ErrNotHeld):
						complete(election.Result{Outcome: election.Fail, Token: term.Token, Err: election.ErrNotHeld})
					default:
						complete(election.Result{Outcome: election.Unknown, Token: term.Token, Err: err})
					}
					ch <- extended{sent, err}
				}(extending)
			case r := <-extending:
				extending = nil
				switch {
				case errors.Is(r.err, ErrNotHeld):
					reason = election.ReasonRenewRejected
					break loop
				case r.err != nil:
					cfg.Logger.Warn("renew-failed", slog.Int64("token", term.Token), slog.Any("error", r.err))
				case !cfg.Clock.Now().Before(deadline):
					reason = election.ReasonLeaseExpired
					break loop
				default:
					deadline = r.sent.Add(cfg.LeaseTTL - cfg.DriftMargin)
					deadlineT.Reset(deadline.Sub(cfg.Clock.Now()))
					e.mu.Lock()
					e.deadline = deadline
					e.mu.Unlock()
				}
				renewT.Reset(max(0, r.sent.Add(cfg.RenewInterval).Sub(cfg.Clock.Now())))
			}
		}
	}
	switch reason {
	case election.ReasonLeaseExpired:
		cancel(election.ErrLeaseExpired)
	case election.ReasonRenewRejected:
		cancel(election.ErrNotHeld)
	case election.ReasonLeadReturned:
		cancel(election.ErrLeadReturned)
	default:
		cancel(context.Cause(ctx))
	}
	e.mu.Lock()
	e.status.Role, e.status.Token = election.RoleFollower, 0
	e.mu.Unlock()
	cfg.Logger.Log(context.Background(), levelOf(reason), "lost-leadership",
		slog.Int64("token", term.Token), slog.String("reason", string(reason)))
	cfg.Recorder.StepDown(term.Token, reason)
	<-leadDone
	if extending != nil {
		<-extending
	}
	if reason == election.ReasonShutdown || reason == election.ReasonLeadReturned {
		e.release(ctx, term.Token)
	}
	return reason
}

func (e *Elector) setLeader(term election.Term, deadline time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.status = election.Status{Role: election.RoleLeader, Token: term.Token, Leader: term.Instance, LeaderToken: term.Token}
	e.deadline = deadline
}

// release releases the lock with a fresh deadline, also when ctx is done.
func (e *Elector) release(ctx context.Context, token int64) {
	complete := e.cfg.Recorder.Invoke(election.OpRelease, token)
	rctx, cancel := e.requestContext(context.WithoutCancel(ctx))
	defer cancel()
	err := e.lock.Release(rctx)
	attrs := []any{slog.Int64("token", token)}
	switch {
	case err == nil:
		complete(election.Result{Outcome: election.OK, Token: token})
		e.cfg.Logger.Info("released", attrs...)
	case errors.Is(err, ErrNotHeld):
		complete(election.Result{Outcome: election.Fail, Token: token, Err: election.ErrNotHeld})
		e.cfg.Logger.Info("release-failed", append(attrs, slog.Any("error", err))...)
	default:
		complete(election.Result{Outcome: election.Unknown, Token: token, Err: err})
		e.cfg.Logger.Warn("release-failed", append(attrs, slog.Any("error", err))...)
	}
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

func levelOf(r election.Reason) slog.Level {
	if r == election.ReasonShutdown || r == election.ReasonLeadReturned {
		return slog.LevelInfo
	}
	return slog.LevelWarn
}

type nopRecorder struct{}

func (nopRecorder) Invoke(election.Op, int64) func(election.Result) { return func(election.Result) {} }
func (nopRecorder) StepDown(int64, election.Reason)                 {}
