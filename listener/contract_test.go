package listener_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/internal/redisserver"
	"github.com/fenceline/fenceline/listener"
	"github.com/fenceline/fenceline/listener/storetest"
)

// redisAddr is the Redis of the contract tests: a redis-server started for this test
// binary.
var redisAddr string

func TestMain(m *testing.M) { redisserver.Main(m, &redisAddr) }

// contractEffects are storetest.Event's effects as Redis writes.
func contractEffects(batch []storetest.Event) ([]listener.Write, error) {
	var ws []listener.Write
	pos := make([]string, len(batch))
	for i, e := range batch {
		ws = append(ws, listener.HIncrBy("credits", e.Account, e.Amount))
		pos[i] = strconv.FormatInt(e.Pos, 10)
	}
	return append(ws, listener.RPush("applied", pos...)), nil
}

var contractSeq atomic.Int64

// TestRedisStoreContract runs the store contract against RedisStore on a real Redis, and
// the work contract against RedisFence.Write.
func TestRedisStoreContract(t *testing.T) {
	srv := redisserver.New(t)
	storetest.Run(t, redisBackend(srv, func(f *listener.RedisFence) storetest.Work {
		return func(ctx context.Context, token int64, account string, amount int64) error {
			return f.Write(ctx, token, listener.HIncrBy("credits", account, amount))
		}
	}))
}

// creditBody is the work contract's credit as a Lua body.
const creditBody = `return redis.call('HINCRBY', KEYS[1], ARGV[1], ARGV[2])`

// TestRedisFenceEvalContract runs the work contract against RedisFence.Eval.
func TestRedisFenceEvalContract(t *testing.T) {
	srv := redisserver.New(t)
	storetest.RunWork(t, redisBackend(srv, func(f *listener.RedisFence) storetest.Work {
		return func(ctx context.Context, token int64, account string, amount int64) error {
			_, err := f.Eval(ctx, token, creditBody, []string{"credits"}, account, amount)
			return err
		}
	}))
}

// redisBackend makes the contract's backends on srv, with work as their Work.
func redisBackend(srv *redisserver.Server, work func(*listener.RedisFence) storetest.Work) func(t *testing.T) storetest.Backend {
	return func(t *testing.T) storetest.Backend {
		name := fmt.Sprintf("contract%d", contractSeq.Add(1))
		keys := listener.KeysFor(name)
		raw := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
		t.Cleanup(func() { raw.Close() })
		// One client for the backend's stores: its pooled connection is already open
		// when Redis stalls, so a stalled commit is sent (and queued), not stuck in
		// the connection's handshake.
		c := listener.NewRedisClient(srv.Addr())
		t.Cleanup(func() { c.Close() })
		return storetest.Backend{
			NewStore: func(t *testing.T, node string, timeout time.Duration, rec listener.Recorder) listener.Store[storetest.Event] {
				s, err := listener.NewRedisStore(c, listener.RedisConfig[storetest.Event]{
					Name: name, Node: node, Timeout: timeout, Recorder: rec, Effects: contractEffects})
				if err != nil {
					t.Fatal(err)
				}
				return s
			},
			State: func(t *testing.T) storetest.State {
				return redisState(t, raw, keys)
			},
			Stall: func(t *testing.T) func() {
				if err := srv.Pause(); err != nil {
					t.Fatal(err)
				}
				return func() {
					if err := srv.Resume(); err != nil {
						t.Fatal(err)
					}
				}
			},
			NewWork: func(t *testing.T, node string, timeout time.Duration, rec listener.Recorder) storetest.Work {
				f, err := listener.NewRedisFence(c, listener.FenceConfig{Name: name, Node: node, Timeout: timeout, Recorder: rec})
				if err != nil {
					t.Fatal(err)
				}
				return work(f)
			},
		}
	}
}

func redisState(t *testing.T, c *redis.Client, keys listener.Keys) storetest.State {
	t.Helper()
	ctx := context.Background()
	atoi := func(s string) int64 {
		if s == "" {
			return 0
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("not an integer: %q", s)
		}
		return n
	}
	rec, err := c.HGetAll(ctx, keys.Cursor).Result()
	if err != nil {
		t.Fatal(err)
	}
	st := storetest.State{Cursor: atoi(rec["cursor"]), Token: atoi(rec["token"]), Credits: map[string]int64{}}
	credits, err := c.HGetAll(ctx, keys.Key("credits")).Result()
	if err != nil {
		t.Fatal(err)
	}
	for a, v := range credits {
		st.Credits[a] = atoi(v)
	}
	applied, err := c.LRange(ctx, keys.Key("applied"), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range applied {
		st.Applied = append(st.Applied, atoi(v))
	}
	msgs, err := c.XRange(ctx, keys.Audit, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		s := func(f string) string { v, _ := m.Values[f].(string); return v }
		st.Audit = append(st.Audit, storetest.AuditEntry{Op: s("op"), Node: s("node"), Token: atoi(s("token")),
			From: atoi(s("from")), To: atoi(s("to")), Result: s("result")})
	}
	return st
}
