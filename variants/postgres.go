//go:build chaos

package variants

import (
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fenceline/fenceline/listener"
	"github.com/fenceline/fenceline/listener/pgstore"
	"github.com/fenceline/fenceline/source"
)

// PostgresStore returns the PostgreSQL store of the named variant. The variants that replace the Redis commit script have no
// PostgreSQL form; those of the election (and the reference) run on the real store.
func PostgresStore(name string, pool *pgxpool.Pool, cfg pgstore.Config[source.Event]) (listener.Store[source.Event], error) {
	if _, err := ByName(name); err != nil {
		return nil, err
	}
	s, err := pgstore.NewStore(pool, cfg)
	if err != nil {
		return nil, err
	}
	switch name {
	case Reference, NonAtomicRelease, VolatileRedis:
	case NoTokenCheck:
		if err := pgstore.ReplaceInFenceForChaos(s, "token <= $2 AND ", ""); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("variants: %s has no PostgreSQL form (it replaces the Redis commit script)", name)
	}
	return s, nil
}
