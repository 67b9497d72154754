// Package redisretries tells how often a go-redis client re-sends a command. The election
// and the stores refuse a client that does: a re-sent command that ran twice, or ran after
// its caller gave up, is an operation the caller cannot account for.
package redisretries

import "github.com/redis/go-redis/v9"

// Of returns the effective MaxRetries of the go-redis clients it knows (after go-redis's
// defaults: -1 became 0, 0 became 3), or 0 for others.
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
