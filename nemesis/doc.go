// Package nemesis injects and heals faults in a fenceline cluster.
//
// One small type per fault kind, each able to inject and to heal, acting on a Backend —
// the small interface this package defines for what the faults need (processes, clocks,
// the links to Redis, Redis's process, the nodes' failpoints; ctx on every call), which every backend's
// backend.Backend satisfies — so that every fault runs unchanged on every backend. A Schedule of
// faults is generated from a seed: the same seed and options give the same schedule
// (which node is the leader when a fault fires is up to the run, so the resolved target
// is not part of the schedule, only the rule "leader" or "node k"). The failpoint
// faults (failpoint.go) always aim at the leader, and arm failpoints that stall it at
// the moment that matters rather than wherever a random signal lands. A targeted
// schedule (targeted.go) does the same for the other node faults: each step waits for
// a moment of the leader's life (just after an acquire, before a commit, at a renewal,
// during a release), held there by a failpoint armed with block, and lands on the node
// held at it.
//
// The package knows nothing of checking: it only acts, and says what it did.
package nemesis
