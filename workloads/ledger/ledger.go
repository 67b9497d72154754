// Package ledger is the chaos harness's demo ledger: one user of package listener's API.
// Its events are the payments of the deterministic event source (package source); a
// batch's effects credit and debit a balance per account and append the events' ids to a
// sink, in the same fenced commit as the cursor. The checker knows what the balances and
// the sink must be after any prefix of the feed, which is what makes the ledger a good
// witness of exactly-once application.
//
// Layout in Redis (keys under the election's hash tag): "{name}:balances", a hash
// account -> balance; "{name}:sink", a list of applied ids in order. In PostgreSQL: the
// tables BalancesTable and SinkTable (see PostgresEffects), keyed by election name.
package ledger

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/fenceline/fenceline/listener"
	"github.com/fenceline/fenceline/source"
)

// Keys of the ledger's effects in Redis, relative to the election's hash tag.
const (
	BalancesKey = "balances"
	SinkKey     = "sink"
)

// ErrSource is wrapped by HTTPSource.Fetch errors about the source's answer (bad
// status, malformed body, out-of-order events), as opposed to transport errors.
var ErrSource = errors.New("ledger: bad answer from source")

// RedisEffects are a batch's writes: one HINCRBY per account that took part (its net
// change, 0 included, so that the balances hash has exactly the accounts of the applied
// events) and RPUSHes of the ids to the sink. It is RedisConfig.Effects of the ledger.
func RedisEffects(batch []source.Event) ([]listener.Write, error) {
	order, delta, err := netChanges(batch)
	if err != nil {
		return nil, err
	}
	writes := make([]listener.Write, 0, len(order)+1)
	for _, a := range order {
		writes = append(writes, listener.HIncrBy(BalancesKey, a, delta[a]))
	}
	for i := 0; i < len(batch); i += listener.MaxWriteValues {
		chunk := batch[i:min(i+listener.MaxWriteValues, len(batch))]
		ids := make([]string, len(chunk))
		for j, e := range chunk {
			ids[j] = strconv.FormatInt(e.ID, 10)
		}
		writes = append(writes, listener.RPush(SinkKey, ids...))
	}
	return writes, nil
}

// netChanges returns the accounts that take part in batch, in order of first
// appearance, and each one's net change.
func netChanges(batch []source.Event) ([]string, map[string]int64, error) {
	var order []string
	delta := map[string]int64{}
	for _, e := range batch {
		if e.Amount < 1 || e.Amount > source.MaxAmount {
			return nil, nil, fmt.Errorf("event %d: amount %d out of 1..%d", e.ID, e.Amount, source.MaxAmount)
		}
		for _, a := range []string{e.From, e.To} {
			if _, ok := delta[a]; !ok {
				order = append(order, a)
				delta[a] = 0
			}
		}
		delta[e.From] -= e.Amount
		delta[e.To] += e.Amount
	}
	return order, delta, nil
}

func configErr(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{listener.ErrInvalidConfig}, a...)...)
}

// Tables of the ledger's effects in PostgreSQL, one set shared by every election name.
const (
	BalancesTable = "fenceline_balances"
	SinkTable     = "fenceline_sink"
)

// SetupPostgres creates the ledger's tables if they do not exist: balances (name,
// account, balance) and the sink (seq, name, id), whose seq orders the applied ids.
func SetupPostgres(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `
CREATE TABLE IF NOT EXISTS `+BalancesTable+` (
  name    text NOT NULL,
  account text NOT NULL,
  balance bigint NOT NULL,
  PRIMARY KEY (name, account)
);
CREATE TABLE IF NOT EXISTS `+SinkTable+` (
  seq  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name text NOT NULL,
  id   bigint NOT NULL
)`)
	if err != nil {
		return fmt.Errorf("ledger: setup: %w", err)
	}
	return nil
}

// PostgresEffects returns the ledger's effects in PostgreSQL for election name, the
// same as RedisEffects: each account's net change added to its balance (0 included), and
// the ids appended to the sink, in two statements on the commit's transaction.
func PostgresEffects(name string) func(ctx context.Context, tx pgx.Tx, batch []source.Event) error {
	return func(ctx context.Context, tx pgx.Tx, batch []source.Event) error {
		accounts, delta, err := netChanges(batch)
		if err != nil {
			return err
		}
		deltas := make([]int64, len(accounts))
		for i, a := range accounts {
			deltas[i] = delta[a]
		}
		ids := make([]int64, 0, len(batch))
		for _, e := range batch {
			ids = append(ids, e.ID)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+BalancesTable+` (name, account, balance)
SELECT $1, a, d FROM unnest($2::text[], $3::bigint[]) AS t(a, d)
ON CONFLICT (name, account) DO UPDATE SET balance = `+BalancesTable+`.balance + excluded.balance`,
			name, accounts, deltas); err != nil {
			return err
		}
		// unnest keeps the array's order: seq follows the ids' order.
		_, err = tx.Exec(ctx, `INSERT INTO `+SinkTable+` (name, id) SELECT $1, i FROM unnest($2::bigint[]) WITH ORDINALITY AS t(i, o) ORDER BY o`, name, ids)
		return err
	}
}
