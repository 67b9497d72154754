// Package pgstore is a fenced listener.Store, and a fence for any SQL work (Fence), in
// PostgreSQL: the cursor, the highest accepted fencing token and a batch's effects are
// written in one transaction, and the token is checked by the database.
//
// # Layout
//
// Setup creates, if missing, two tables (names configurable) and the cursor's row:
//
//	fenceline_cursor (name text PRIMARY KEY, cursor bigint, token bigint)
//	fenceline_audit  (seq bigint identity PRIMARY KEY, name, op, node, token,
//	                  from_cursor, to_cursor, result, error, time timestamptz)
//
// One row of the cursor table per Config.Name (the election's name), so several
// listeners can share the tables.
//
// # The commit, and why it is safe
//
// A commit is one transaction at READ COMMITTED:
//
//	UPDATE fenceline_cursor SET cursor = $to, token = $token
//	 WHERE name = $name AND token <= $token AND cursor = $from
//
// If it updated the row, the batch's effects run (Config.Effects: your SQL, on the same
// transaction), an "ok" audit row is inserted, and the transaction commits. If it did not,
// the row is read to say why (stale-token if the stored token is above the writer's,
// cursor-conflict otherwise), a rejection is audited, and the transaction commits with
// nothing else in it.
//
// The UPDATE is the fence. Under READ COMMITTED, PostgreSQL evaluates its WHERE on the
// newest committed version of the row and locks the row before writing: if another
// transaction has updated the row and not yet finished, the UPDATE waits for it, then
// evaluates the WHERE again on the version that transaction left (or the old one, if it
// rolled back). So the check and the write are one atomic step with respect to every
// other commit of that cursor, and the row lock is held until COMMIT: effects of an
// accepted batch run while no other commit of the cursor can pass its fence, so accepted
// batches and their effects are applied one at a time, in cursor order, and a writer
// whose token is below an accepted one can never pass after it. A transaction that does
// not commit (a crash, a timeout, an error in the effects) leaves nothing: cursor,
// effects and audit row go together.
//
// REPEATABLE READ or SERIALIZABLE would be just as safe but would fail a commit that
// meets a concurrent one (a serialization error) where READ COMMITTED waits and decides.
//
// The reason given for a rejection comes from a SELECT after the UPDATE, which may see a
// newer version of the row; since the stored token and cursor only grow, a stored token
// above the writer's then was (or became, while the commit was in flight) a valid reason,
// and a stored token at or below the writer's means the UPDATE's cursor check failed.
//
// # Effects
//
// Config.Effects runs on the commit's transaction after the fence has passed. It must
// use only that transaction (tx), and must not commit or roll it back. An error from
// PostgreSQL in it (a constraint violated, say) rolls the whole commit back: the commit is
// rejected with listener.ErrInvalidBatch (audited as bad-argument in a transaction of its
// own), except a serialization failure or deadlock, whose outcome is reported as unknown
// so that the listener reloads and tries again.
//
// # Work that is not a feed's
//
// Fence.Do runs your function in the same kind of transaction, after
//
//	UPDATE fenceline_cursor SET token = $token WHERE name = $name AND token <= $token
//
// has passed: the same row, lock and audit as the commits (from_cursor and to_cursor are
// 0), so a feed's commits and other fenced work of one name fence each other out. Store
// is a Fence whose commits also move the cursor (Store.Fence returns it).
//
// # What it does not guarantee
//
// The fence protects what the transaction writes. Effects that leave the database (a
// message sent from Effects) are not fenced. The guarantees hold for one database: a
// failover to an asynchronous standby that lost commits can move the cursor back.
//
// The audit keeps about the last Config.AuditMaxLen attempts of the cursor (trimmed in
// accepted commits, every hundredth row); AuditUnbounded keeps them all.
package pgstore
