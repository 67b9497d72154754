package node

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/listener"
	"github.com/fenceline/fenceline/listener/pgstore"
)

// seedScript sets the token counter and the cursor record of an empty store, each only
// if it does not exist, in one step. KEYS: counter, cursor record. ARGV: token, cursor.
// Every node of a run runs it before it takes part: the first one seeds, the others
// (and a node restarted later) find the keys and change nothing.
var seedScript = redis.NewScript(`
redis.call('SET', KEYS[1], ARGV[1], 'NX')
if redis.call('EXISTS', KEYS[2]) == 0 and ARGV[2] ~= '0' then
  redis.call('HSET', KEYS[2], 'cursor', ARGV[2], 'token', '0')
end
return 1
`)

// seedRedis seeds the token counter (and, for a Redis store, the cursor record) with
// cfg.StartToken and cfg.StartCursor (Config.StartToken).
func seedRedis(ctx context.Context, cfg Config, client redis.UniversalClient) error {
	if cfg.StartToken == 0 && cfg.StartCursor == 0 {
		return nil
	}
	cursor := cfg.StartCursor
	if cfg.Store == StorePostgres {
		cursor = 0 // the record is PostgreSQL's (seedPostgres)
	}
	sctx, cancel := context.WithTimeout(ctx, listener.DefaultStoreTimeout)
	defer cancel()
	keys := []string{election.TokenKey(cfg.Election), listener.KeysFor(cfg.Election).Cursor}
	if err := seedScript.Run(sctx, client, keys, cfg.StartToken, cursor).Err(); err != nil {
		return fmt.Errorf("node: seed the store (--start-token %d, --start-cursor %d): %w", cfg.StartToken, cfg.StartCursor, err)
	}
	return nil
}

// seedPostgres sets the cursor of PostgreSQL's cursor row to cfg.StartCursor if no
// commit has moved it yet (cursor and token still 0).
func seedPostgres(ctx context.Context, cfg Config, pool *pgxpool.Pool) error {
	_, err := pool.Exec(ctx, `UPDATE `+pgstore.DefaultCursorTable+` SET cursor = $2 WHERE name = $1 AND cursor = 0 AND token = 0`,
		cfg.Election, cfg.StartCursor)
	if err != nil {
		return fmt.Errorf("node: seed the cursor (--start-cursor %d): %w", cfg.StartCursor, err)
	}
	return nil
}
