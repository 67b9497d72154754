// Package ledger is the chaos harness's demo ledger: one user of package listener's API.
// Its events are the payments of the deterministic event source (package source); a
// batch's effects credit and debit a balance per account and append the events' ids to a
// sink, in the same fenced commit as the cursor. The checker knows what the balances and
// the sink must be after any prefix of the feed, which is what makes the ledger a good
// witness of exactly-once application.
//
// Layout in Redis (keys under the election's hash tag): "{name}:balances", a hash
// account -> balance; "{name}:sink", a list of applied ids in order. In PostgreSQL: the
// tables BalancesTable and SinkTable (see PostgresEffects).
package ledger

import (
	"errors"
	"fmt"
	"strconv"

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
	var order []string
	delta := map[string]int64{}
	for _, e := range batch {
		if e.Amount < 1 || e.Amount > source.MaxAmount {
			return nil, fmt.Errorf("event %d: amount %d out of 1..%d", e.ID, e.Amount, source.MaxAmount)
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

func configErr(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{listener.ErrInvalidConfig}, a...)...)
}
