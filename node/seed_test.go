package node

import (
	"context"
	"strconv"
	"testing"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/internal/redisserver"
	"github.com/fenceline/fenceline/listener"
)

// The first node seeds an empty store with the run's start; every later seed (another
// node, a restarted one) finds the keys and changes nothing.
func TestSeedRedis(t *testing.T) {
	srv := redisserver.New(t)
	c := election.NewClient(srv.Addr())
	defer c.Close()
	ctx := context.Background()
	cfg := Config{Election: "seed", StartToken: 1<<53 - 3, StartCursor: 99}
	if err := seedRedis(ctx, cfg, c); err != nil {
		t.Fatal(err)
	}
	k := listener.KeysFor("seed")
	check := func(when string, counter, cursor, token int64) {
		t.Helper()
		if n, err := c.Get(ctx, election.TokenKey("seed")).Int64(); err != nil || n != counter {
			t.Errorf("%s: counter %d (%v), want %d", when, n, err, counter)
		}
		rec, err := c.HGetAll(ctx, k.Cursor).Result()
		if err != nil || rec["cursor"] != itoa(cursor) || rec["token"] != itoa(token) {
			t.Errorf("%s: cursor record %v (%v), want cursor %d token %d", when, rec, err, cursor, token)
		}
	}
	check("seeded", 1<<53-3, 99, 0)
	c.Incr(ctx, election.TokenKey("seed"))
	c.HSet(ctx, k.Cursor, "cursor", 120, "token", 1<<53-2)
	other := cfg
	other.StartToken, other.StartCursor = 7, 7
	if err := seedRedis(ctx, other, c); err != nil {
		t.Fatal(err)
	}
	check("seeded again after a commit", 1<<53-2, 120, 1<<53-2)
	// The PostgreSQL store's cursor is seeded there: Redis gets the counter only.
	pg := Config{Election: "pg", Store: StorePostgres, StartToken: 9, StartCursor: 99}
	if err := seedRedis(ctx, pg, c); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Exists(ctx, listener.KeysFor("pg").Cursor).Result(); n != 0 {
		t.Error("a PostgreSQL node seeded Redis's cursor record")
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
