// Package listener is a fenced event listener: it ingests a feed of events of your type
// while its node leads, and keeps the feed's cursor, and what each batch of events does,
// in a store that refuses writers whose fencing token is stale.
//
// A leader's term (package election, or any lease that hands out increasing tokens)
// gives Listener.Run a context, cancelled when the term ends, and the term's token. Run
// loads the cursor, fetches the next page from the Source and commits it: the batch's
// effects and the new cursor in one fenced step of the Store.
//
//   - RedisStore keeps the cursor in Redis; a batch's effects are Redis writes (Write:
//     HINCRBY, HSET, SET, RPUSH, XADD, DEL on keys under the election's hash tag),
//     applied by one Lua script after the token and cursor checks.
//   - pgstore.Store (package listener/pgstore) keeps it in PostgreSQL; a batch's effects
//     are your SQL, run in the same transaction as the conditional UPDATE that checks
//     the token and the cursor.
//
// Work that is not a feed's (a singleton job, a cron, a payment batch) uses the stores'
// fences directly: RedisFence.Write (the same closed set of writes) and RedisFence.Eval
// (a Lua body of yours, which cannot escape the fence: see Eval), and pgstore.Fence.Do
// (your function in the fenced transaction). They share the fence record of the
// election's name with the feed's commits and its audit; the stores' commits are fenced
// writes that also move the cursor. Package listener/fenced creates an election and its
// fence or store with the names typed once.
//
// Package storetest holds the contract both stores and both fences pass, as a test
// suite.
//
// # What it guarantees
//
// A commit is applied only if the writer's token is at least the highest token the store
// has accepted and the stored cursor is still the one the batch starts from; otherwise it
// changes nothing but the audit and returns a *RejectedError (ErrStaleToken,
// ErrCursorConflict); a fenced write likewise, without the cursor check. Hence, whatever
// the leases, pauses, partitions or clocks do:
//
//   - once a token t has been accepted, no write with a token below t is ever applied;
//   - no batch is applied twice and none is skipped: each accepted batch starts exactly
//     where the previous accepted one ended, and its effects are applied with it, whole,
//     or not at all;
//   - every write attempt that reached the store is in its audit (op id, node, token,
//     cursor move, result, the store's clock), so a commit whose outcome is unknown
//     (ErrOutcomeUnknown: a timeout, a lost connection) can be looked up by its op id.
//
// # What it does not guarantee
//
//   - Liveness: a listener whose token is stale stops; getting a new term is the
//     election's job.
//   - Fencing across data loss: the guarantees hold for one dataset. If the store loses
//     acknowledged writes (Redis restarted without an append-only file, failover to an
//     asynchronous replica), the cursor and the token counter can go backwards and tokens
//     can repeat.
//   - Effects outside the store: only what the commit writes is fenced. An email sent or
//     an API called while applying a batch is not.
//   - Exactly-once delivery from the source: a page may be fetched more than once; only
//     its commit is exactly-once.
//   - An unbounded audit: by default each store keeps about the last 100,000 attempts
//     (DefaultAuditMaxLen, pgstore.DefaultAuditMaxLen), enough to look up any recent
//     unknown outcome; the chaos harness keeps them all.
//
// A store's client must not retry on its own: a retried commit is a second attempt that
// nobody recorded. NewRedisStore refuses a go-redis client with retries (create it with
// MaxRetries: -1, as NewRedisClient does, with the options of election.ClientOptions).
//
// # History
//
// A Recorder is told about every request before it is sent and of its result after: the
// chaos harness writes them as its history (docs/history.md), and its checker proves
// from them and from the audit that nothing stale was accepted.
package listener
