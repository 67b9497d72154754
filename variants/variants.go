//go:build chaos

// Package variants holds the deliberately broken designs that fenceline's self-validation
// runs to prove that the harness can fail. EVERY VARIANT BUT Reference IS BROKEN ON
// PURPOSE. They live here, in one place, so that no production code path can reach them:
// the package exists only in a chaos build (go build -tags chaos), and even there
// `fenceline node` accepts a variant other than reference only together with --chaos.
//
// Each variant names the fault kinds that expose it. `make validate` runs each under its
// faults and requires the checker to call the runs invalid.
package variants

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/internal/namelist"
	"github.com/fenceline/fenceline/listener"
	"github.com/fenceline/fenceline/source"
)

// Names of the variants.
const (
	Reference         = "reference"
	NoFence           = "no-fence"
	ClientCheck       = "client-check"
	StringCompare     = "string-compare"
	LeaseOnly         = "lease-only"
	NonAtomicRelease  = "non-atomic-release"
	VolatileRedis     = "volatile-redis"
	UncheckedRelease  = "unchecked-release"
	NoStepDown        = "no-step-down"
	NoTokenCheck      = "no-token-check"
	NoCursorCheck     = "no-cursor-check"
	NonAtomicTakeover = "non-atomic-takeover"
)

// Variant describes one design.
type Variant struct {
	Name        string
	Description string
	// Faults are the fault kinds that expose the variant.
	Faults []string
	// Unsafe is true when the variant must be caught (the checker must find runs under
	// Faults invalid): by the store's checks, or, for a design that breaks only the
	// lease's mutual exclusion (NonAtomicRelease, UncheckedRelease, NoStepDown), by
	// lease-exclusion.
	Unsafe bool
	// Store is the store its self-validation runs on ("" for Redis, "postgres"), and
	// Workload its workload ("" for the listener); the reference it is compared with
	// runs on the same.
	Store, Workload string
	// Takeover is true when the variant and the reference it is compared with run with
	// takeover on disconnect (election.Config.TakeoverOnDisconnect).
	Takeover bool
}

