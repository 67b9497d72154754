//go:build chaos

package main

// What exists only for the chaos harness to break and probe the service (go build -tags
// chaos): the clock fault's hook, and the broken twin, --unfenced, which commits without
// the fence so that the harness can show it catches a service that skips it. Never copy
// this file.

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/listener"
	"github.com/fenceline/fenceline/node/skewclock"
	"github.com/fenceline/fenceline/source"
	"github.com/fenceline/fenceline/workloads/ledger"
)

func addChaosFlags(o *options) {
	flag.BoolVar(&o.unfenced, "unfenced", false, "write WITHOUT the fence: the broken twin the chaos harness must catch")
}

// faultHooks is the lease's clock, which POST /fault/clock jumps and skews.
type faultHooks struct{ clock *skewclock.Clock }

func newFaultHooks() faultHooks { return faultHooks{skewclock.New()} }

func (f faultHooks) configure(ec *election.Config) { ec.Clock = f.clock }

func (f faultHooks) handle(mux *http.ServeMux) {
	mux.HandleFunc("POST /fault/clock", func(w http.ResponseWriter, r *http.Request) {
		offset, err := time.ParseDuration(r.URL.Query().Get("offset"))
		if err != nil {
			http.Error(w, "offset: "+err.Error(), http.StatusBadRequest)
			return
		}
		rate, err := strconv.ParseFloat(r.URL.Query().Get("rate"), 64)
		if err == nil {
			err = f.clock.SetRate(rate)
		}
		if err != nil {
			http.Error(w, "rate: "+err.Error(), http.StatusBadRequest)
			return
		}
		f.clock.SetOffset(offset)
		fmt.Fprintf(w, "{\"offset\":%q,\"rate\":%g}\n", offset, rate)
	})
}

// store is the fenced store, or with --unfenced the twin's.
func (h *harness) store(client redis.UniversalClient, fenced listener.Store[source.Event], o options) listener.Store[source.Event] {
	if !o.unfenced {
		return fenced
	}
	return h.unfencedStore(client, fenced, o)
}

// unfencedCommit applies a page and moves the cursor whatever the stored token and
// cursor are, and audits the attempt as the fenced store does. KEYS: cursor, balances,
// sink, audit. ARGV: op, node, token, from, to, then id, from account, to account and
// amount per event.
var unfencedCommit = redis.NewScript(`
for i = 6, #ARGV, 4 do
  redis.call('HINCRBY', KEYS[2], ARGV[i + 1], -tonumber(ARGV[i + 3]))
  redis.call('HINCRBY', KEYS[2], ARGV[i + 2], ARGV[i + 3])
  redis.call('RPUSH', KEYS[3], ARGV[i])
end
redis.call('HSET', KEYS[1], 'cursor', ARGV[5], 'token', ARGV[3])
local t = redis.call('TIME')
redis.call('XADD', KEYS[4], '*', 'op', ARGV[1], 'node', ARGV[2], 'token', ARGV[3], 'from', ARGV[4],
  'to', ARGV[5], 'result', 'ok', 'time', t[1] .. string.format('%06d', tonumber(t[2])))
return 1`)

// unfencedStore loads through the fenced store and commits with unfencedCommit.
type unfencedStore struct {
	listener.Store[source.Event]
	client redis.UniversalClient
	keys   []string
	node   string
	ids    *listener.OpIDs
	rec    listener.Recorder // nil: not recorded
}

func (h *harness) unfencedStore(client redis.UniversalClient, fenced listener.Store[source.Event], o options) *unfencedStore {
	p, k := election.KeyPrefix(o.name), listener.KeysFor(o.name)
	ids, _ := listener.NewOpIDs(o.id) // fails only for an empty id, which election.New refused
	s := &unfencedStore{Store: fenced, client: client, node: o.id, ids: ids,
		keys: []string{k.Cursor, p + ledger.BalancesKey, p + ledger.SinkKey, k.Audit}}
	if h != nil {
		s.rec = storeRecorder{h}
	}
	return s
}

func (s *unfencedStore) Commit(ctx context.Context, token, from int64, batch []source.Event) error {
	if len(batch) == 0 {
		return listener.ErrInvalidBatch
	}
	op := listener.Op{ID: s.ids.Next(), Kind: listener.OpCommit, Token: token, From: from,
		To: batch[len(batch)-1].ID, Events: len(batch)}
	args := []any{op.ID, s.node, token, from, op.To}
	for _, e := range batch {
		args = append(args, strconv.FormatInt(e.ID, 10), e.From, e.To, e.Amount)
	}
	complete := func(listener.Result) {}
	if s.rec != nil {
		complete = s.rec.Invoke(op)
	}
	ctx, cancel := context.WithTimeout(ctx, listener.DefaultStoreTimeout)
	defer cancel()
	if err := unfencedCommit.Run(ctx, s.client, s.keys, args...).Err(); err != nil {
		complete(listener.Result{Outcome: listener.OutcomeUnknown, Err: err})
		return fmt.Errorf("%w: %s: %w", listener.ErrOutcomeUnknown, op.ID, err)
	}
	complete(listener.Result{Outcome: listener.OutcomeOK})
	return nil
}
