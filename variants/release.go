//go:build chaos

package variants

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/election"
)

// Elector changes the elector the way the named variant needs, through the seams the
// election package offers in chaos builds: NonAtomicRelease replaces the atomic release
// script with GET, a comparison in the client, then DEL and PUBLISH in separate round
// trips; UncheckedRelease with a plain DEL and PUBLISH; NoStepDown makes the elector
// ignore its local deadline. e must not be running.
func Elector(name string, e *election.Elector) error {
	switch name {
	case NonAtomicRelease:
		return election.SetReleaseForChaos(e, nonAtomicRelease)
	case UncheckedRelease:
		return election.SetReleaseForChaos(e, uncheckedRelease)
	case NoStepDown:
		return election.SetNoStepDownForChaos(e)
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