var all = []Variant{
	{Reference, "the real design: fenced commit in one Lua script, lease with local step-down",
		faults.All(), false, "", "", false},
	{NoFence, "the cursor and effects are written with a plain write, whoever writes last wins; an in-flight write is not abandoned when the term ends",
		[]string{faults.Delay, faults.FPLateCommit}, true, "", "", false},
	{ClientCheck, "the writer checks the fence itself: it reads the stored token and cursor in a round trip of its own, ahead of the write (right after its previous commit, while the next batch is fetched), compares, then writes unfenced",
		[]string{faults.Delay}, true, "", "", false},
	{StringCompare, "the store compares tokens as strings, so token 10 is older than 9 (shown by any run: its token counter starts a few below a power of ten, harness.BoundaryStart)",
		[]string{faults.Kill, faults.Stop}, true, "", "", false},
	{LeaseOnly, "no fence: the store accepts any write; the leader writes only while its local lease deadline holds",
		[]string{faults.Delay}, true, "", "", false},
	{NonAtomicRelease, "the lease is released with GET then DEL in two round trips, which can delete a newer leader's lock",
		[]string{faults.FPReleaseRace}, true, "", "", false},
	{VolatileRedis, "Redis runs without an append-only file, so a restart resets the token counter and tokens repeat",
		[]string{faults.RedisRestartVolatile}, true, "", "", false},
	{UncheckedRelease, "the lease is released with a plain DEL, without checking that the lock is still ours: a late release deletes a newer leader's lock",
		[]string{faults.FPLateRelease}, true, "", "", false},
	{NoStepDown, "the leader ignores its local lease deadline and leads until Redis rejects a renewal",
		[]string{faults.FPLateCommit, faults.PartitionBlackhole}, true, "", "", false},
	// Register clients hold tokens of their own and reload the cursor after a conflict:
	// a superseded one then commits at once. A leader's term ends too soon after it is
	// superseded for the listener workload to show it reliably.
	{NoTokenCheck, "the fence checks the cursor but not the token (PostgreSQL: the conditional UPDATE without `token <= $token`): a writer whose token was superseded passes once it has reloaded the cursor",
		[]string{faults.Pause}, true, "postgres", "register", false},
	// The listener's own run: the race needs the old leader to commit between the new
	// leader's load and its first commit, which fp-load-race arranges.
	{NoCursorCheck, "the commit script checks the token but not the cursor: a commit that lands between a new leader's load and its first commit (carrying the old leader's token, still the highest accepted) makes the new leader's commit apply the same events again",
		[]string{faults.FPLoadRace}, true, "", "", false},
	// Caught by lease-exclusion: the store's fence rejects the overwritten standby's
	// late writes, but two nodes lead at once with no fault to explain it.
	{NonAtomicTakeover, "takeover on disconnect trusts the standby's poll: once it saw the leader's presence gone, it takes the lock with INCR and a plain SET, without checking again, in the same step, that the lock still holds the vanished leader's value; two standbys that saw the same crash both take over, and the second overwrites the first's fresh lease",
		[]string{faults.FPTakeoverRace}, true, "", "", true},

	// The known-bug zoo (zoo.go, docs/known-bugs.md): published split-brain bugs. Their
	// faults are those that reach each here; `fenceline validate --zoo` runs them all
	// at the default settings instead (every fault, the random schedule, the probes).
	{LeaseNotRechecked, "etcd-io/etcd#11408: a won acquire is trusted whenever its reply comes: the term's first deadline is measured from the reply, not from the send, and not checked on arrival; a node stalled between winning and leading (fp-stall-new-leader) then leads for a whole lease next to the node that took the lease meanwhile, and writes to a resource without a fence (Jepsen's lock-protected register had none)",
		[]string{faults.FPStallNewLeader}, true, "", "", false},
	{StaleObservedRecord, "kubernetes/kubernetes#67651: a candidate reads the lease record (GET, PTTL) and, finding it free, writes its own with INCR and a plain SET, with no compare-and-swap on what it read; candidates woken together (a release notice, an expiry) each overwrite the one before, and every one believes it won",
		[]string{faults.Stop, faults.Kill}, true, "", "", false},
	{NeverTold, "kubernetes/kubernetes#23731: the elector stops renewing at its deadline but tells nobody: the term's context is not cancelled (only a shutdown ends it) and the node believes, and records, that it leads until its work stops (a write the fence rejects)",
		[]string{faults.Pause, faults.Delay, faults.PartitionBlackhole}, true, "", "", false},
	{WorkAfterDeadline, "cilium/cilium#42920: the work loop learns of the lost term only after a blocking stop hook, one lease TTL after the renew deadline, and writes meanwhile to a resource without a fence",
		[]string{faults.Pause, faults.Delay, faults.PartitionBlackhole}, true, "", "", false},
	{WallClockLease, "the Redlock critique, client-go's observedTime: a candidate judges the holder's lease expired by its own clock (now + PTTL noted at its last look) and then takes the lock with a plain SET; a clock that jumps forward ends a live leader's lease",
		[]string{faults.Clock}, true, "", "", false},
	{LateToken, "bsm/redislock#93: the lock is taken with SET NX and the token minted after it by a separate INCR, then written into the lock (SET XX); an acquirer held up between the two gets a larger token than the holder that took the lock after it, overwrites that holder's lock, and, trusting its grant as a lock library does, leads",
		[]string{faults.Pause, faults.Delay}, true, "", "", false},
	{SplitBrainLock, "Jepsen, Hazelcast 3.8.3: an AP lock service (a member embedded in each node) grants on both sides of a partition: the holder leads on while the service does not answer (its side keeps the lock), and a node that hears nothing from the service for a lease TTL forms a cluster of its own, where the holder is dead and the lock free, and grants itself the lock with the next token of its own copy of the counter",
		[]string{faults.PartitionBlackhole, faults.Delay}, true, "", "", false},
	{RedlockMajority, "the Redlock debate (antirez, Kleppmann): the lock is taken on a majority of three independent Redis servers (SET NX PX on each, undone unless a majority took it), extended and released on each, two of them without persistence (a deployment: the harness runs them, variants.RedlockServers); a leader that holds a bare majority loses one server to a restart without persistence, and a standby locks it and the free one: a majority, while the leader's lease runs",
		[]string{faults.RedlockRestart}, true, "", "", false},
}

