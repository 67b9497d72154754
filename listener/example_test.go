package listener_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/fenceline/fenceline/internal/redisserver"
	"github.com/fenceline/fenceline/listener"
)

// redisAddr is the Redis the examples use: a redis-server started for this test binary.
var redisAddr string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "listener-example")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	srv, err := redisserver.Start(context.Background(), redisserver.Options{Dir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, err) // no Redis, no examples: fail, never skip
		os.RemoveAll(dir)
		os.Exit(1)
	}
	redisAddr = srv.Addr()
	code := m.Run()
	srv.Kill()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Sale is a user's event: a sale of Qty items of SKU, Seq-th in the shop's feed.
type Sale struct {
	Seq int64
	SKU string
	Qty int64
}

// Position is the sale's place in the feed: listener.Event.
func (s Sale) Position() int64 { return s.Seq }

// saleFeed is a listener.Source serving a fixed list of sales.
type saleFeed []Sale

func (f saleFeed) Fetch(_ context.Context, cursor int64, limit int) ([]Sale, error) {
	var out []Sale
	for _, s := range f {
		if s.Seq > cursor && len(out) < limit {
			out = append(out, s)
		}
	}
	return out, nil
}

// ExampleRedisStore keeps a shop's cursor and its units sold per SKU in Redis. The
// effects of each batch (one HINCRBY per sale) are applied in the same fenced step as the
// cursor: a writer whose token is stale changes nothing.
func ExampleRedisStore() {
	client := listener.NewRedisClient(redisAddr) // MaxRetries: -1
	defer client.Close()
	store, err := listener.NewRedisStore(client, listener.RedisConfig[Sale]{
		Name: "shop", // the election's name: every key shares its hash tag, "{shop}:..."
		Node: "n1",
		Effects: func(batch []Sale) ([]listener.Write, error) {
			var ws []listener.Write
			for _, s := range batch {
				ws = append(ws, listener.HIncrBy("sold", s.SKU, s.Qty))
			}
			return ws, nil
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	feed := saleFeed{{1, "apple", 2}, {2, "pear", 1}, {3, "apple", 1}}
	l, err := listener.New(listener.Config[Sale]{Store: store, Source: feed, BatchSize: 2})
	if err != nil {
		fmt.Println(err)
		return
	}

	// A leader's term gives Run a context, cancelled when the term ends, and the term's
	// fencing token (election.Term.Token). This term ends once the feed is ingested.
	term, end := context.WithCancel(context.Background())
	go func() {
		for cursor, _, _ := store.Load(term); cursor < 3; cursor, _, _ = store.Load(term) {
			time.Sleep(10 * time.Millisecond)
		}
		end()
	}()
	if err := l.Run(term, 7); err != nil {
		fmt.Println(err)
	}

	ctx := context.Background()
	fmt.Println(client.HGetAll(ctx, "{shop}:sold").Val())
	// A paused leader of an older term wakes up and writes: refused, nothing applied.
	err = store.Commit(ctx, 6, 3, []Sale{{4, "pear", 5}})
	fmt.Println(errors.Is(err, listener.ErrStaleToken))
	fmt.Println(client.HGetAll(ctx, "{shop}:sold").Val())
	// Output:
	// map[apple:3 pear:1]
	// true
	// map[apple:3 pear:1]
}
