package node

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/listener"
	"github.com/fenceline/fenceline/listener/pgstore"
	"github.com/fenceline/fenceline/source"
	"github.com/fenceline/fenceline/workloads/ledger"
)

// pgConfig is the PostgreSQL store's configuration for the store client called id, as
// storeConfig is Redis's.
func pgConfig(cfg Config, id string, rec *history.Recorder) pgstore.Config[source.Event] {
	c := pgstore.Config[source.Event]{Name: cfg.Election, Node: id, Effects: ledger.PostgresEffects(cfg.Election),
		AuditMaxLen: cfg.AuditMaxLen}
	if cfg.AuditMaxLen == 0 || cfg.Chaos {
		c.AuditMaxLen = pgstore.AuditUnbounded
	}
	if rec != nil {
		c.Recorder = storeRecorder{rec: rec, node: id}
	}
	return c
}

// poolConfig parses the --postgres URL for a pool that gives up on a dial quickly, as
// the Redis client does: a node must notice a partition within its lease.
func poolConfig(url string) (*pgxpool.Config, error) {
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, usage(fmt.Errorf("--postgres: %w", err))
	}
	pc.ConnConfig.ConnectTimeout = 2 * time.Second
	pc.MaxConns = 8
	return pc, nil
}

// openPostgres connects to PostgreSQL and sets up the store's and the ledger's tables,
// retrying until it works or ctx is done: a node restarted while PostgreSQL is down
// waits for it, as it waits for Redis.
func openPostgres(ctx context.Context, cfg Config, logger *slog.Logger) (*pgxpool.Pool, error) {
	pc, err := poolConfig(cfg.Postgres)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, err
	}
	setupStore, err := pgstore.NewStore(pool, pgConfig(cfg, cfg.ID, nil))
	if err != nil {
		pool.Close()
		return nil, err
	}
	for {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := setupStore.Setup(sctx)
		if err == nil {
			err = pgstore.SetupTx(sctx, pool, func(tx pgx.Tx) error { return ledger.SetupPostgres(sctx, tx) })
		}
		if err == nil && cfg.StartCursor != 0 {
			err = seedPostgres(sctx, cfg, pool)
		}
		cancel()
		if err == nil {
			return pool, nil
		}
		logger.Warn("postgres-setup-failed", slog.String("error", err.Error()))
		select {
		case <-ctx.Done():
			pool.Close()
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// storeMaker returns the stores of the node's clients (the node, or its register
// clients), of its variant, in Redis or in PostgreSQL.
type storeMaker func(id string) (listener.Store[source.Event], error)

// makeStores opens the node's store backend and returns its store maker and what closes
// the backend. Redis needs nothing more than the node's client.
// Every store counts its fence's rejections in metrics.
func makeStores(ctx context.Context, cfg Config, client redis.UniversalClient, rec *history.Recorder, metrics listener.FenceMetrics, logger *slog.Logger) (storeMaker, func(), error) {
	if cfg.Store != StorePostgres {
		return func(id string) (listener.Store[source.Event], error) {
			sc := storeConfig(cfg, id, rec)
			sc.Metrics = metrics
			return targetStore(cfg, client, sc)
		}, func() {}, nil
	}
	pool, err := openPostgres(ctx, cfg, logger)
	if err != nil {
		return nil, nil, err
	}
	return func(id string) (listener.Store[source.Event], error) {
		pc := pgConfig(cfg, id, rec)
		pc.Metrics = metrics
		return newPgStore(cfg.Variant, pool, pc)
	}, pool.Close, nil
}