// ReferenceFaults are the faults under which the reference runs to be compared with v
// (`make validate`): v's faults, except that the reference's requirement of a
// persistent Redis stays met. redis-restart-volatile becomes redis-restart, which the
// schedule places at the same times, with the append-only file on: without it the
// reference repeats tokens too, by design, and VolatileRedis is exactly that deployment.
func (v Variant) ReferenceFaults() []string {
	out := make([]string, len(v.Faults))
	for i, f := range v.Faults {
		if f == faults.RedisRestartVolatile {
			f = faults.RedisRestart
		}
		out[i] = f
	}
	return out
}

// All returns every variant, the reference first.
func All() []Variant { return append([]Variant(nil), all...) }

// ErrUnknown is returned for a name that is not a variant.
var ErrUnknown = errors.New("variants: unknown variant")

// ByName returns the variant called name.
func ByName(name string) (Variant, error) {
	return namelist.Find(all, func(v Variant) string { return v.Name }, name, ErrUnknown)
}

// redisStore is the Redis store of the demo ledger's events.
type redisStore = listener.RedisStore[source.Event]

// Store returns the cursor store of the named variant. Its broken scripts are installed
// through the listener's chaos seam, which a default build does not have.
func Store(name string, client redis.UniversalClient, cfg listener.RedisConfig[source.Event]) (listener.Store[source.Event], error) {
	if _, err := ByName(name); err != nil {
		return nil, err
	}
	s, err := listener.NewRedisStore(client, cfg)
	if err != nil {
		return nil, err
	}
	switch name {
	case NoFence:
		listener.SetCommitScriptForChaos(s, unfencedScript)
		return uncancellable{s}, nil
	case LeaseOnly, WorkAfterDeadline, LeaseNotRechecked:
		// Two of the zoo's bugs do harm only to a resource without a fence (as
		// shipped: Cilium's CIDR allocations, Jepsen's lock-protected register); the
		// others keep the fence, and lease-exclusion sees them.
		listener.SetCommitScriptForChaos(s, unfencedScript)
	case StringCompare:
		listener.SetCommitScriptForChaos(s, stringCompareScript)
	case ClientCheck:
		listener.SetCommitScriptForChaos(s, unfencedScript)
		return &clientCheck{redisStore: s}, nil
	case NoTokenCheck:
		listener.SetCommitScriptForChaos(s, noTokenCheckScript)
	case NoCursorCheck:
		listener.SetCommitScriptForChaos(s, noCursorCheckScript)
	}
	return s, nil
}

// Plain returns a store that writes the cursor and the effects whoever writes (one
// atomic script without the fence's check, audited like the reference's), as LeaseOnly's
// store, and the plain write of the unfenced targets (package targets), what a user of a
// lock library writes without a fence.
func Plain(client redis.UniversalClient, cfg listener.RedisConfig[source.Event]) (listener.Store[source.Event], error) {
	s, err := listener.NewRedisStore(client, cfg)
	if err != nil {
		return nil, err
	}
	listener.SetCommitScriptForChaos(s, unfencedScript)
	return s, nil
}

// The broken scripts are the reference script with its check replaced, so that they
// differ from it in exactly one place (a test makes sure the replacement happened).
const referenceCheck = `if cmpint(ARGV[3], stored) < 0 then
  result = 'stale-token'
elseif moves and cmpint(ARGV[4], cursor) ~= 0 then
  result = 'cursor-conflict'
end`

