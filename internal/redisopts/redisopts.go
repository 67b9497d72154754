// Package redisopts holds the go-redis options of a client fit for fenced, recorded
// requests, defined once for the election (election.ClientOptions, which documents why
// each is set) and the listener's store (listener.NewRedisClient).
package redisopts

import (
	"time"

	"github.com/redis/go-redis/v9"
)

// Options returns the options for a client of the Redis at addr: no re-sent command,
// context deadlines honoured on the socket, one short dial, and two idle connections
// handed out in turn.
func Options(addr string) *redis.Options {
	return &redis.Options{
		Addr:                  addr,
		MaxRetries:            -1,
		ContextTimeoutEnabled: true,
		DialTimeout:           time.Second,
		DialerRetries:         1,
		MinIdleConns:          2,
		PoolFIFO:              true,
	}
}
