package etcdelect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/fenceline/fenceline/election"
)

// Config configures an Elector. Zero fields take the documented default.
type Config struct {
	// InstanceID names this elector in logs and in the history, and is the value of its
	// election key. Required.
	InstanceID string
	// Name is the election name: the key prefix is Prefix(Name). Default
	// election.DefaultName.
	Name string
	// LeaseTTL is the lease: the local deadline's length, and, rounded up to whole
	// seconds (at least 1), the session's TTL (SessionTTL). Default
	// election.DefaultLeaseTTL (2s).
	LeaseTTL time.Duration
	// RenewInterval is the time between the leader's own keep-alives. Default LeaseTTL/3.
	RenewInterval time.Duration
	// RetryInterval is how long the elector waits after a session or a campaign failed.
	// Default LeaseTTL/4.
	RetryInterval time.Duration
	// DriftMargin is subtracted from the local lease deadline. Default LeaseTTL/20.
	DriftMargin time.Duration
	// RequestTimeout bounds each request (session grant, keep-alive, resign, revoke).
	// Default RenewInterval/2.
	RequestTimeout time.Duration
	// Clock measures the lease. Default the system clock.
	Clock election.Clock
	// Logger receives became-leader, lost-leadership, renew-failed, released,
	// session-failed, campaign-failed. Default: discard.
	Logger *slog.Logger
	// Recorder receives every acquire, renew, release and step-down (see
	// election.Recorder). Default: none.
	Recorder election.Recorder
	// Health, if set, hears whether etcd answers: nil after a session grant and after
	// each read a standby sends every RenewInterval while it waits in Campaign (a
	// linearizable count of the election's keys, which needs a quorum), the error of one
	// that got no answer. It is the harness's view of a standby, not part of the
	// library's election: Campaign itself says nothing until it wins. Default: none.
	Health func(error)
}

// Prefix is the key prefix of election name in etcd.
func Prefix(name string) string {
	if name == "" {
		name = election.DefaultName
	}
	return "/fenceline/" + name + "/election"
}

// SessionTTL is the session TTL for a lease, in whole seconds: rounded up, at least 1.
func SessionTTL(lease time.Duration) int {
	return max(1, int((lease+time.Second-1)/time.Second))
}

// Elector runs etcd's election as fenceline's targets run a lock. Create it with New.
type Elector struct {
	cfg    election.Config // defaults applied
	ttl    int             // the session's TTL, seconds
	client *clientv3.Client
	terms  *election.Leadership
	health func(error)
}

// New returns an Elector on client. It sends nothing. cfg's timings take their defaults
// and are validated as election.New's are (a *election.ConfigError otherwise).
func New(client *clientv3.Client, cfg Config) (*Elector, error) {
	if client == nil || cfg.InstanceID == "" {
		return nil, errors.New("etcdelect: need an etcd client and an InstanceID")
	}
	ecfg := election.Config{
		InstanceID: cfg.InstanceID, Name: cfg.Name, LeaseTTL: cfg.LeaseTTL, RenewInterval: cfg.RenewInterval,
		RetryInterval: cfg.RetryInterval, DriftMargin: cfg.DriftMargin, RequestTimeout: cfg.RequestTimeout,
		Clock: cfg.Clock, Logger: cfg.Logger, Recorder: cfg.Recorder,
	}.WithDefaults()
	terms, err := election.NewLeadership(ecfg)
	if err != nil {
		return nil, err
	}
	health := cfg.Health
	if health == nil {
		health = func(error) {}
	}
	return &Elector{cfg: ecfg, ttl: SessionTTL(ecfg.LeaseTTL), client: client, terms: terms, health: health}, nil
}

// Status returns the elector's role and token. Leader is set only once this elector has
// led (it does not watch who else leads).
func (e *Elector) Status() election.Status { return e.terms.Status() }

// Check returns an error if the elector believes it leads more than maxTolerable past its
// local deadline (see election.Elector.Check).
func (e *Elector) Check(maxTolerable time.Duration) error { return e.terms.Check(maxTolerable) }

