// Package redisretries tells how often a go-redis client re-sends a command. The election
// and the stores refuse a client that does: a re-sent command that ran twice, or ran after
// its caller gave up, is an operation the caller cannot account for.
package redisretries

import (
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Of returns how many times the go-redis clients it knows may re-send a command (after
// go-redis's defaults: MaxRetries -1 became 0, 0 became 3), or 0 for others.
func Of(c redis.UniversalClient) int {
	switch c := c.(type) {
	case *redis.Client:
		return c.Options().MaxRetries
	case *redis.ClusterClient:
		// A redirect is a re-send too: after MOVED, but also after an EOF or a timeout.
		return max(c.Options().MaxRetries, c.Options().MaxRedirects)
	case *redis.Ring:
		return c.Options().MaxRetries
	}
	return 0
}

// Refusal is the reason a client of n = Of(c) > 0 re-sends is refused, with how to create
// one that does not.
func Refusal(c redis.UniversalClient, n int) string {
	if cc, ok := c.(*redis.ClusterClient); ok {
		o := cc.Options()
		return fmt.Sprintf("(MaxRetries %d, MaxRedirects %d after defaults); create it with MaxRetries: -1 and MaxRedirects: -1", o.MaxRetries, o.MaxRedirects)
	}
	return fmt.Sprintf("(MaxRetries %d after defaults); create it with MaxRetries: -1", n)
}
