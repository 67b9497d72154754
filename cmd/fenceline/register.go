package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/listener"
	"github.com/fenceline/fenceline/source"
	"github.com/fenceline/fenceline/variants"
)

// runRegister runs the register workload: f.clients clients that each take tokens from
// the election's token counter and do fenced loads and commits on the store directly,
// concurrently, with no election. The checker then judges the store's linearizability
// under contention that a single leader never produces.
func runRegister(ctx context.Context, f nodeFlags, client redis.UniversalClient, rec *history.Recorder, st *nodeState, logger *slog.Logger) error {
	var wg sync.WaitGroup
	errs := make([]error, f.clients)
	for i := range f.clients {
		id := fmt.Sprintf("%s.c%d", f.id, i+1)
		store, err := variants.Store(f.variant, client, listener.StoreConfig{Name: f.election, Node: id, Recorder: rec})
		if err != nil {
			return err
		}
		c := &registerClient{id: id, store: &trackingStore{CursorStore: store, st: st},
			client: client, tokenKey: election.TokenKey(f.election),
			elec: newElectionRecorder(rec, id, st.health), rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(i)))}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.run(ctx)
		}()
	}
	wg.Wait()
	logger.Info("node-stopped")
	return errors.Join(errs...)
}

type registerClient struct {
	id       string
	store    listener.CursorStore
	client   redis.UniversalClient
	tokenKey string
	elec     electionRecorder
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
