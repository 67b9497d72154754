//go:build chaos

package workloads

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/listener"
	"github.com/fenceline/fenceline/source"
)

// RegisterConfig is one node's share of the register workload. It exists in chaos builds
// only: the register clients take tokens outside the election and commit synthetic
// events, which on a live store would depose the leader and corrupt the cursor.
type RegisterConfig struct {
	// Node is the node's id; its clients are Node.c1, Node.c2, ...
	Node string
	// Clients is the number of concurrent clients (>= 1).
	Clients int
	// Election is the election name: the clients take tokens from its counter.
	Election string
	// Client is the Redis client the tokens are taken with.
	Client redis.UniversalClient
	// Store returns the cursor store of the client called id.
	Store func(id string) (listener.Store[source.Event], error)
	// Recorder returns what records the token acquisitions of the client called id (an
	// acquire each), so that the checker can prove each token went to one client.
	Recorder func(id string) election.Recorder
	// Fence, if set, returns the fence of a client's store, or nil if it has none: the
	// client then also does fenced writes that move no cursor and fenced Lua bodies,
	// some of which fail after the check, on the same fence record as its commits.
	Fence func(store listener.Store[source.Event]) FencedWriter
}

// A FencedWriter runs work fenced by a token without moving the cursor, as
// listener.RedisFence does.
type FencedWriter interface {
	Write(ctx context.Context, token int64, writes ...listener.Write) error
	Eval(ctx context.Context, token int64, body string, keys []string, args ...any) (any, error)
}

// The register clients' writes: a counter each (RegisterWritesKey, a hash field per
// client) by a closed write or a body, and a body that fails after the check.
const (
	RegisterWritesKey = "register-writes"
	registerBody      = "return redis.call('HINCRBY', KEYS[1], ARGV[1], 1)"
	registerBadBody   = "error('register: this body fails after the token check')"
)

// RunRegister runs the register workload until ctx is done: cfg.Clients clients that each
// take tokens from the election's token counter and do fenced loads and commits (and,
// with cfg.Fence, writes) on the store directly, concurrently, with no election. The
// checker then judges the store's linearizability under contention that a single
// leader never produces. It blocks.
func RunRegister(ctx context.Context, cfg RegisterConfig) error {
	if cfg.Clients < 1 || cfg.Client == nil || cfg.Store == nil || cfg.Recorder == nil {
		return fmt.Errorf("workloads: register: need clients >= 1, a Redis client, a store and a recorder")
	}
	var wg sync.WaitGroup
	errs := make([]error, cfg.Clients)
	for i := range cfg.Clients {
		id := fmt.Sprintf("%s.c%d", cfg.Node, i+1)
		store, err := cfg.Store(id)
		if err != nil {
			return err
		}
		c := &registerClient{id: id, store: store, client: cfg.Client, tokenKey: election.TokenKey(cfg.Election),
			elec: cfg.Recorder(id), rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(i)))}
		if cfg.Fence != nil {
			c.fence = cfg.Fence(store)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.run(ctx)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

type registerClient struct {
	id       string
	store    listener.Store[source.Event]
	client   redis.UniversalClient
	tokenKey string
	elec     election.Recorder
	fence    FencedWriter // nil: no writes
	rng      *rand.Rand
}

func (c *registerClient) run(ctx context.Context) error {
	var token, cursor int64
	left := 0
	for ctx.Err() == nil {
		if left == 0 {
			t, ok := c.newToken(ctx)
			if !ok {
				c.pause(ctx, 50*time.Millisecond)
				continue
			}
			token, left = t, 10+c.rng.IntN(20)
		}
		left--
		switch r := c.rng.IntN(10); {
		case r < 3 && c.fence != nil:
			if errors.Is(c.write(ctx, token), listener.ErrStaleToken) {
				left = 0
			}
		case r < 4 || (r < 6 && c.fence != nil):
			if cur, _, err := c.store.Load(ctx); err == nil {
				cursor = cur
			}
		default:
			n := 1 + c.rng.IntN(3)
			err := c.store.Commit(ctx, token, cursor, source.Range(cursor, cursor+int64(n)))
			switch {
			case err == nil:
				cursor += int64(n)
			case errors.Is(err, listener.ErrStaleToken):
				left = 0
			default:
				// Conflict or unknown outcome: read where the cursor is now.
				if cur, _, err := c.store.Load(ctx); err == nil {
					cursor = cur
				}
			}
		}
		c.pause(ctx, time.Duration(2+c.rng.IntN(10))*time.Millisecond)
	}
	return nil
}

// write does one fenced write that moves no cursor: half of them a closed write, a
// quarter a body, a quarter a body that fails after the check (its token still stands).
func (c *registerClient) write(ctx context.Context, token int64) error {
	switch c.rng.IntN(4) {
	case 0, 1:
		return c.fence.Write(ctx, token, listener.HIncrBy(RegisterWritesKey, c.id, 1))
	case 2:
		_, err := c.fence.Eval(ctx, token, registerBody, []string{RegisterWritesKey}, c.id)
		return err
	}
	_, err := c.fence.Eval(ctx, token, registerBadBody, []string{RegisterWritesKey})
	return err
}

// newToken takes a token from the election's counter, recorded as an acquire so that the
// checker can prove every token went to one client.
func (c *registerClient) newToken(ctx context.Context) (int64, bool) {
	done := c.elec.Invoke(election.OpAcquire, 0)
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	t, err := c.client.Incr(rctx, c.tokenKey).Result()
	if err != nil {
		done(election.Result{Outcome: election.Unknown, Err: err})
		return 0, false
	}
	done(election.Result{Outcome: election.OK, Token: t})
	return t, true
}

func (c *registerClient) pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