// Run campaigns until ctx is done, then returns nil. It blocks. Each time this elector is
// elected and its lease confirmed, it calls lead(termCtx, term) on a new goroutine, with
// the key's create revision as term.Token; termCtx is cancelled when the local deadline
// passes, a keep-alive finds the lease gone, the session's Done fires (cause
// election.ErrLeaseLost), or ctx is done. Run waits for lead to return, resigns and
// revokes the session's lease, and campaigns again on a new session.
//
// Once ctx is done, Run returns within about RequestTimeout even when etcd does not
// answer: a Campaign cut short resigns with the client's own context (no deadline), and
// Run leaves it to end when the client is closed.
func (e *Elector) Run(ctx context.Context, lead func(ctx context.Context, t election.Term)) error {
	for ctx.Err() == nil {
		s, err := e.newSession(ctx)
		if ctx.Err() == nil {
			e.health(err)
		}
		if err != nil {
			if ctx.Err() == nil {
				e.cfg.Logger.Warn("session-failed", slog.Any("error", err))
				e.sleep(ctx, e.cfg.RetryInterval)
			}
			continue
		}
		if e.campaignAndLead(ctx, s, lead) {
			e.sleep(ctx, e.cfg.RetryInterval)
		}
		s.end()
	}
	return nil
}

// session is a concurrency.Session with the cancel of the context it was made with.
type session struct {
	*concurrency.Session
	cancel context.CancelFunc
}

// end stops the session's keep-alive (its lease then expires in etcd if it was not
// revoked) and frees its context.
func (s session) end() {
	s.cancel()
	s.Orphan()
}

// newSession makes a session with the elector's TTL. Its grant is bounded by
// RequestTimeout and by ctx; the session itself outlives ctx, so that a term ended by
// shutdown can still resign and revoke through it.
func (e *Elector) newSession(ctx context.Context) (session, error) {
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	timer := time.AfterFunc(e.cfg.RequestTimeout, cancel)
	s, err := concurrency.NewSession(e.client, concurrency.WithTTL(e.ttl), concurrency.WithContext(sctx))
	inTime, notStopped := timer.Stop(), stop()
	if err == nil && (!inTime || !notStopped) {
		s.Orphan() // the grant came back after we gave up on it: its lease expires
		err = fmt.Errorf("etcdelect: session grant took more than %v", e.cfg.RequestTimeout)
	}
	if err != nil {
		cancel()
		return session{}, err
	}
	return session{Session: s, cancel: cancel}, nil
}

// campaignAndLead campaigns on s and, once elected, leads one term. It reports whether
// the term ended because lead returned (the caller then waits before campaigning again).
func (e *Elector) campaignAndLead(ctx context.Context, s session, lead func(context.Context, election.Term)) bool {
	el := concurrency.NewElection(s.Session, Prefix(e.cfg.Name))
	if abandoned, err := e.campaign(ctx, s, el); err != nil {
		if !abandoned {
			e.dropKey(ctx, s, el)
		}
		if ctx.Err() == nil {
			e.cfg.Logger.Warn("campaign-failed", slog.Any("error", err))
			e.sleep(ctx, e.cfg.RetryInterval)
		}
		return false
	}
	lease := sessionLease{s: s, el: el}
	token := el.Rev()
	// Campaign says when this key became the oldest, not when its lease was last
	// refreshed: a keep-alive sent now starts the local deadline. It is the history's
	// acquire, since a term's lease is dated from its acquire (docs/history.md).
	start := e.cfg.Clock.Now()
	complete := e.cfg.Recorder.Invoke(election.OpAcquire, 0)
	rctx, cancel := context.WithTimeout(ctx, e.cfg.RequestTimeout)
	ok, err := lease.Renew(rctx)
	cancel()
	if err != nil || !ok {
		if err == nil {
			err = election.ErrLeaseLost
		}
		complete(election.Result{Outcome: election.Unknown, Err: err})
		// The key may lead in etcd without a term: resign it (no term ends).
		e.terms.Release(ctx, token, lease, "unconfirmed")
		return false
	}
	complete(election.Result{Outcome: election.OK, Token: token})
	term := election.Term{Token: token, Instance: e.cfg.InstanceID, Name: e.cfg.Name, Start: start}
	switch reason := e.terms.Lead(ctx, term, lease, start, lead); reason {
	case election.ReasonShutdown:
		return false // released by Lead
	case election.ReasonLeadReturned:
		return true // released by Lead
	default:
		// The deadline passed, or the lease is gone: the key may still lead in etcd,
		// kept alive by the session. Resign it, so that a standby need not wait for
		// the lease to expire.
		e.terms.Release(ctx, token, lease, string(reason))
		return false
	}
}

