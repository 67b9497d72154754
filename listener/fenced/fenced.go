// Package fenced wires an election to the store that fences its writes, naming both
// once: the election's Name is the store's (the hash tag of every Redis key, the
// PostgreSQL fence row) and its InstanceID is the store's Node (the audit's writer).
//
// Each constructor returns the elector (package election) and the store, both on the
// same Redis client. Hold the lock (or run the elector) and pass its token to every
// write:
//
//	el, fence, err := fenced.Redis(client, election.Config{Name: "payments", InstanceID: host}, listener.FenceConfig{})
//	...
//	lock, err := el.Acquire(ctx)
//	...
//	err = fence.Write(lock.Context(), lock.Token(), listener.HIncrBy("balances", "acct-1", 100))
//	...
//	err = lock.Release(ctx)
//
// or, with Run, fence.Write(ctx, t.Token, ...) in the lead func of each term.
//
// The store config's Name and Node must be left empty, or be the election's: a mismatch
// is an error (wrapping listener.ErrInvalidConfig), never silently a second fence.
//
// What it guarantees is the two packages' guarantees together: every write that carries
// a term's token is applied only if no write with a higher token has been, so a holder
// that lost the lease without noticing (paused, partitioned, its clock slow) writes
// nothing once its successor has. It adds no guarantee of its own and does not make the
// election exclusive: two instances may each believe they hold the lock for a while,
// and only what goes through the store is protected. The repository's
// examples/go-service is a whole service built this way.
package fenced

import (
	"cmp"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/listener"
	"github.com/fenceline/fenceline/listener/pgstore"
)

// Redis returns the elector of cfg on client and the fence of its writes in the same
// Redis. It sends nothing.
func Redis(client redis.UniversalClient, cfg election.Config, fc listener.FenceConfig) (*election.Elector, *listener.RedisFence, error) {
	el, err := elector(client, cfg, &fc.Name, &fc.Node)
	if err != nil {
		return nil, nil, err
	}
	f, err := listener.NewRedisFence(client, fc)
	if err != nil {
		return nil, nil, err
	}
	return el, f, nil
}

// RedisStore returns the elector of cfg on client and the Redis store of its feed. It
// sends nothing.
func RedisStore[E listener.Event](client redis.UniversalClient, cfg election.Config, sc listener.RedisConfig[E]) (*election.Elector, *listener.RedisStore[E], error) {
	el, err := elector(client, cfg, &sc.Name, &sc.Node)
	if err != nil {
		return nil, nil, err
	}
	s, err := listener.NewRedisStore(client, sc)
	if err != nil {
		return nil, nil, err
	}
	return el, s, nil
}

// Postgres returns the elector of cfg on client and the fence of its writes in pool.
// It sends nothing; run the fence's Setup before the first write.
func Postgres(client redis.UniversalClient, pool *pgxpool.Pool, cfg election.Config, fc pgstore.FenceConfig) (*election.Elector, *pgstore.Fence, error) {
	el, err := elector(client, cfg, &fc.Name, &fc.Node)
	if err != nil {
		return nil, nil, err
	}
	f, err := pgstore.NewFence(pool, fc)
	if err != nil {
		return nil, nil, err
	}
	return el, f, nil
}

// PostgresStore returns the elector of cfg on client and the PostgreSQL store of its
// feed in pool. It sends nothing; run the store's Setup before the first commit.
func PostgresStore[E listener.Event](client redis.UniversalClient, pool *pgxpool.Pool, cfg election.Config, sc pgstore.Config[E]) (*election.Elector, *pgstore.Store[E], error) {
	el, err := elector(client, cfg, &sc.Name, &sc.Node)
	if err != nil {
		return nil, nil, err
	}
	s, err := pgstore.NewStore(pool, sc)
	if err != nil {
		return nil, nil, err
	}
	return el, s, nil
}

// elector creates the elector of cfg and sets the store's name and node to the
// election's, refusing others.
func elector(client redis.UniversalClient, cfg election.Config, name, node *string) (*election.Elector, error) {
	en := cmp.Or(cfg.Name, election.DefaultName)
	if *name != "" && *name != en {
		return nil, fmt.Errorf("%w: fenced: the store's Name %q is not the election's %q (leave it empty)", listener.ErrInvalidConfig, *name, en)
	}
	if *node != "" && *node != cfg.InstanceID {
		return nil, fmt.Errorf("%w: fenced: the store's Node %q is not the election's InstanceID %q (leave it empty)", listener.ErrInvalidConfig, *node, cfg.InstanceID)
	}
	el, err := election.New(client, cfg)
	if err != nil {
		return nil, err
	}
	*name, *node = en, cfg.InstanceID
	return el, nil
}
