package main

import (
	"log/slog"

	"github.com/fenceline/fenceline/listener"
	"github.com/fenceline/fenceline/source"
	"github.com/fenceline/fenceline/workloads/ledger"
)

// ledgerEffects are the Redis writes that applying a page makes: each payment's amounts
// on the balances hash, its id on the sink list. The store applies them in the same
// atomic step as the cursor move, after the token check, or not at all.
var ledgerEffects = ledger.RedisEffects

// newJob returns the singleton job: take the next page of the feed after the stored
// cursor, apply it and move the cursor, fenced by the token, again and again. Its Run
// returns when its ctx ends (the lease did) or when the store rejects its token as
// stale (a newer holder has written). Replace it with your own work: anything that
// stops when its ctx ends and passes the token to every write (listener.RedisFence's
// Write and Eval, pgstore.Fence's Do).
func newJob(st listener.Store[source.Event], o options, logger *slog.Logger, m listener.Metrics) (*listener.Listener[source.Event], error) {
	feed, err := ledger.NewHTTPSource(ledger.HTTPSourceConfig{BaseURL: o.feed})
	if err != nil {
		return nil, err
	}
	return listener.New(listener.Config[source.Event]{Store: st, Source: feed, BatchSize: o.batch, Logger: logger, Metrics: m})
}
