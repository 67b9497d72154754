//go:build chaos

package election

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// This file exists only in a chaos build (go build -tags chaos): it is the seam through
// which the harness's broken variants change how an elector releases its lease, takes
// over from a vanished leader, or whether it steps down. A default build has no such
// seam (chaos_off.go): its elector always releases and takes over with the atomic
// scripts and always steps down on its deadline.

// ReleaseFunc releases the lease in place of the elector's atomic compare-and-delete
// script: it must delete lock if it holds value, publish value on channel, and report
// whether it deleted. It blocks until done or ctx is done. It is called with the
// elector's client and keys.
type ReleaseFunc func(ctx context.Context, c redis.UniversalClient, lock, value, channel string) (released bool, err error)

// TakeoverFunc takes the lease over in place of the elector's atomic takeover script
// (Config.TakeoverOnDisconnect), once a standby's poll found the presence of holder (a
// lock value) gone: it must set lock to "<instance>:<token>" with a PX of ttl, token being
// the next value of the counter key, and return token, or won false if it did not take
// the lock. It blocks until done or ctx is done.
type TakeoverFunc func(ctx context.Context, c redis.UniversalClient, lock, counter, instance string, ttl time.Duration, holder string) (token int64, won bool, err error)

// SetReleaseForChaos makes e release its lease with f instead of the atomic script. It is
// for self-validation only (a chaos build): the variant it installs is broken on purpose.
// It returns ErrRunning if e is running, and changes nothing for an elector that does not
// talk to Redis.
func SetReleaseForChaos(e *Elector, f ReleaseFunc) error {
	return e.setChaosStore(func(s *chaosStore) { s.releaseFunc = f })
}

// SetTakeoverForChaos makes e take over from a vanished leader with f instead of the
// atomic script. It is for self-validation only (a chaos build): the variant it installs
// is broken on purpose. It returns ErrRunning if e is running, and changes nothing for
// an elector that does not talk to Redis.
func SetTakeoverForChaos(e *Elector, f TakeoverFunc) error {
	return e.setChaosStore(func(s *chaosStore) { s.takeoverFunc = f })
}

// RenewFunc renews the lease in place of the elector's atomic compare-and-expire script:
// it must extend lock to a PX of ttl if it holds value, and report ok false if the lease
// is no longer value's; an error leaves the outcome unknown (the local deadline does
// not move). It blocks until done or ctx is done.
type RenewFunc func(ctx context.Context, c redis.UniversalClient, lock, value string, ttl time.Duration) (ok bool, err error)

// RenewOnForChaos runs the elector's own renewal, the atomic compare-and-extend script,
// on c: a lock taken on several servers (a chaos variant's) is extended on each as the
// reference extends its one.
func RenewOnForChaos(ctx context.Context, c redis.UniversalClient, lock, value string, ttl time.Duration) (bool, error) {
	return (&redisStore{c: c, lock: lock}).renew(ctx, value, ttl)
}

// SetRenewForChaos makes e renew its lease with f instead of the atomic script. It is for
// self-validation only (a chaos build): the variant it installs is broken on purpose. It
// returns ErrRunning if e is running, and changes nothing for an elector that does not
// talk to Redis.
func SetRenewForChaos(e *Elector, f RenewFunc) error {
	return e.setChaosStore(func(s *chaosStore) { s.renewFunc = f })
}

// setChaosStore wraps e's Redis store in a chaosStore, once, and lets set change it.
func (e *Elector) setChaosStore(set func(*chaosStore)) error {
	if e.running.Load() {
		return ErrRunning
	}
	switch s := e.store.(type) {
	case *chaosStore:
		set(s)
	case *redisStore:
		cs := &chaosStore{redisStore: s}
		set(cs)
		e.store = cs
	}
	return nil
}

// AcquireFunc acquires the lease in place of the elector's atomic acquire script: it
// must set lock to "<instance>:<token>" with a PX of ttl, token being a value of the
// counter key, and return token with won true; or return won false with the lock value
// it found (holder) and that lock's remaining TTL (pttl, < 0 if unknown). now is the
// elector's clock (Config.Clock) when the attempt began. It blocks until done or ctx is
// done.
type AcquireFunc func(ctx context.Context, c redis.UniversalClient, lock, counter, instance string, ttl time.Duration, now time.Time) (token int64, won bool, holder string, pttl time.Duration, err error)

// SetAcquireForChaos makes e acquire its lease with f instead of the atomic script (the
// takeover of Config.TakeoverOnDisconnect keeps its own). It is for self-validation only
// (a chaos build): the variant it installs is broken on purpose. It returns ErrRunning if
// e is running, and changes nothing for an elector that does not talk to Redis.
func SetAcquireForChaos(e *Elector, f AcquireFunc) error {
	clock := e.cfg.Clock
	return e.setChaosStore(func(s *chaosStore) { s.acquireFunc, s.clock = f, clock })
}

// chaosStore is the Redis store with its acquire, renewal, release or takeover replaced
// (where the func is not nil).
type chaosStore struct {
	*redisStore
	acquireFunc  AcquireFunc
	clock        Clock
	renewFunc    RenewFunc
	releaseFunc  ReleaseFunc
	takeoverFunc TakeoverFunc
}

