package election_test

import (
	"context"
	"testing"
	"time"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/internal/redisserver"
)

// A request sent while another holds a connection finds an open one: it needs no dial
// and no handshake, which on a slow link can use up its deadline before it is sent (the
// leader's commit beside its renewal, docs/known-bugs.md).
func TestClientKeepsASpareConnection(t *testing.T) {
	ctx := context.Background()
	c := election.NewClient(redisserver.New(t).Addr())
	defer c.Close()
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
	misses := c.PoolStats().Misses
	held := make(chan error, 1)
	go func() { held <- c.BLPop(ctx, 500*time.Millisecond, "nothing").Err() }()
	time.Sleep(100 * time.Millisecond) // BLPOP holds its connection
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	<-held
	if n := c.PoolStats().Misses - misses; n != 0 {
		t.Errorf("a request beside a held connection dialled %d new ones, want none", n)
	}
}
