package harness

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/internal/redisserver"
	"github.com/fenceline/fenceline/nemesis"
)

// counterServer starts a Redis server and returns it, a client of it, and the token
// counter's key of the election "fenceline".
func counterServer(t *testing.T) (*redisserver.Server, *redis.Client, string) {
	srv := redisserver.New(t)
	c := election.NewClient(srv.Addr())
	t.Cleanup(func() { c.Close() })
	return srv, c, election.TokenKey("fenceline")
}

// The counter moves up to the last value of its digits, never down, and not past the
// length after which the acquire script would refuse the counter.
func TestCrossDigits(t *testing.T) {
	srv, c, key := counterServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct{ counter, want string }{
		{"", ""}, // absent: left absent
		{"0", "9"},
		{"7", "9"},
		{"9", "9"},
		{"10", "99"},
		{"99999998", "99999999"},
		{"10000000000000001", strings.Repeat("9", 17)},
		{"100000000000000000", "100000000000000000"}, // 18 digits: one move more would pass 2^63-1
		{"abc", "abc"},
	} {
		if tc.counter == "" {
			if err := c.Del(ctx, key).Err(); err != nil {
				t.Fatal(err)
			}
		} else if err := c.Set(ctx, key, tc.counter, 0).Err(); err != nil {
			t.Fatal(err)
		}
		before, after, err := crossDigits(ctx, srv.Addr(), "fenceline")
		if err != nil {
			t.Fatalf("counter %q: %v", tc.counter, err)
		}
		got, err := c.Get(ctx, key).Result()
		if tc.want == "" {
			if err == nil {
				t.Errorf("absent counter: now %q, want absent", got)
			}
		} else if err != nil || got != tc.want {
			t.Errorf("counter %q: now %q (%v), want %q", tc.counter, got, err, tc.want)
		}
		if before != tc.counter || after != tc.want {
			t.Errorf("counter %q: crossDigits = %q, %q; want %q, %q", tc.counter, before, after, tc.counter, tc.want)
		}
	}
}

func TestCrossDigitsNoRedis(t *testing.T) {
	port, err := redisserver.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, _, err := crossDigits(ctx, "127.0.0.1:"+strconv.Itoa(port), "fenceline"); err == nil || !strings.Contains(err.Error(), "token counter") {
		t.Errorf("crossDigits with no Redis: %v; want an error naming the token counter", err)
	}
}

// redisAtCluster is slowHealCluster with a Redis address: what a step that moves the
// token counter needs besides its fault.
type redisAtCluster struct {
	slowHealCluster
	addr string
}

func (c *redisAtCluster) RedisAddr() string { return c.addr }

// The runner moves the counter for a step marked CrossDigits, and for no other.
func TestStepCrossDigits(t *testing.T) {
	srv, c, key := counterServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, cross := range []bool{false, true} {
		if err := c.Set(ctx, key, "1234", 0).Err(); err != nil {
			t.Fatal(err)
		}
		r := &runner{
			cfg:    Config{Duration: 50 * time.Millisecond, Node: backend.NodeOptions{Election: "fenceline"}},
			log:    slog.New(slog.NewTextHandler(io.Discard, nil)),
			c:      &redisAtCluster{addr: srv.Addr()},
			faults: history.NewRecorder(io.Discard),
		}
		step := nemesis.Step{Kind: faults.Stop, Aim: nemesis.Aim{Node: 1}, CrossDigits: cross,
			Params: nemesis.Params{Hold: 10 * time.Millisecond, LeaseTTL: time.Second}}
		if err := r.chaos(ctx, []nemesis.Step{step}); err != nil {
			t.Fatal(err)
		}
		want := "1234"
		if cross {
			want = "9999"
		}
		if got, err := c.Get(ctx, key).Result(); err != nil || got != want {
			t.Errorf("CrossDigits %v: the counter is %q (%v), want %q", cross, got, err, want)
		}
	}
}