var (
	unfencedScript     = strings.Replace(listener.CommitScriptForChaos, referenceCheck, `-- no check: whoever writes last wins`, 1)
	noTokenCheckScript = strings.Replace(listener.CommitScriptForChaos, referenceCheck, `if moves and cmpint(ARGV[4], cursor) ~= 0 then
  result = 'cursor-conflict'
end`, 1)
	noCursorCheckScript = strings.Replace(listener.CommitScriptForChaos, referenceCheck, `if cmpint(ARGV[3], stored) < 0 then
  result = 'stale-token'
end`, 1)
	stringCompareScript = strings.Replace(listener.CommitScriptForChaos, referenceCheck, `if ARGV[3] < stored then
  result = 'stale-token'
elseif moves and cmpint(ARGV[4], cursor) ~= 0 then
  result = 'cursor-conflict'
end`, 1)
)

// uncancellable finishes a commit it has started even when the term ends meanwhile, as a
// listener does that takes no context: the write lands whenever it lands.
type uncancellable struct{ *redisStore }

func (u uncancellable) Commit(ctx context.Context, token, from int64, events []source.Event) error {
	return u.redisStore.Commit(context.WithoutCancel(ctx), token, from, events)
}

// clientCheck checks the fence in the client, in a round trip of its own, and then
// writes unfenced in another: a check-then-act race. The check is made ahead of the
// write, as a listener that asks "am I still the leader?" before it fetches and applies
// a batch does: right after each commit it reads the stored token and cursor for the
// next batch, and compares them with that batch's token and cursor when the batch is
// ready (the first batch of a term is checked just before its write). Whatever happens
// between the check and the write (the wait for events, a pause, a delay, a newer
// leader's commits) goes unseen.
//
// A check made just before the write leaves a window of one round trip, well under a
// millisecond, and the harness's faults, injected at random times, seldom land in it:
// measured with seeds 1-3 and 60 s runs, 1 of 17 pauses and delays did (a delay injected
// between the check's reply and the write), so 1 run in 3 was caught. A production GC
// pause lands there eventually; a self-validation must not wait for it.
//
// Its fault is the delay: a write sent after the check and slowed past the lease lands
// after a newer leader's commits (measured: 9 of 11 delays of the leader). A pause does
// not expose it: on SIGCONT the elector's local deadline has passed, and the term's
// context is cancelled before the next write goes out (0 of 8 pauses of the leader).
type clientCheck struct {
	*redisStore
	mu    sync.Mutex
	ahead *fenceCheck // the check made for the next commit; nil if none
}

// fenceCheck is what a check read: the stored cursor and token, for a writer's token.
type fenceCheck struct {
	token, cursor, stored int64
}

func (c *clientCheck) Commit(ctx context.Context, token, from int64, events []source.Event) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	chk := c.ahead
	c.ahead = nil
	if chk == nil || chk.token != token {
		cursor, stored, err := c.redisStore.Load(ctx)
		if err != nil {
			return err
		}
		chk = &fenceCheck{token: token, cursor: cursor, stored: stored}
	}
	if token < chk.stored {
		return &listener.RejectedError{Reason: listener.ErrStaleToken, Token: token, From: from, StoredToken: chk.stored, StoredCursor: chk.cursor}
	}
	if chk.cursor != from {
		return &listener.RejectedError{Reason: listener.ErrCursorConflict, Token: token, From: from, StoredToken: chk.stored, StoredCursor: chk.cursor}
	}
	if err := c.redisStore.Commit(ctx, token, from, events); err != nil {
		return err
	}
	// The check for the next batch, made now, off the next write's path.
	if cursor, stored, err := c.redisStore.Load(ctx); err == nil {
		c.ahead = &fenceCheck{token: token, cursor: cursor, stored: stored}
	}
	return nil
}