func (s *chaosStore) acquire(ctx context.Context, instance string, ttl time.Duration) (acquireReply, error) {
	if s.acquireFunc == nil {
		return s.redisStore.acquire(ctx, instance, ttl)
	}
	token, won, holder, pttl, err := s.acquireFunc(ctx, s.c, s.lock, s.token, instance, ttl, s.clock.Now())
	switch {
	case err != nil:
		return acquireReply{}, err
	case won:
		return acquireReply{won: true, token: token}, nil
	}
	return acquireReply{holder: holder, pttl: pttl}, nil
}

func (s *chaosStore) renew(ctx context.Context, value string, ttl time.Duration) (bool, error) {
	if s.renewFunc == nil {
		return s.redisStore.renew(ctx, value, ttl)
	}
	return s.renewFunc(ctx, s.c, s.lock, value, ttl)
}

func (s *chaosStore) release(ctx context.Context, value string) (bool, error) {
	if s.releaseFunc == nil {
		return s.redisStore.release(ctx, value)
	}
	return s.releaseFunc(ctx, s.c, s.lock, value, s.channel)
}

func (s *chaosStore) takeover(ctx context.Context, instance string, ttl time.Duration, holder string) (acquireReply, error) {
	if s.takeoverFunc == nil {
		return s.redisStore.takeover(ctx, instance, ttl, holder)
	}
	token, won, err := s.takeoverFunc(ctx, s.c, s.lock, s.token, instance, ttl, holder)
	if err != nil || !won {
		return acquireReply{holder: holder, pttl: -1}, err
	}
	return acquireReply{won: true, token: token, tookOver: true}, nil
}

// chaosHooks are the broken behaviours a variant can switch on.
type chaosHooks struct {
	noStepDown bool
	// trustGrant: the first deadline and renewal are measured from the acquire's reply,
	// not its send, and never checked on arrival (SetTrustGrantForChaos).
	trustGrant bool
	// neverTell: lead's context is not cancelled when the term ends (SetNeverTellForChaos);
	// workLag: it is cancelled only workLag after (SetWorkLagForChaos).
	neverTell bool
	workLag   time.Duration
}

func (h chaosHooks) ignoreDeadline() bool { return h.noStepDown }

func (h chaosHooks) trustsGrant() bool { return h.trustGrant }

func (h chaosHooks) neverTells() bool { return h.neverTell }

// leadContext is the context lead runs with: termCtx, or with neverTell ctx (only a
// shutdown ends it), or with workLag a context cancelled workLag after termCtx. stop
// releases what it holds.
func (h chaosHooks) leadContext(ctx, termCtx context.Context) (lc context.Context, stop func()) {
	switch {
	case h.neverTell:
		return ctx, func() {}
	case h.workLag > 0:
		lc, cancel := context.WithCancelCause(context.WithoutCancel(termCtx))
		after := context.AfterFunc(termCtx, func() {
			t := time.NewTimer(h.workLag)
			defer t.Stop()
			select {
			case <-t.C:
			case <-lc.Done(): // lead returned first
			}
			cancel(context.Cause(termCtx))
		})
		return lc, func() { after(); cancel(context.Canceled) }
	}
	return termCtx, func() {}
}

// SetNoStepDownForChaos makes e ignore its local lease deadline: a term ends only when
// Redis rejects a renewal, lead returns or Run's ctx is done. It is for self-validation
// only: a leader cut off from Redis then believes it leads long after its lease expired.
// It returns ErrRunning if e is running.
func SetNoStepDownForChaos(e *Elector) error {
	return e.setHooks(func(h *chaosHooks) { h.noStepDown = true })
}

// SetTrustGrantForChaos makes e trust a won acquire whenever its reply comes: the term's
// first deadline, and its first renewal, are measured from the reply's arrival instead
// of the request's send, so a grant that arrives after the lease it granted has expired
// starts a full term (etcd
// v3.4.3's lock, which did not check its lease after waiting: etcd-io/etcd#11408). It is
// for self-validation only. It returns ErrRunning if e is running.
func SetTrustGrantForChaos(e *Elector) error {
	return e.setHooks(func(h *chaosHooks) { h.trustGrant = true })
}

// SetNeverTellForChaos makes e end its terms without telling anyone: it stops renewing,
// but lead's context is cancelled only when Run's is, and its status, metrics, log and
// Recorder learn of the step-down only when lead returns on its own (a write the fence
// rejected, say): kubernetes/kubernetes#23731, where OnStoppedLeading was never called
// and the elector still named itself leader. It waits for lead to return before it
// campaigns again. It is for self-validation only. It returns ErrRunning if e is
// running.
func SetNeverTellForChaos(e *Elector) error {
	return e.setHooks(func(h *chaosHooks) { h.neverTell = true })
}

// SetWorkLagForChaos makes lead's context end lag after the term does, as an
// application whose shutdown on lost leadership blocks in a stop hook keeps working past
// the renew deadline (cilium/cilium#42920). It is for self-validation only. It returns
// ErrRunning if e is running.
func SetWorkLagForChaos(e *Elector, lag time.Duration) error {
	return e.setHooks(func(h *chaosHooks) { h.workLag = lag })
}

func (e *Elector) setHooks(set func(*chaosHooks)) error {
	if e.running.Load() {
		return ErrRunning
	}
	set(&e.terms.chaos)
	return nil
}
