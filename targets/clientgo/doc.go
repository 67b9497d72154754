// Package clientgo puts client-go's leader election (k8s.io/client-go/tools/leaderelection)
// under fenceline's harness: its own LeaderElector, callbacks and timings, on a lock that
// stands in for the Kubernetes API server's Lease object.
//
// The lock backend is a stand-in; the election logic under test is client-go's own. There
// is no API server here, so Lock implements client-go's resourcelock.Interface over
// Redis: the LeaderElectionRecord is kept as JSON in a hash (RecordKey) with a version,
// and Update is a compare-and-swap on the version last observed, in one Lua script, as
// the API server checks a Lease's resourceVersion. Get returns json.Marshal of the
// record, as client-go's LeaseLock does (its times in whole seconds: client-go compares
// these bytes to tell that the leader renewed). The same script mints a fencing token
// from the election's token counter (election.TokenKey) when a new term starts (the
// holder changes, or AcquireTime does: client-go keeps AcquireTime on a renewal) and
// stores it beside the record; a renewal and a release keep it.
//
// Elector runs one LeaderElector per campaign, with ReleaseOnCancel, under a fresh
// identity (the instance id and a random suffix): the way client-go is used in a process
// that exits when it loses the lease and is restarted under a new id. The three durations
// are client-go's own (LeaseDuration, RenewDeadline, RetryPeriod); the defaults keep
// client-go's ratios 15 : 10 : 2. The targets differ in the fence:
//
//	client-go              none: the plain cursor write (the minted token only tells terms apart)
//	client-go-fenced       the token minted by the compare-and-swap
//	client-go-transitions  the record's LeaderTransitions + 1 (client-go creates the record with 0)
//
// What it guarantees: with a fenced target, a write of an older term is refused by the
// store once a newer term has written, if its token is lower. What it does not: mutual
// exclusion. client-go says so itself ("does not guarantee that only one client is
// acting as a leader"): a standby takes over LeaseDuration after it last saw the record
// change, judged on its own clock at the record's one-second granularity, while the
// leader stops only when RenewDeadline has passed without a renewal, and, with
// ReleaseOnCancel, after it has released the record, before OnStartedLeading's context
// is cancelled. The harness measures the overlap.
//
// client-go reads the system clock (its LeaderElector takes no clock), so the harness's
// clock fault does not reach it. The package is linked only into a chaos build
// (node/chaos_on.go): its lock is a stand-in, not a design to run in production.
package clientgo
