package election

import (
	"context"
	"testing"
	"time"

	"github.com/fenceline/fenceline/internal/redisserver"
)

// A token counter that is not a decimal integer is refused before anything is written:
// the lock stays free and the counter unchanged.
func TestAcquireRefusesCorruptCounter(t *testing.T) {
	srv := redisserver.New(t)
	c := NewClient(srv.Addr())
	defer c.Close()
	ctx := context.Background()
	s := newRedisStore(c, "", time.Second, false)
	for _, bad := range []string{"nan", "inf", "2.0e0", "0x10", "-1", " 1", "007", "9223372036854775807", "12345678901234567890"} {
		if err := c.Set(ctx, TokenKey(""), bad, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if r, err := s.acquire(ctx, "n1", time.Second); err == nil {
			t.Errorf("counter %q: acquire = %+v, want an error", bad, r)
		}
		if n, _ := c.Exists(ctx, LockKey("")).Result(); n != 0 {
			t.Errorf("counter %q: the lock was set", bad)
			c.Del(ctx, LockKey(""))
		}
		if got, _ := c.Get(ctx, TokenKey("")).Result(); got != bad {
			t.Errorf("counter %q became %q", bad, got)
		}
	}
	// Large counters stay exact, in the token and in the lock value, across 2^53 (where
	// doubles stop being exact) and up to 2^63-1.
	for _, tc := range []struct {
		counter string
		token   int64
	}{{"0", 1}, {"9", 10}, {"99999999999999", 100000000000000}, {"9007199254740990", 1<<53 - 1},
		{"9007199254740992", 1<<53 + 1}, {"2147483647", 1 << 31}, {"9223372036854775806", 1<<63 - 1}} {
		c.Del(ctx, LockKey(""))
		if err := c.Set(ctx, TokenKey(""), tc.counter, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if r, err := s.acquire(ctx, "n1", time.Second); err != nil || !r.won || r.token != tc.token {
			t.Fatalf("counter %s: acquire = %+v, %v; want token %d", tc.counter, r, err, tc.token)
		}
		if v, _ := c.Get(ctx, LockKey("")).Result(); v != LockValue("n1", tc.token) {
			t.Fatalf("counter %s: lock value %q, want %q", tc.counter, v, LockValue("n1", tc.token))
		}
	}
}
