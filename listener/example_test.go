package listener_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/listener"
	"github.com/fenceline/fenceline/listener/storetest"
)

// exampleClient starts a redis-server of the example's own (redis-server must be on PATH)
// on a free loopback port, without persistence, and returns a client of it made as the
// store needs it: listener.NewRedisClient, which never re-sends a command. stop closes
// the client and kills the server.
func exampleClient() (client *redis.Client, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	addr := ln.Addr().(*net.TCPAddr)
	ln.Close()
	dir, err := os.MkdirTemp("", "listener-example")
	if err != nil {
		return nil, nil, err
	}
	srv := exec.Command("redis-server", "--port", fmt.Sprint(addr.Port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir)
	// Killed with the test binary too, when a failed example never calls stop.
	srv.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := srv.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	client = listener.NewRedisClient(addr.String())
	stop = func() {
		client.Close()
		srv.Process.Kill()
		srv.Wait()
		os.RemoveAll(dir)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if err = client.Ping(context.Background()).Err(); err == nil {
			return client, stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			return nil, nil, fmt.Errorf("redis-server on %s: %w", addr, err)
		}
	}
}

// Sale is a user's event: a sale of Qty items of SKU, Seq-th in the shop's feed.
type Sale struct {
	Seq int64
	SKU string
	Qty int64
}

// Position is the sale's place in the feed: listener.Event.
func (s Sale) Position() int64 { return s.Seq }

// ExampleRedisStore keeps a shop's cursor and its units sold per SKU in Redis. The
// effects of each batch (one HINCRBY per sale) are applied in the same fenced step as the
// cursor: a writer whose token is stale changes nothing.
func ExampleRedisStore() {
	client, stop, err := exampleClient() // a redis-server of the example's own
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()
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
	feed := storetest.Feed[Sale]{{1, "apple", 2}, {2, "pear", 1}, {3, "apple", 1}}
	l, err := listener.New(listener.Config[Sale]{Store: store, Source: feed, BatchSize: 2})
	if err != nil {
		fmt.Println(err)
		return
	}

	// A leader's term gives Run a context, cancelled when the term ends, and the term's
	// fencing token (election.Term.Token). This term ends once the feed is ingested.
	term, end := storetest.Until(context.Background(), store, 3)
	if err := l.Run(term, 7); err != nil {
		fmt.Println(err)
	}
	end()

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

// ExampleRedisFence shows fenced work that is not a feed: a nightly payout job writes
// only under its term's token (election.Term.Token), with a closed set of writes or a Lua
// body of its own. A paused leader of an older term that wakes up is refused, whole.
func ExampleRedisFence() {
	client, stop, err := exampleClient() // a redis-server of the example's own
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()
	fence, err := listener.NewRedisFence(client, listener.FenceConfig{Name: "payouts", Node: "n1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	const token = 7 // the term's
	err = fence.Write(ctx, token, listener.HIncrBy("paid", "acct-1", 100), listener.HSet("owed", "acct-2", "250"))
	fmt.Println(err)
	// A body: pay only what is still owed, in the same atomic step as the token check.
	n, err := fence.Eval(ctx, token, `
local owed = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if owed <= 0 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], 0)
return redis.call('HINCRBY', KEYS[2], ARGV[1], owed)`, []string{"owed", "paid"}, "acct-2")
	fmt.Println(n, err)

	err = fence.Write(ctx, token-1, listener.HIncrBy("paid", "acct-1", 100))
	fmt.Println(errors.Is(err, listener.ErrStaleToken))
	fmt.Println(client.HGetAll(ctx, "{payouts}:paid").Val())
	// Output:
	// <nil>
	// 250 <nil>
	// true
	// map[acct-1:100 acct-2:250]
}
