// Package targets puts Redis lock libraries that people use for leader election under the
// same harness as fenceline's own election: each target elects a leader with a real
// library, used the way its README teaches, and runs the same listener loop.
//
//	reference         election (fenceline's own lease, release notice, fenced store)
//	redsync           go-redsync/redsync v4 mutex, plain cursor write (no fence)
//	redsync-fenced    the same mutex, a token from INCR after Lock, the fenced store
//	redislock         bsm/redislock, plain cursor write (no fence)
//	redislock-fenced  the same lock, a token from INCR after Obtain, the fenced store
//	etcd              etcd's concurrency election (package targets/etcdelect), plain write
//	etcd-fenced       the same election, the leader key's create revision as the token,
//	                  the fenced store
//	client-go              client-go's LeaderElector (package targets/clientgo), plain write
//	client-go-fenced       the same, a token minted by the record's compare-and-swap
//	client-go-transitions  the same, the record's LeaderTransitions as the token
//
// The etcd and client-go targets are listed here and built in packages
// targets/etcdelect and targets/clientgo, which only a chaos build links: etcd's client
// stays out of a production binary, and client-go's lock is a stand-in for the API
// server's Lease.
//
// Elector runs a Lock (one library's lease) as an election: a standby retries the
// library's acquire (with the library's own retry delays: it polls, there is no release
// notice), the leader extends the lock every renew interval, keeps a local lease deadline
// on its own clock from before each acquire or extend was sent, and ends the term when
// that deadline passes or an extend is refused. Right after the lock is taken the elector
// takes a number from the election's token counter (INCR): for a -fenced target it is the
// fencing token that the store checks; for an unfenced target the store never sees it,
// and it only lets the history tell the terms apart (who led when, failover windows,
// each number issued once).
//
// What it guarantees: a term's context is cancelled no later than its local deadline,
// whether or not Redis answers; with a -fenced target, a write of an older term is refused
// by the store once a newer term has written. What it does not: mutual exclusion (a
// paused or slow leader outlives its lease), and, for an unfenced target, anything about
// the cursor: its plain write is accepted whoever sends it, and the harness measures what
// that costs.
//
// The etcd targets elect with package targets/etcdelect, not with Elector: their lease
// is an etcd session, and Redis holds only the cursor.
//
// This package is in the default build: a -fenced target is a design a user may run in
// production (`fenceline node --target redsync-fenced`). The unfenced targets' store is
// built only into the chaos build, like the broken variants, because a plain write loses
// or duplicates events under the faults the harness injects.
package targets
