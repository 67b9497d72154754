package targets

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/election"
)

// Lock is one lease as a lock library holds it. Elector calls it from one goroutine at a
// time.
type Lock interface {
	// Acquire takes the lock, retrying the way the library does until it succeeds or ctx
	// is done. An error wrapping ErrHeld means Redis answered and the lock is someone
	// else's; any other error leaves the outcome unknown.
	Acquire(ctx context.Context) error
	// Extend sets the lock's expiry to the lease TTL again if the lock is still ours, and
	// returns an error wrapping ErrNotHeld if it is not.
	Extend(ctx context.Context) error
	// Release deletes the lock if it is still ours, and returns an error wrapping
	// ErrNotHeld if it is not.
	Release(ctx context.Context) error
}

// Errors of a Lock.
var (
	ErrHeld    = errors.New("targets: lock held by another instance")
	ErrNotHeld = errors.New("targets: lock not held")
)

// LockKey is the key of a library's lock in election name: next to the election's own
// keys (same hash tag), never the reference's lock key, so that `fenceline status` does
// not read a library's random value as a holder.
func LockKey(name, target string) string { return election.KeyPrefix(name) + target }

// NewRedsync returns the lock of redsync's README: a mutex with expiry ttl on one Redis
// (one pool, so the quorum is 1), with redsync's default retries (32 tries, a random 50 to
// 250 ms apart).
func NewRedsync(client redis.UniversalClient, name string, ttl time.Duration) Lock {
	rs := redsync.New(goredis.NewPool(client))
	return &redsyncLock{m: rs.NewMutex(LockKey(name, Redsync), redsync.WithExpiry(ttl))}
}

type redsyncLock struct{ m *redsync.Mutex }

func (l *redsyncLock) Acquire(ctx context.Context) error {
	err := l.m.LockContext(ctx)
	// ErrFailed: every try was refused (or ctx ended between tries). ErrTaken: the last
	// try was refused. Either way no try is left holding the lock: redsync deletes its
	// value after each try that did not win.
	if errors.Is(err, redsync.ErrFailed) || isTaken(err) {
		return fmt.Errorf("%w: %v", ErrHeld, err)
	}
	return err
}

func (l *redsyncLock) Extend(ctx context.Context) error {
	ok, err := l.m.ExtendContext(ctx)
	switch {
	case ok:
		return nil
	case errors.Is(err, redsync.ErrExtendFailed) || isTaken(err):
		// ErrExtendFailed also means the extension came back too late to count.
		return fmt.Errorf("%w: %v", ErrNotHeld, err)
	case err == nil:
		return ErrNotHeld
	}
	return err
}

func (l *redsyncLock) Release(ctx context.Context) error {
	ok, err := l.m.UnlockContext(ctx)
	switch {
	case ok:
		return nil
	case errors.Is(err, redsync.ErrLockAlreadyExpired) || isTaken(err) || err == nil:
		return fmt.Errorf("%w: %v", ErrNotHeld, err)
	}
	return err
}

// isTaken reports whether err says that Redis answered and the key was not ours.
func isTaken(err error) bool {
	var taken *redsync.ErrTaken
	var nodeTaken *redsync.ErrNodeTaken
	return errors.As(err, &taken) || errors.As(err, &nodeTaken)
}

// RedislockBackoff is redislock's retry delay: the LinearBackoff of its README.
const RedislockBackoff = 100 * time.Millisecond

// NewRedislock returns the lock of redislock's README: Obtain with ttl and a linear
// backoff of RedislockBackoff, Refresh, Release.
func NewRedislock(client redis.UniversalClient, name string, ttl time.Duration) Lock {
	return &redisLock{c: redislock.New(client), key: LockKey(name, Redislock), ttl: ttl}
}

type redisLock struct {
	c    *redislock.Client
	key  string
	ttl  time.Duration
	lock *redislock.Lock // the lock held; nil if none
}

func (l *redisLock) Acquire(ctx context.Context) error {
	// Obtain retries until ctx is done and then returns ctx's error, which cannot be told
	// apart from a request cut short. A bounded number of retries, ending well before
	// ctx's deadline (three backoffs of margin for the requests themselves), ends with
	// ErrNotObtained instead: certainly not ours.
	retries := 0
	if d, ok := ctx.Deadline(); ok {
		retries = max(0, int((time.Until(d)-3*RedislockBackoff)/RedislockBackoff))
	}
	lock, err := l.c.Obtain(ctx, l.key, l.ttl, &redislock.Options{
		RetryStrategy: redislock.LimitRetry(redislock.LinearBackoff(RedislockBackoff), retries),
	})
	if errors.Is(err, redislock.ErrNotObtained) {
		return fmt.Errorf("%w: %v", ErrHeld, err)
	}
	if err != nil {
		return err
	}
	l.lock = lock
	return nil
}

func (l *redisLock) Extend(ctx context.Context) error {
	if l.lock == nil {
		return ErrNotHeld
	}
	err := l.lock.Refresh(ctx, l.ttl, nil)
	if errors.Is(err, redislock.ErrNotObtained) {
		return fmt.Errorf("%w: %v", ErrNotHeld, err)
	}
	return err
}

func (l *redisLock) Release(ctx context.Context) error {
	if l.lock == nil {
		return ErrNotHeld
	}
	err := l.lock.Release(ctx)
	l.lock = nil // whatever the answer, this value is never used again
	if errors.Is(err, redislock.ErrLockNotHeld) {
		return fmt.Errorf("%w: %v", ErrNotHeld, err)
	}
	return err
}
