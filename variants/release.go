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

// Elector changes the elector the way the named variant needs, through the seams the
// election package offers in chaos builds: NonAtomicRelease replaces the atomic release
// script with GET, a comparison in the client, then DEL and PUBLISH in separate round
// trips; UncheckedRelease with a plain DEL and PUBLISH; NoStepDown makes the elector
// ignore its local deadline; NonAtomicTakeover replaces the atomic takeover script with
// an INCR and a plain SET; the zoo's variants as zoo.go says, RedlockMajority locking
// on e's Redis and redlockServers as redlock.go says. redlockServers is for
// RedlockMajority only. e must not be running.
func Elector(name string, e *election.Elector, redlockServers []redis.UniversalClient) error {
	switch {
	case name == RedlockMajority:
		return newRedlock(e, redlockServers)
	case len(redlockServers) > 0:
		return fmt.Errorf("%w: only %s locks on servers of its own, not %s", ErrRedlockServers, RedlockMajority, name)
	}
	if ok, err := zooElector(name, e); ok {
		return err
	}
	switch name {
	case NonAtomicRelease:
		return election.SetReleaseForChaos(e, nonAtomicRelease)
	case UncheckedRelease:
		return election.SetReleaseForChaos(e, uncheckedRelease)
	case NoStepDown:
		return election.SetNoStepDownForChaos(e)
	case NonAtomicTakeover:
		return election.SetTakeoverForChaos(e, nonAtomicTakeover)
	}
	return nil
}

// uncheckedRelease deletes the lock whoever holds it: a release sent after the lease
// expired deletes a newer leader's lock, and a third node takes the lease while that
// leader still believes it leads.
func uncheckedRelease(ctx context.Context, c redis.UniversalClient, lock, value, channel string) (bool, error) {
	n, err := c.Del(ctx, lock).Result()
	if err != nil {
		return false, err
	}
	if err := c.Publish(ctx, channel, value).Err(); err != nil {
		return false, err
	}
	return n == 1, nil
}

// stepTimeout bounds each round trip of the non-atomic release on its own, as a client
// that sets a deadline per command does.
const stepTimeout = time.Second

// nonAtomicRelease is a check-then-act release: between the GET and the DEL the lock
// may expire and be taken by a newer leader, whose lock the DEL then deletes.
func nonAtomicRelease(ctx context.Context, c redis.UniversalClient, lock, value, channel string) (bool, error) {
	got, err := c.Get(ctx, lock).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return false, err
	}
	if got != value {
		return false, nil
	}
	// The window: the lock may expire and be taken by a newer leader right here.
	if err := hit("election/release-between-steps"); err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stepTimeout)
	defer cancel()
	if err := c.Del(ctx, lock).Err(); err != nil {
		return false, err
	}
	if err := c.Publish(ctx, channel, value).Err(); err != nil {
		return false, err
	}
	return true, nil
}

// nonAtomicTakeover takes the lock from a leader whose presence the standby's poll found
// gone, trusting that poll: INCR of the counter, then a plain SET of the lock, in two
// round trips. It does not check again, in the same step, that the lock still holds the
// vanished leader's value: a standby that saw the same crash and took over a moment
// earlier loses its fresh lease to this one while it believes it leads. (The reference
// does the check and the SET XX in one script, so only the first standby wins.)
func nonAtomicTakeover(ctx context.Context, c redis.UniversalClient, lock, counter, instance string, ttl time.Duration, _ string) (int64, bool, error) {
	token, err := c.Incr(ctx, counter).Result()
	if err != nil {
		return 0, false, err
	}
	if err := c.Set(ctx, lock, election.LockValue(instance, token), ttl).Err(); err != nil {
		return 0, false, err
	}
	return token, true, nil
}
