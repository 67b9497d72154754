package election

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrWaitMissed is wrapped by the error of a script whose writes reached fewer replicas
// than AddWait asked for within its timeout. The script did run on the primary: its
// outcome is unknown, never a success (the elector records such a step as unknown).
var ErrWaitMissed = errors.New("election: write not acknowledged by enough replicas")

// AddWait makes every script that c sends (EVAL and EVALSHA: the election's acquire,
// renewal and release, a fenced store's commit) go out in one pipeline with
// WAIT replicas timeout after it, on the same connection, so that it counts only once its
// writes are on that many replicas. A script whose WAIT counts fewer, or fails, returns
// an error wrapping ErrWaitMissed. Other commands are sent as they are. It is the
// mitigation of an asynchronous failover that loses acknowledged writes (the token
// counter, a lease, a fenced commit); docs/topologies.md measures what it buys.
//
// It is an option of the client rather than of Config because the WAIT must follow
// each fenced write on the connection that made it, the store's as well as the
// election's, and they share the client: one call covers both, and a store needs no
// election import to honour it. The elector treats a missed WAIT as it treats any lost
// reply: an acquire's outcome is unknown (resolved at the next attempt), a renewal does
// not move the local lease deadline.
//
// c must be a *redis.Client (a failover client is one), a *redis.ClusterClient or a
// *redis.Ring; on the last two the hook is set on each node's client as it is made, so
// call AddWait before c's first command. replicas must be positive, and timeout positive
// and a whole number of milliseconds; leave room for it within RequestTimeout. Errors
// wrap ErrInvalidConfig.
func AddWait(c redis.UniversalClient, replicas int, timeout time.Duration) error {
	switch {
	case replicas <= 0:
		return fmt.Errorf("%w: AddWait: replicas %d: want > 0", ErrInvalidConfig, replicas)
	case timeout < time.Millisecond || timeout%time.Millisecond != 0:
		// WAIT's timeout is in milliseconds, and WAIT n 0 blocks for ever.
		return fmt.Errorf("%w: AddWait: timeout %v: want a positive whole number of milliseconds", ErrInvalidConfig, timeout)
	}
	hook := func(n *redis.Client) { n.AddHook(waitHook{c: n, n: replicas, timeout: timeout}) }
	switch c := c.(type) {
	case *redis.Client:
		hook(c)
	case *redis.ClusterClient:
		// WAIT counts the replicas of the connection's primary: it must follow the
		// script on the node that ran it.
		c.OnNewNode(hook)
	case *redis.Ring:
		c.OnNewNode(hook)
	default:
		return fmt.Errorf("%w: AddWait: client %T: want *redis.Client, *redis.ClusterClient or *redis.Ring", ErrInvalidConfig, c)
	}
	return nil
}

// waitHook runs every script in a pipeline with WAIT after it. WAIT counts the replicas
// that acknowledged the connection's last write, so it must follow the script on the
// same connection; a script that wrote nothing (an acquire that found the lock held)
// leaves nothing to wait for and starts no term.
type waitHook struct {
	c       *redis.Client
	n       int
	timeout time.Duration
}

func (waitHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (waitHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h waitHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if n := strings.ToLower(cmd.Name()); n != "evalsha" && n != "eval" {
			return next(ctx, cmd)
		}
		// A pipeline does not pass through ProcessHook again.
		var wait *redis.Cmd
		_, _ = h.c.Pipelined(ctx, func(p redis.Pipeliner) error {
			_ = p.Process(ctx, cmd)
			wait = p.Do(ctx, "wait", h.n, h.timeout.Milliseconds())
			return nil
		})
		if cmd.Err() != nil {
			return cmd.Err()
		}
		got, err := wait.Int64()
		switch {
		case err != nil:
			err = fmt.Errorf("%w: WAIT: %v", ErrWaitMissed, err)
		case got < int64(h.n):
			err = fmt.Errorf("%w: %d of %d replicas within %v", ErrWaitMissed, got, h.n, h.timeout)
		}
		if err != nil {
			cmd.SetErr(err)
		}
		return err
	}
}