// campaign runs Campaign until this session's key leads, the session is lost, or ctx is
// done. Campaign blocks in its wait and, when its context ends, resigns with the
// client's context, which has no deadline: if ctx is done and it has not returned within
// RequestTimeout, campaign abandons it (it ends when the client is closed; the caller
// must not touch el again, and ends the session so that its key expires).
func (e *Elector) campaign(ctx context.Context, s session, el *concurrency.Election) (abandoned bool, err error) {
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(s.Ctx(), func() { cancel(election.ErrLeaseLost) })
	defer stop()
	done := make(chan error, 1)
	go func() { done <- el.Campaign(cctx, e.cfg.InstanceID) }()
	probe := time.NewTicker(e.cfg.RenewInterval)
	defer probe.Stop()
wait:
	for {
		select {
		case err := <-done:
			if err != nil && context.Cause(cctx) == election.ErrLeaseLost {
				err = fmt.Errorf("%w: %v", election.ErrLeaseLost, err)
			}
			return false, err
		case <-probe.C:
			e.probe(cctx)
		case <-ctx.Done():
			break wait
		}
	}
	t := time.NewTimer(e.cfg.RequestTimeout)
	defer t.Stop()
	select {
	case err := <-done:
		if err == nil {
			err = ctx.Err() // elected as we stopped: the caller resigns
		}
		return false, err
	case <-t.C:
		return true, ctx.Err()
	}
}

// probe reads the number of the election's keys (linearizable: it needs a quorum) and
// tells Health whether etcd answered.
func (e *Elector) probe(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, e.cfg.RequestTimeout)
	defer cancel()
	_, err := e.client.Get(rctx, Prefix(e.cfg.Name), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if ctx.Err() == nil {
		e.health(err)
	}
}

// dropKey resigns and revokes what a campaign that led to no term may have left, once,
// without recording it: no term used the key.
func (e *Elector) dropKey(ctx context.Context, s session, el *concurrency.Election) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.RequestTimeout)
	defer cancel()
	_, _ = sessionLease{s: s, el: el}.Release(rctx)
}

// sessionLease is a session's lease as election.Leadership sees it.
type sessionLease struct {
	s  session
	el *concurrency.Election
}

// Renew is one keep-alive of the lease, besides the session's own.
func (l sessionLease) Renew(ctx context.Context) (bool, error) {
	_, err := l.s.Client().KeepAliveOnce(ctx, l.s.Lease())
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Release stops the session's keep-alive, resigns (deletes the key if it is still the
// term's) and revokes the lease. It returns true once etcd revoked the lease, false if
// etcd had no such lease any more (it expired, taking the key with it).
func (l sessionLease) Release(ctx context.Context) (bool, error) {
	l.s.Orphan()
	if err := l.el.Resign(ctx); err != nil {
		return false, err
	}
	_, err := l.s.Client().Revoke(ctx, l.s.Lease())
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Lost is the session's Done: the client heard no keep-alive answer for a TTL, or etcd
// answered that the lease is gone.
func (l sessionLease) Lost() <-chan struct{} { return l.s.Done() }

// sleep waits d or until ctx is done.
func (e *Elector) sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
