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

// chaosStore is the Redis store with its release or takeover replaced (where the func
// is not nil).
type chaosStore struct {
	*redisStore
	releaseFunc  ReleaseFunc
	takeoverFunc TakeoverFunc
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
}

func (h chaosHooks) ignoreDeadline() bool { return h.noStepDown }

// SetNoStepDownForChaos makes e ignore its local lease deadline: a term ends only when
// Redis rejects a renewal, lead returns or Run's ctx is done. It is for self-validation
// only: a leader cut off from Redis then believes it leads long after its lease expired.
// It returns ErrRunning if e is running.
func SetNoStepDownForChaos(e *Elector) error {
	if e.running.Load() {
		return ErrRunning
	}
	e.terms.chaos.noStepDown = true
	return nil
}
