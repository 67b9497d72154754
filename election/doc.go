// Package election elects one leader among several instances with a lease in Redis, and
// gives every term a fencing token.
//
// Start with a client from NewClient (it never re-sends a command) and New. Then either
// hold the lock around a job, with Acquire (or TryAcquire) and Lock.Release, or give Run
// a lead func that works while its term lasts. Either way, pass the token with every
// write to a store that checks it (package listener and its fences; package
// listener/fenced creates the elector and its store at once): the election alone cannot
// stop a holder that lost its lease unawares, the fence can (see below). The repository's
// examples/go-service is a service to copy: a fenced singleton job, /healthz, /metrics
// and a handoff on SIGTERM, run valid under the chaos harness's --nemesis all.
//
// # Protocol
//
// All keys of an election share the Redis Cluster hash tag "{name}" (name defaults to
// "fenceline"):
//
//	{name}:lock      the lease: "<instance>:<token>", with a TTL of LeaseTTL
//	{name}:token     the token counter, INCRed once per won election, never expires
//	{name}:released  pub/sub channel; a release publishes the released lock value
//
// Each step is one Lua script, sent once (never retried):
//
//   - acquire: SET lock "<instance>:<token>" NX PX LeaseTTL and, only if that succeeded,
//     INCR the counter (token is the counter's next value). A lease that is held is left
//     alone; the script returns its value and PTTL.
//   - renew: PEXPIRE lock LeaseTTL if lock still holds this term's value.
//   - release: DEL lock and PUBLISH the value if lock still holds this term's value.
//
// The leader keeps a local lease deadline on its monotonic clock: the Clock reading taken
// before the last successful acquire or renew was sent, plus LeaseTTL - DriftMargin. When
// that passes without a newer successful renewal it steps down on its own (the term's
// context is cancelled), whether or not Redis answers; a renewal that Redis rejects ends
// the term at once. Standbys stay connected and subscribed: a graceful release wakes them
// within a round trip; otherwise they retry when the lease's PTTL runs out or after
// RetryInterval, whichever is sooner.
//
// # Lost replies
//
// A request that timed out is not a request that did not run: a stopped or partitioned
// Redis queues it and runs it later. An acquire whose reply was lost may have taken the
// lock, a renewal may have extended it. Nothing is re-sent blindly; instead, when an
// acquire attempt finds the lock holding this instance's own value, the elector resolves
// it at once. If one of its acquires got no answer since its last term, a token above
// every token it has seen issued can only come from such an acquire: it adopts that term
// (a compare-and-PEXPIRE of the value, recorded as an acquire with that token). Any other
// value of its own is a lease no term uses (a term that ended after lost renewals, an
// earlier process of this instance): it releases it.
// Either way the lease is not wasted: after Redis was stopped for longer than the lease,
// the first new term starts within about RetryInterval of Redis answering again
// (BenchmarkLostReply, 20 rounds: p50 72ms, p99 111ms with a 100ms RetryInterval), not a
// lease later.
//
// # What it guarantees
//
//   - Tokens strictly increase: every term's token is greater than every token the counter
//     issued before it. A token is issued to one acquire only. This holds as long as the
//     counter survives, i.e. Redis runs with an append-only file and does not fail over to
//     a replica that lost writes; without persistence a restarted Redis issues tokens again.
//   - Local step-down: a leader's term context is cancelled no later than LeaseTTL -
//     DriftMargin after the send time of its last successful acquire or renewal, as
//     measured by its Clock (plus the scheduling delay of one timer). Redis expires the
//     lease at least LeaseTTL after it executed that request, which was after it was sent,
//     so while this process's clock and Redis's run at rates within DriftMargin/LeaseTTL of
//     each other, the leader has stepped down before anyone else can acquire.
//   - Renewal and release act only on this term's own lock value: they never extend or
//     delete a lease that another term holds. Adoption and the release of an unused
//     lease act only on a value of this instance.
//   - Within one process, a token is led in at most one term: a term is adopted only with
//     a token above every token the elector has seen issued, its own terms' included.
//
// # What it does not guarantee
//
// Mutual exclusion. A process paused (GC, SIGSTOP, a frozen VM) past its deadline, a
// clock that jumps or runs slow, a delayed packet or a Redis failover can each let two
// instances believe they lead at once, and lead keeps running until it notices that its
// context is cancelled. That is what the fencing token is for: pass Term.Token with every
// write, and have the store itself reject a write whose token is lower than one it has
// already accepted. The elector gives each term a distinct, increasing token; only the
// store can make a stale leader harmless.
//
// # Redis client
//
// Build the client with MaxRetries: -1 (see ClientOptions and NewClient); New refuses a
// client that retries (ErrRetryingClient). go-redis re-sends a timed-out command by
// default, and a silently re-sent acquire, renew or release corrupts the history that
// Recorder keeps: one invoke would stand for two executions.
//
// Behind Sentinel or in a Redis Cluster, an asynchronous failover can lose acknowledged
// writes, the token counter's included. AddWait makes the client follow every script
// with WAIT in the same pipeline: a write counts only once it is on that many replicas,
// and a miss is an unknown outcome (ErrWaitMissed), for the election and for a fenced
// store on the same client alike.
//
// # A lock API beside Run
//
// Acquire (blocks until held, or until its ctx ends) and TryAcquire (one attempt) return
// a held *Lock: its fencing Token, a Context that ends when the lease does (with
// context.Cause giving the reason, as Run's term context does), and Release, which
// releases the lease and wakes the standbys at once. The lease is renewed in the
// background until Release or its loss. It is Run for one term, the same loop with the
// same guarantees, logs, metrics and Recorder steps: a singleton job or a migration runner
// that wants "do this once, fenced" needs no lead func. A Release hands the lock to an
// Acquire blocked in another elector on its own client in 0.54-0.65ms at p50 and
// 4.3-5.7ms at p99 (BenchmarkLockHandoff, three runs of 200 handoffs on loopback, on a
// busy 2-core machine; lease and RetryInterval 10s, so only the release notice explains
// it).
//
// # A lock taken some other way
//
// Leadership is the term loop on its own: given a Term and a Lease (the renew and
// release of a lock that something else acquired, such as another lock library), Lead
// keeps the same local deadline, renews, steps down, records and releases as an Elector's
// term does. The local step-down guarantee holds if Term.Start is a Clock reading from
// before the request that set the lock was sent; the token guarantees hold only if the
// caller draws Term.Token from a counter that never repeats, as the acquire script does.
//
// # Observability
//
// Logs (Config.Logger, silent by default) use constant messages — became-leader,
// lost-leadership, renew-failed, released, release-failed, acquire-failed, adopted,
// lead-overdue, lead-returned-late — with the data in attributes (token, reason, error). Metrics are an interface with a no-op
// default (NopMetrics; NewPrometheusMetrics exports them; a write rejected as stale is
// counted by the fenced store that rejected it, not here), and Recorder sees every request
// with its outcome: ok, fail, or unknown. Config.OnNewLeader is called with each new lock
// holder the elector observes, so callers need not poll Status; Check(maxTolerable) is a
// health check that fails for a leader stuck past its local lease deadline.
//
// # A lead that does not return
//
// Run waits for lead to return before it campaigns again, and lead must honour its
// term's context. If it has not returned Config.LeadGrace (default LeaseTTL) after its
// term ended, the elector logs lead-overdue, counts it, fails Check with ErrLeadOverdue
// and calls Config.OnLeadOverdue. By default it does not exit the process: set
// OnLeadOverdue to os.Exit, as client-go's users are told to, or serve Check to a
// liveness probe.
package election
