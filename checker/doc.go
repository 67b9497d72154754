// Package checker judges a fenceline run: it reads the histories the nodes recorded,
// the faults the harness injected and the final state of the store (history.Run), and
// returns a typed, JSON-serializable Result with a verdict per check. It never imports
// the code it judges (election, listener) or the code that broke it (nemesis).
//
// # What it proves
//
// Given that the histories are faithful records (each node writes an invoke before a
// request and a completion after it, on the host clock), Check establishes:
//
//   - linearizability: the loads and commits of every node, taken together, are
//     linearizable with respect to a fenced cursor register whose state is (cursor,
//     highest accepted token) and which accepts commit(token, from, to) exactly when
//     token ≥ highest accepted token and cursor = from. The final store read is
//     checked as a last load. A commit whose outcome is unknown (info, or no completion)
//     is resolved from the store's audit stream when the audit says what happened
//     (accepted; rejected; absent from a complete audit: it never reached the store);
//     otherwise it stays open-ended (porcupine's Return = MaxInt64) and may or may not
//     have taken effect. It is decided first along the chain of applied commits
//     (decideChain, O(n log n) time, O(n) memory, no search): every commit that may
//     apply moves the cursor forward, so states are unique, the chain of states follows
//     from the commits' from/to values, and linearizability reduces to bounds on where
//     each commit of the chain can be placed in time; the argument is in decideChain's
//     comment. Where that argument does not reach (a commit that does not move the
//     cursor forward, several paths of unknown commits with no witness found), and to
//     explain a violation, porcupine decides: the history is cut only at points where
//     no operation is in flight and every linearization of the prefix ends in the same
//     register state (see forEachCut), the window of an open-ended commit is only
//     narrowed where the model proves it can no longer take effect (see
//     boundUnknowns), pieces with no concurrency are decided by replaying the model,
//     and the other pieces by porcupine. Differential tests check both against
//     porcupine on uncut histories (random, register-like, coarse clocks, many
//     unknown outcomes); Options.CrossCheck runs porcupine on every history.
//   - no stale write: the store never accepted a commit whose token is lower than one
//     it had accepted before (in the audit's order, and in real time in the histories),
//     and a Redis store rejected exactly those as stale-token, whatever their cursor;
//   - unique tokens: no token was acquired twice, and every accepted commit carries a
//     token its own node acquired;
//   - exactly once: the sink holds events InitialCursor+1..cursor once each, in order,
//     and the balances equal those the events imply (Options.ExpectedBalances);
//   - cursor monotonic: the cursor never moves backwards, in the audit's order nor in
//     real time, and the store never accepted a commit expecting another cursor;
//   - progress: a commit invoked after the final heal was accepted within a bound;
//   - audit consistency: the nodes' records of their commits agree with the audit;
//   - lease exclusion: every interval in which two nodes believed they led, longer than
//     the drift margin (lease TTL/20), is explained by a pause or clock fault of the
//     earlier leader (or by Redis losing the lease, or a stalled elector), or by a stall
//     of its process that no fault injected: its lease had run out by its own clock
//     before the other acquired and it recorded nothing while late (stallExplained);
//   - lease grant: no acquire of a newer term returned while an older term's lease, by
//     Redis's own expiry from its last successful acquire or renewal sent, still ran,
//     but where that term was released or taken over, or Redis lost data (leaseGrant);
//   - unexplained leader change: every handover before the final heal follows a fault,
//     or a stall of the old leader, or of Redis (its renewal and another node's
//     request both unanswered), that no fault injected (changeStalled);
//   - failover budget (only with Options.Budgets): no window statistic over budget.
//
// It also measures, without judging: the leadership terms and the intervals in which
// two nodes each believed they led; leader changes; fencing rejections; failover
// windows per fault kind (see Window for which faults get one); and commit throughput
// outside fault windows against the fault-free warm-up (Throughput, which reports flag).
//
// # What it does not prove
//
//   - Nothing about operations that were not recorded. A node that loses or invents
//     history lines is caught only where the audit stream contradicts it.
//   - The audit stream is the store's own record. The checker trusts it to say whether
//     an unknown commit took effect; it does not trust it for anything the histories
//     can show.
//   - Real-time order is the host clock's. Nodes of one run share one host, so their
//     timestamps are comparable; a jump of the host's clock during a run would corrupt
//     the order (the clock fault moves a node's injected clock, not the host's).
//   - The final store read is assumed to follow every recorded operation (the harness
//     stops the nodes first); Options.NoFinalRead leaves it out.
//   - Overlaps of leadership are what the nodes believed, bounded by what they
//     recorded (a term with no recorded end ends at its last sign of life).
//   - Failover windows are attributed to faults by a documented rule, not by causality.
//   - Undecided is not valid: a piece of history too large to check (Options.MaxPieceOps),
//     a timeout, a cancelled context, or a missing final store read make the verdict
//     Unknown.
//
// # Resources
//
// Time and memory are bounded by the size of the input, whatever values it holds: a
// cursor far beyond the sink is reported as lost events in ranges (O(sink log sink)),
// expected balances are computed only when the sink bounds the cursor, timestamps
// above history.MaxTime are bad input, terms and their overlaps are found by sorting
// and sweeping. The chain decision is O(n log n); porcupine runs only where it gives
// up (its memory grows with the square of a piece's size, hence the cut) or to
// explain a violation (then within 10 s a piece). Measured on two shared cores: a
// simulated history of a million loads and commits is checked in about 2 s and a
// quarter of a gigabyte beyond the history.Run itself, which holds about half a
// gigabyte (history.LoadRun reads it in about 2.5 s); a register run of 236,000
// operations with 16 ms timestamps is loaded and checked in under a second and 250 MB.
// Go's collector lets the heap grow to twice what is live: a process that must stay
// under a memory budget should set GOMEMLIMIT.
package checker
