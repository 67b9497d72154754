package election

import (
	"errors"
	"strings"

	"github.com/fenceline/fenceline/internal/redisopts"
	"github.com/redis/go-redis/v9"
)

// ClientOptions returns go-redis options for a client of the Redis at addr that is fit for
// recorded election steps:
//
//   - MaxRetries: -1. go-redis re-sends a command that timed out three times by default; a
//     re-sent acquire can issue a token nobody records, a re-sent renew can land after its
//     outcome was recorded. Every request is sent once; its outcome is then ok, fail or
//     unknown, never silently repeated.
//   - ContextTimeoutEnabled: true, so that the per-request deadline (RequestTimeout) bounds
//     the socket read and write; go-redis ignores context deadlines on I/O otherwise.
//   - DialTimeout 1s and a single dial attempt per request (DialerRetries: 1), so that an
//     unreachable Redis is reported within about a request, not after five dials.
//   - MinIdleConns: 2 and PoolFIFO, so that a renewal and a store's commit sent together
//     each find a connection that is open and ready. A new one costs a dial and
//     go-redis's handshake (HELLO, CLIENT SETINFO) before the request, round trips on the
//     lease's clock; on a slow link the handshake can use up the request's whole
//     deadline, and the request is never sent (measured: docs/known-bugs.md, why the
//     load race missed). go-redis opens the idle connections at once but shakes hands
//     on each only at its first use; handed out in turn (FIFO), every one is used, and
//     ready, within a few requests, where the default (the one used last first) leaves
//     the spares unready until two requests overlap.
//
// Adjust the rest (password, TLS, pool size) as needed, but keep these five.
//
// listener.NewRedisClient makes its clients with the same options.
func ClientOptions(addr string) *redis.Options { return redisopts.Options(addr) }

// NewClient returns redis.NewClient(ClientOptions(addr)). The caller closes it.
func NewClient(addr string) *redis.Client { return redis.NewClient(ClientOptions(addr)) }

// refusedUnrun reports whether err is a Redis error reply that the server gives before
// it runs a command: the command had no effect, so its outcome is a failure, not
// unknown. MOVED and ASK (another node serves the slot: a Redis Cluster failover),
// CLUSTERDOWN and TRYAGAIN (the slot is not served now), LOADING (the dataset is being
// loaded) and MASTERDOWN (a replica that lost its primary) are. A script's own errors
// are not: a script that fails halfway keeps the writes it made.
func refusedUnrun(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := re.Error()
	for _, p := range []string{"MOVED ", "ASK ", "CLUSTERDOWN ", "TRYAGAIN ", "LOADING ", "MASTERDOWN "} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}
