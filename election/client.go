package election

import (
	"time"

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
//
// Adjust the rest (password, TLS, pool size) as needed, but keep these three.
func ClientOptions(addr string) *redis.Options {
	return &redis.Options{
		Addr:                  addr,
		MaxRetries:            -1,
		ContextTimeoutEnabled: true,
		DialTimeout:           time.Second,
		DialerRetries:         1,
	}
}

// NewClient returns redis.NewClient(ClientOptions(addr)). The caller closes it.
func NewClient(addr string) *redis.Client { return redis.NewClient(ClientOptions(addr)) }
