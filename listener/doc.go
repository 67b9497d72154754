// Package listener is fenceline's fenced listener: the cursor store that refuses stale
// writers, and the loop that ingests events into it while its node leads.
//
// A leader's term hands the Listener a context (cancelled when the term ends) and the
// term's fencing token. Listener.Run loads the cursor, fetches the next page from the
// event Source and commits the page's effects and the new cursor in one fenced write.
//
// # What it guarantees
//
// RedisStore.Commit is one Lua script, so Redis runs it atomically. It applies a batch
// only if the writer's token is at least the highest token the store has accepted and the
// stored cursor is still the one the batch starts from; otherwise it changes nothing but
// the audit stream and reports ErrStaleToken or ErrCursorConflict. Hence, whatever the
// leases, pauses, partitions or clocks do:
//
//   - once a token t has been accepted, no write with a token below t is ever applied;
//   - no event is applied twice and none is skipped: each accepted batch starts exactly
//     where the previous accepted one ended (the sink is the feed's prefix 1..cursor, given
//     a source whose ids are contiguous);
//   - every write attempt that reached Redis is in the audit stream, with its result and
//     Redis's clock.
//
// The go-redis client must not retry: create it with MaxRetries: -1 (NewRedisClient does,
// NewRedisStore refuses a client that retries). A retried commit is a second write attempt
// the history never saw, which makes the recorded history wrong even though the fence keeps
// the data right.
//
// # What it does not guarantee
//
//   - Liveness: a listener whose token is stale stops; getting a new term is the
//     election's job.
//   - Fencing across data loss: the guarantees hold for one Redis dataset. If Redis loses
//     acknowledged writes (restart without an append-only file, failover of an
//     asynchronous replica), the cursor record and the token counter can go backwards and
//     tokens can repeat.
//   - Effects outside Redis: only the cursor, balances, sink and audit keys are fenced.
//   - Exactly-once delivery from the source: a page is fetched, possibly more than once;
//     only its commit is exactly-once.
//
// # History
//
// With a history.Recorder, RedisStore records every Load and Commit as an invoke event
// before the request is sent and a completion after: ok, fail (a rejection: certainly not
// applied) or info (timeout or connection error: it may have been applied).
package listener
