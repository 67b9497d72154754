// Package history is the one format that fenceline's nodes write and its checker reads.
//
// A history is a stream of JSON lines (one Event per line). Every operation a node
// performs against Redis — loading the cursor, committing a batch, acquiring, renewing
// or releasing the lease — is written twice: once as an invoke line before the request is
// sent, and once as a completion line (ok, fail or info) when its outcome is known.
// Completion type info means the outcome is unknown (a timeout, a lost connection).
// A node that dies mid-operation leaves an invoke without a completion; readers treat it
// as info. Faults injected by the harness use the same format with Kind "fault".
//
// Timestamps are host wall-clock nanoseconds (time.Now().UnixNano() of the real clock,
// never a node's injected clock), so that histories of nodes on one host can be merged.
// The format is documented in docs/history.md; fields are only ever added.
package history
