package redisconn_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/internal/redisserver"
	"github.com/fenceline/fenceline/node/redisconn"
)

var script = redis.NewScript(`return redis.call('INCR', KEYS[1])`)

// newClient is redisconn.NewClient, closed when the test ends.
func newClient(tb testing.TB, base *redis.Options, target redisconn.Target) redis.UniversalClient {
	tb.Helper()
	c, err := redisconn.NewClient(base, target)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// With Wait, a script counts only once its writes are on the replicas: while the only
// replica is stopped, the script's write happens on the primary and its caller gets
// ErrWaitMissed, never a success.
func TestWaitForReplicas(t *testing.T) {
	primary := redisserver.New(t)
	replica := redisserver.NewWith(t, redisserver.Options{Config: "replicaof " + strings.Replace(primary.Addr(), ":", " ", 1) + "\n"})
	ctx := context.Background()
	c := newClient(t, election.ClientOptions(primary.Addr()), redisconn.Target{Wait: 1, WaitTimeout: 200 * time.Millisecond})
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := script.Run(ctx, c, []string{"k"}).Int64()
		if err == nil {
			break
		}
		if !errors.Is(err, election.ErrWaitMissed) || time.Now().After(deadline) {
			t.Fatalf("script with a replica attached: %v", err)
		}
		time.Sleep(50 * time.Millisecond) // the replica is still syncing
	}
	if err := replica.Pause(); err != nil {
		t.Fatal(err)
	}
	defer replica.Resume()
	_, err := script.Run(ctx, c, []string{"k"}).Int64()
	if !errors.Is(err, election.ErrWaitMissed) {
		t.Fatalf("script with the replica stopped: %v, want ErrWaitMissed", err)
	}
	// The write did happen on the primary: the outcome is unknown, not failed.
	plain := redis.NewClient(election.ClientOptions(primary.Addr()))
	defer plain.Close()
	if n, err := plain.Get(ctx, "k").Int64(); err != nil || n < 2 {
		t.Fatalf("k = %d, %v: the unacknowledged write is not on the primary", n, err)
	}
	// Plain commands are not held up.
	if err := c.Set(ctx, "x", 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
}

// The election refuses a Sentinel client that re-sends commands, as it refuses a plain
// one, and accepts the one NewClient builds on election.ClientOptions.
func TestFailoverClientRetries(t *testing.T) {
	t.Parallel()
	target := redisconn.Target{Sentinels: []string{"127.0.0.1:1"}, Master: "m"}
	retrying := *election.ClientOptions("127.0.0.1:1")
	retrying.MaxRetries = 0 // go-redis's default: 3 retries
	c := newClient(t, &retrying, target)
	if _, err := election.New(c, election.Config{InstanceID: "a"}); !errors.Is(err, election.ErrRetryingClient) {
		t.Fatalf("a retrying FailoverClient: %v, want ErrRetryingClient", err)
	}
	ok := newClient(t, election.ClientOptions("127.0.0.1:1"), target)
	if _, err := election.New(ok, election.Config{InstanceID: "a"}); err != nil {
		t.Fatalf("NewClient on election.ClientOptions: %v", err)
	}
}

// The cluster client NewClient builds never re-sends: the election accepts it, and
// refuses one with go-redis's default redirects (which re-send after an EOF or a
// timeout, not only after MOVED).
func TestClusterClientRetries(t *testing.T) {
	t.Parallel()
	c := newClient(t, election.ClientOptions("127.0.0.1:1"), redisconn.Target{Cluster: []string{"127.0.0.1:1"}})
	if _, ok := c.(*redis.ClusterClient); !ok {
		t.Fatalf("NewClient with Cluster: %T, want *redis.ClusterClient", c)
	}
	if _, err := election.New(c, election.Config{InstanceID: "a"}); err != nil {
		t.Fatalf("NewClient's cluster client: %v", err)
	}
	redirecting := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}, MaxRetries: -1})
	defer redirecting.Close()
	if _, err := election.New(redirecting, election.Config{InstanceID: "a"}); !errors.Is(err, election.ErrRetryingClient) {
		t.Fatalf("a cluster client with the default redirects: %v, want ErrRetryingClient", err)
	}
}

func TestTargetValidate(t *testing.T) {
	for _, tc := range []struct {
		t    redisconn.Target
		want string
	}{
		{redisconn.Target{Sentinels: []string{"127.0.0.1:26379"}}, "needs --redis-master"},
		{redisconn.Target{Wait: 1}, "needs --redis-wait-timeout"},
		{redisconn.Target{Wait: -1}, "want >= 0"},
		{redisconn.Target{Wait: 1, WaitTimeout: 1500 * time.Microsecond}, "want whole milliseconds"},
		{redisconn.Target{AddrMap: map[string]string{"a": "127.0.0.1:1"}}, "want host:port=host:port"},
		{redisconn.Target{Sentinels: []string{"127.0.0.1:26379"}, Master: "m", Cluster: []string{"127.0.0.1:7000"}}, "exclude each other"},
		{redisconn.Target{Cluster: []string{"7000"}}, "--redis-cluster"},
	} {
		if err := tc.t.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.t, err, tc.want)
		}
	}
}

// The Sentinel and cluster clients keep election.ClientOptions' pool: ready spare
// connections (MinIdleConns, handed out in turn), without which a commit beside a
// renewal can spend its deadline on a handshake.
func TestClientsKeepThePool(t *testing.T) {
	t.Parallel()
	base := election.ClientOptions("127.0.0.1:1")
	fo, ok := newClient(t, base, redisconn.Target{Sentinels: []string{"127.0.0.1:1"}, Master: "m"}).(*redis.Client)
	if !ok {
		t.Fatal("NewClient with Sentinels is not a *redis.Client")
	}
	if o := fo.Options(); o.MinIdleConns != base.MinIdleConns || o.PoolFIFO != base.PoolFIFO {
		t.Errorf("Sentinel client: MinIdleConns %d, PoolFIFO %v; want %d, %v", o.MinIdleConns, o.PoolFIFO, base.MinIdleConns, base.PoolFIFO)
	}
	cl := newClient(t, base, redisconn.Target{Cluster: []string{"127.0.0.1:1"}}).(*redis.ClusterClient)
	if o := cl.Options(); o.MinIdleConns != base.MinIdleConns || o.PoolFIFO != base.PoolFIFO {
		t.Errorf("cluster client: MinIdleConns %d, PoolFIFO %v; want %d, %v", o.MinIdleConns, o.PoolFIFO, base.MinIdleConns, base.PoolFIFO)
	}
}
