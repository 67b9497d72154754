// Package etcdelect runs etcd's election, go.etcd.io/etcd/client/v3/concurrency, as the
// elector of the targets etcd and etcd-fenced, used the way its godoc teaches: a Session
// (a lease kept alive by the client) with the node's lease as its TTL, NewElection on a
// key prefix, Campaign (it blocks until this session's key is the oldest under the
// prefix), lead until the session's Done fires or the node stops, then Resign and revoke
// the session's lease. After a term, or a session lost while campaigning, it campaigns
// again on a new session, so every term has a key of its own.
//
// The term's token is the election key's create revision (Election.Rev): etcd's revision
// counter is global and only grows, so a newer term's key has a greater one. For
// etcd-fenced it is the fencing token that the Redis store checks; for etcd the store
// never sees it, and it only tells the terms apart in the history.
//
// What the library gives and what this package adds. The session's keep-alive closes
// Done when the client has heard no keep-alive answer for the lease's TTL, counted from
// the last answer's arrival and checked once a second: a leader can go on up to the
// answer's travel time plus a second after etcd expired its lease. So, as the other
// targets do (docs/targets.md), a leader also keeps a local lease deadline on its own
// clock, from before each request that refreshed the lease: it sends a keep-alive of its
// own (KeepAliveOnce) right after Campaign returns (the acquire of the history) and then
// every renew interval (the renewals), besides the session's, and ends its term when the
// deadline passes, a keep-alive finds the lease gone, or Done fires, whichever comes
// first. Its own keep-alives only make the lease last longer in etcd, never shorter. The
// session's TTL is whole seconds, the lease rounded up (at least 1 s): a lease of 1.5 s
// is a 2 s session; etcd may grant more still (its minimum TTL is 1.5 election timeouts,
// 1.5 s by default, so 2 s); the local deadline keeps the node's lease.
//
// What it guarantees: a term's context is cancelled no later than its local deadline,
// whether or not etcd answers; each term has its own key and token. What it does not:
// mutual exclusion (a paused or slow leader outlives its lease; the store's fence, for
// etcd-fenced, is what refuses its writes), and anything about an unfenced cursor write.
//
// The client (NewClient) has the README's DialTimeout, a deadline on every request, and
// the library's retries, which re-send a write only when it never left the client. The
// keep-alive settings are the client's defaults.
//
// This package is built only into the chaos build of fenceline node: its etcd client
// (gRPC) stays out of the default build.
package etcdelect
