//go:build chaos

package election

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// This file exists only in a chaos build (go build -tags chaos): it is the seam through
// which the harness's broken variants change how an elector releases its lease or
// whether it steps down. A default build has no such seam (chaos_off.go): its elector
// always releases with the atomic script and always steps down on its deadline.

// ReleaseFunc releases the lease in place of the elector's atomic compare-and-delete
// script: it must delete lock if it holds value, publish value on channel, and report
// whether it deleted. It blocks until done or ctx is done. It is called with the
// elector's client and keys.
type ReleaseFunc func(ctx context.Context, c redis.UniversalClient, lock, value, channel string) (released bool, err error)

// SetReleaseForChaos makes e release its lease with f instead of the atomic script. It is
// for self-validation only (a chaos build): the variant it installs is broken on purpose.
// It returns ErrRunning if e is running, and changes nothing for an elector that does not
// talk to Redis.
func SetReleaseForChaos(e *Elector, f ReleaseFunc) error {
	if e.running.Load() {
		return ErrRunning
	}
	if rs, ok := e.store.(*redisStore); ok && f != nil {
		e.store = chaosReleaseStore{redisStore: rs, releaseFunc: f}
	}
	return nil
}

// chaosReleaseStore is the Redis store with its release replaced.
type chaosReleaseStore struct {
	*redisStore
	releaseFunc ReleaseFunc
}

func (s chaosReleaseStore) release(ctx context.Context, value string) (bool, error) {
	return s.releaseFunc(ctx, s.c, s.lock, value, s.channel)
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
