package election

import (
	"errors"
	"fmt"
	"testing"
)

// replyError is a Redis error reply, as go-redis returns it (redis.Error).
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

// Only the replies a server gives before it runs a command count as "not run"; a
// script's own error or a transport error may follow effects.
func TestRefusedUnrun(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{replyError("MOVED 1999 127.0.0.1:7001"), true},
		{replyError("ASK 1999 127.0.0.1:7001"), true},
		{replyError("CLUSTERDOWN The cluster is down"), true},
		{replyError("TRYAGAIN Multiple keys request during rehashing of slot"), true},
		{replyError("LOADING Redis is loading the dataset in memory"), true},
		{replyError("MASTERDOWN Link with MASTER is down"), true},
		{fmt.Errorf("wrapped: %w", replyError("MOVED 1 a:1")), true},
		{replyError("ERR Error running script (call to f_x): @user_script:3: oops"), false},
		{replyError("READONLY You can't write against a read only replica."), false},
		{replyError("MOVEDX"), false},
		{errors.New("MOVED 1999 127.0.0.1:7001"), false}, // not a reply: text alone proves nothing
		{errConnReset, false},
		{nil, false},
	} {
		if got := refusedUnrun(tc.err); got != tc.want {
			t.Errorf("refusedUnrun(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
