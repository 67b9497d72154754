package election_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/internal/redisserver"
	"github.com/fenceline/fenceline/listener"
)

// A request sent while another holds a connection finds an open one that is ready: it
// needs no dial and no handshake, which on a slow link can use up its deadline before
// it is sent (the leader's commit beside its renewal, docs/known-bugs.md). go-redis
// opens its idle connections at once but sends their handshake (HELLO, CLIENT SETINFO)
// only at their first use: a pool that always hands out the connection used last
// leaves its spares unready until the moment two requests overlap.
// The listener's store client (listener.NewRedisClient) is made the same way.
func TestClientKeepsASpareConnection(t *testing.T) {
	srv := redisserver.New(t)
	for name, newClient := range map[string]func(addr string) *redis.Client{
		"election.NewClient":      election.NewClient,
		"listener.NewRedisClient": listener.NewRedisClient,
	} {
		t.Run(name, func(t *testing.T) {
			c := newClient(srv.Addr())
			defer c.Close()
			keepsASpare(t, c, srv.Addr())
		})
	}
}

func keepsASpare(t *testing.T, c *redis.Client, addr string) {
	ctx := context.Background()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for c.PoolStats().IdleConns < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d idle connections after 5 s, want 2", c.PoolStats().IdleConns)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for range 10 { // a node's requests one after the other, as between faults
		if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	direct := redis.NewClient(&redis.Options{Addr: addr})
	defer direct.Close()
	hellos := func() int64 {
		t.Helper()
		info, err := direct.Info(ctx, "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		_, after, ok := strings.Cut(info, "cmdstat_hello:calls=")
		if !ok {
			return 0
		}
		n, err := strconv.ParseInt(after[:strings.IndexByte(after, ',')], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	misses, before := c.PoolStats().Misses, hellos()
	held := make(chan error, 1)
	// BLPOP holds its connection (for a second: it counts whole seconds).
	go func() { held <- c.BLPop(ctx, time.Second, "nothing").Err() }()
	time.Sleep(100 * time.Millisecond)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	<-held
	if n := c.PoolStats().Misses - misses; n != 0 {
		t.Errorf("a request beside a held connection dialled %d new ones, want none", n)
	}
	if n := hellos() - before; n != 0 {
		t.Errorf("a request beside a held connection waited for %d handshakes (HELLO), want none", n)
	}
}
