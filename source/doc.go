// Package source is fenceline's deterministic event source: the environment the listener
// ingests from, not the system under test.
//
// Event i (i >= 1) is a payment between two accounts of a small simulated ledger, derived
// from i alone by a fixed hash (At). The same i gives the same event on every run, on every
// machine, so the checker knows exactly which events must end up in the store and what the
// ledger's balances must be after any prefix of them (Balances).
//
// Server serves the events over HTTP in the shape of a Stellar Horizon payments endpoint:
// GET /events?cursor=C&limit=N returns the events C+1 .. C+N that are available, in order,
// with HAL links. Events become available at a configurable rate (or all at once).
//
// What it guarantees: At and Balances are pure and agree with each other; the server never
// returns an event that is not yet available, never skips one, and returns them in order of
// id (the paging token). Ids are contiguous: event i has id i.
//
// What it does not: it keeps no per-client state and makes no attempt to look like Horizon
// beyond the fields fenceline uses (amounts are integers, not 7-decimal strings; only
// ascending order is served; there is no streaming mode).
package source
