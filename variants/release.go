package variants

import (
	"context"
	"strings"

	"github.com/redis/go-redis/v9"
)

// WrapClient changes the Redis client of the elector the way the named variant needs.
// Only NonAtomicRelease changes anything: it replaces the elector's atomic release script
// with GET, a comparison in the client, then DEL and PUBLISH, in separate round trips.
// The election package itself stays the reference; the break is in the wire traffic.
func WrapClient(name string, c *redis.Client) {
	if name == NonAtomicRelease {
		c.AddHook(nonAtomicRelease{})
	}
}

type nonAtomicRelease struct{}

func (nonAtomicRelease) DialHook(next redis.DialHook) redis.DialHook { return next }

func (nonAtomicRelease) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (nonAtomicRelease) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		lock, value, channel, ok := releaseArgs(cmd)
		if !ok {
			return next(ctx, cmd)
		}
		res := cmd.(*redis.Cmd)
		get := redis.NewStringCmd(ctx, "get", lock)
		if err := next(ctx, get); err != nil && err != redis.Nil {
			res.SetErr(err)
			return err
		}
		if get.Val() != value {
			res.SetVal(int64(0))
			return nil
		}
		// The window: the lock may expire and be taken by a newer leader right here.
		del := redis.NewIntCmd(ctx, "del", lock)
		if err := next(ctx, del); err != nil {
			res.SetErr(err)
			return err
		}
		pub := redis.NewIntCmd(ctx, "publish", channel, value)
		if err := next(ctx, pub); err != nil {
			res.SetErr(err)
			return err
		}
		res.SetVal(int64(1))
		return nil
	}
}

// releaseArgs recognizes the elector's release script call:
// EVALSHA|EVAL <script> 1 <{name}:lock> <value> <{name}:released>.
func releaseArgs(cmd redis.Cmder) (lock, value, channel string, ok bool) {
	a := cmd.Args()
	if len(a) != 6 {
		return
	}
	if n := strings.ToLower(cmd.Name()); n != "evalsha" && n != "eval" {
		return
	}
	lock, ok1 := a[3].(string)
	value, ok2 := a[4].(string)
	channel, ok3 := a[5].(string)
	if !ok1 || !ok2 || !ok3 || !strings.HasSuffix(lock, ":lock") || !strings.HasSuffix(channel, ":released") {
		return "", "", "", false
	}
	return lock, value, channel, true
}

var _ redis.Hook = nonAtomicRelease{}
