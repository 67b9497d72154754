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
}

// RunRegister runs the register workload until ctx is done: cfg.Clients clients that each
// take tokens from the election's token counter and do fenced loads and commits on the
// store directly, concurrently, with no election. The checker then judges the store's
// linearizability under contention that a single leader never produces. It blocks.
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
		if c.rng.IntN(10) < 4 {
			if cur, _, err := c.store.Load(ctx); err == nil {
				cursor = cur
			}
		} else {
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
