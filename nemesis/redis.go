package nemesis

import (
	"context"
)

// redisRestartFault kills Redis with SIGKILL and starts it again at heal. With the
// append-only file on (redis-restart) no acknowledged write is lost, the token counter
// included. redis-restart-volatile is the same fault on a cluster whose Redis runs
// without persistence: the restart empties it and fencing tokens repeat. The runner
// starts Redis without persistence when that kind is scheduled.
type redisRestartFault struct{ kind string }

func (f redisRestartFault) Kind() string   { return f.kind }
func (redisRestartFault) AimsAtNode() bool { return false }

func (redisRestartFault) Inject(ctx context.Context, c Backend, _ string, _ Params) (string, error) {
	return "SIGKILL redis-server", c.KillRedis(ctx)
}

func (redisRestartFault) Heal(ctx context.Context, c Backend, _ string) (string, error) {
	return "redis-server started", c.StartRedis(ctx)
}
