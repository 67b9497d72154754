//go:build chaos

package variants

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/election"
)

// RedlockMajority is the zoo's Redlock: the lock taken on a majority of independent Redis
// servers, some of which keep no append-only file (antirez and Kleppmann's debate).
const RedlockMajority = "redlock-majority"

// RedlockServers is how many Redis servers a RedlockMajority run adds to the run's own:
// three in all, a majority of two.
const RedlockServers = 2

// ErrRedlockServers is returned (wrapped) when RedlockMajority is given no servers of its
// own, or another variant is given some.
var ErrRedlockServers = errors.New("variants: redlock servers")

// redlock locks on a majority of independent Redis servers: the run's Redis (which also
// holds the token counter, the release channel and the store) and the servers of
// --redlock-servers, which keep no append-only file (RedlockServers). It follows the
// Redlock algorithm (redis.io's distributed-lock pattern): SET NX PX of the same value on
// every server, the lock won when a majority took it within the lease; otherwise it is
// undone everywhere. The lease is extended the way Redlock clients extend it (a
// compare-and-extend on every server, kept while a majority extends) and released by a
// compare-and-delete on every server. Redlock has no fencing token: the token is minted
// from the run's counter before each attempt, so the store's fence still holds.
//
// A server restarted without persistence forgets the locks it held: a leader that holds
// just a majority (cut off from one server when that server's lock ran out, say) and
// loses one of them to a restart shares its majority with whoever locks the restarted
// server and the free one, until its next extension fails. antirez's answer is a
// restart delayed by a lease; the servers here restart at once.
type redlock struct {
	servers []redis.UniversalClient // the servers of --redlock-servers; the run's Redis is the elector's client
}

// newRedlock installs the Redlock on e, locking on the elector's client and servers.
func newRedlock(e *election.Elector, servers []redis.UniversalClient) error {
	if len(servers) == 0 {
		return fmt.Errorf("%w: %s needs --redlock-servers (the harness gives it %d)", ErrRedlockServers, RedlockMajority, RedlockServers)
	}
	r := &redlock{servers: servers}
	if err := election.SetAcquireForChaos(e, r.acquire); err != nil {
		return err
	}
	if err := election.SetRenewForChaos(e, r.renew); err != nil {
		return err
	}
	return election.SetReleaseForChaos(e, r.release)
}

// KEYS: lock. ARGV: value. 1 if deleted, 0 if the lock is not value's (the
// elector's own release also publishes a notice, which Redlock sends once, on the
// run's Redis).
var redlockUnlock = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`)

// all runs f on the elector's client c and every server at once; it returns how many
// answered yes, and the errors of those that did not answer.
func (r *redlock) all(ctx context.Context, c redis.UniversalClient, f func(redis.UniversalClient) (bool, error)) (yes int, errs []error) {
	type answer struct {
		ok  bool
		err error
	}
	clients := append([]redis.UniversalClient{c}, r.servers...)
	answers := make(chan answer, len(clients))
	for _, s := range clients {
		go func() {
			ok, err := f(s)
			answers <- answer{ok, err}
		}()
	}
	for range clients {
		a := <-answers
		switch {
		case a.err != nil:
			errs = append(errs, a.err)
		case a.ok:
			yes++
		}
	}
	return yes, errs
}

func (r *redlock) majority() int { return (len(r.servers)+1)/2 + 1 }

func (r *redlock) acquire(ctx context.Context, c redis.UniversalClient, lock, counter, instance string, ttl time.Duration, _ time.Time) (int64, bool, string, time.Duration, error) {
	token, err := c.Incr(ctx, counter).Result()
	if err != nil {
		return 0, false, "", 0, err
	}
	value := election.LockValue(instance, token)
	yes, _ := r.all(ctx, c, func(s redis.UniversalClient) (bool, error) {
		return s.SetNX(ctx, lock, value, ttl).Result()
	})
	// The elector measures the lease from the attempt's send and steps down before it
	// ends, which is Redlock's validity check.
	if yes >= r.majority() {
		return token, true, "", 0, nil
	}
	r.unlock(context.WithoutCancel(ctx), c, lock, value)
	holder, err := c.Get(ctx, lock).Result()
	if errors.Is(err, redis.Nil) {
		return 0, false, "", -1, nil // no majority, none held here: the next attempt follows
	}
	if err != nil {
		return 0, false, "", 0, err
	}
	pttl, err := c.PTTL(ctx, lock).Result()
	return 0, false, holder, pttl, err
}

// renew extends the lock on every server: kept while a majority extends it, lost once a
// majority answered that it is not value's, unknown otherwise.
func (r *redlock) renew(ctx context.Context, c redis.UniversalClient, lock, value string, ttl time.Duration) (bool, error) {
	yes, errs := r.all(ctx, c, func(s redis.UniversalClient) (bool, error) {
		return election.RenewOnForChaos(ctx, s, lock, value, ttl)
	})
	switch {
	case yes >= r.majority():
		return true, nil
	case yes+len(errs) >= r.majority():
		return false, fmt.Errorf("redlock: extended on %d servers, %d did not answer: %w", yes, len(errs), errors.Join(errs...))
	}
	return false, nil
}

func (r *redlock) release(ctx context.Context, c redis.UniversalClient, lock, value, channel string) (bool, error) {
	deleted, err := r.unlock(ctx, c, lock, value)
	if err != nil {
		return false, err
	}
	if err := c.Publish(ctx, channel, value).Err(); err != nil {
		return false, err
	}
	return deleted > 0, nil
}

// unlock deletes the lock wherever it is value's; an error only if no server answered.
func (r *redlock) unlock(ctx context.Context, c redis.UniversalClient, lock, value string) (int, error) {
	yes, errs := r.all(ctx, c, func(s redis.UniversalClient) (bool, error) {
		n, err := redlockUnlock.Run(ctx, s, []string{lock}, value).Int64()
		return n == 1, err
	})
	if len(errs) == len(r.servers)+1 {
		return 0, errors.Join(errs...)
	}
	return yes, nil
}
