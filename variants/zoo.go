//go:build chaos

package variants

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/election"
)

// Names of the zoo's variants: published split-brain bugs, each written the way the bug
// was, in fenceline's terms (docs/known-bugs.md gives the sources).
const (
	LeaseNotRechecked   = "lease-not-rechecked"
	StaleObservedRecord = "stale-observed-record"
	NeverTold           = "never-told"
	WorkAfterDeadline   = "work-after-deadline"
	WallClockLease      = "wall-clock-lease"
	LateToken           = "late-token"
	SplitBrainLock      = "split-brain-lock"
)

// zooElector changes e for the zoo's variants; ok is false for a name that is not one.
func zooElector(name string, e *election.Elector) (ok bool, err error) {
	switch name {
	case LeaseNotRechecked:
		return true, election.SetTrustGrantForChaos(e)
	case StaleObservedRecord:
		return true, election.SetAcquireForChaos(e, staleObservedAcquire)
	case NeverTold:
		return true, election.SetNeverTellForChaos(e)
	case WorkAfterDeadline:
		return true, election.SetWorkLagForChaos(e, workLag)
	case WallClockLease:
		return true, election.SetAcquireForChaos(e, (&observedExpiry{}).acquire)
	case LateToken:
		if err := election.SetAcquireForChaos(e, lateTokenAcquire); err != nil {
			return true, err
		}
		return true, election.SetTrustGrantForChaos(e)
	case SplitBrainLock:
		if err := election.SetAcquireForChaos(e, (&splitBrainMember{}).acquire); err != nil {
			return true, err
		}
		return true, election.SetNoStepDownForChaos(e)
	}
	return false, nil
}

// workLag is how long WorkAfterDeadline's work goes on after its term ended: the
// default lease TTL, well past the point (the lease's expiry in Redis, a drift margin
// after the local deadline) where another node may lead.
const workLag = election.DefaultLeaseTTL

// staleObservedAcquire is client-go's tryAcquireOrRenew before kubernetes#67651 was
// fixed, on Redis: it reads the record (GET, PTTL), and if nobody holds it, it writes
// its own with a plain SET in further round trips, without a compare-and-swap on what it
// read. Candidates woken together (a release notice, an expiry) all read "free", and
// each SET overwrites the one before: every one of them believes it won.
func staleObservedAcquire(ctx context.Context, c redis.UniversalClient, lock, counter, instance string, ttl time.Duration, _ time.Time) (int64, bool, string, time.Duration, error) {
	holder, err := c.Get(ctx, lock).Result()
	switch {
	case err == nil:
		pttl, err := c.PTTL(ctx, lock).Result()
		return 0, false, holder, pttl, err
	case !errors.Is(err, redis.Nil):
		return 0, false, "", 0, err
	}
	token, err := c.Incr(ctx, counter).Result()
	if err != nil {
		return 0, false, "", 0, err
	}
	if err := c.Set(ctx, lock, election.LockValue(instance, token), ttl).Err(); err != nil {
		return 0, false, "", 0, err
	}
	return token, true, "", 0, nil
}

// observedExpiry judges a held lease expired by the candidate's own clock, as a lease
// record with a timestamp does (client-go's observedTime on a clock that jumps; the
// Redlock critique's clock-dependent expiry): each attempt notes when, by its clock, the
// holder's lease ends (now + PTTL); an attempt that finds the same holder after that
// moment takes the lock with a plain SET. Without a clock fault the next attempt comes
// before that moment (a standby retries every RetryInterval, and PTTL after a renewal
// is longer); a clock that jumps forward makes a live leader's lease look expired.
type observedExpiry struct {
	mu      sync.Mutex
	holder  string
	expires time.Time
}

func (o *observedExpiry) acquire(ctx context.Context, c redis.UniversalClient, lock, counter, instance string, ttl time.Duration, now time.Time) (int64, bool, string, time.Duration, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	holder, err := c.Get(ctx, lock).Result()
	free := errors.Is(err, redis.Nil)
	switch {
	case free:
	case err != nil:
		return 0, false, "", 0, err
	case holder != o.holder || now.Before(o.expires):
		pttl, err := c.PTTL(ctx, lock).Result()
		if err != nil {
			return 0, false, "", 0, err
		}
		o.holder, o.expires = holder, now.Add(pttl)
		return 0, false, holder, pttl, nil
	}
	// Free, or expired by this candidate's clock: take it (a free lock only if it still
	// is; one expired by the clock whatever it holds).
	token, err := c.Incr(ctx, counter).Result()
	if err != nil {
		return 0, false, "", 0, err
	}
	mode := ""
	if free {
		mode = "NX"
	}
	set, err := c.SetArgs(ctx, lock, election.LockValue(instance, token), redis.SetArgs{Mode: mode, TTL: ttl}).Result()
	if errors.Is(err, redis.Nil) {
		return 0, false, "", -1, nil // taken meanwhile
	}
	if err != nil || set != "OK" {
		return 0, false, "", 0, err
	}
	o.holder, o.expires = "", time.Time{}
	return token, true, "", 0, nil
}

// lateTokenTimeout bounds lateTokenAcquire's steps after its SET NX.
const lateTokenTimeout = 10 * time.Second

// lateTokenAcquire takes the lock first (SET NX) and mints the token after it, with a
// separate INCR (bsm/redislock#93, which proposes minting it in the same script), then
// writes the token into the lock (SET XX KEEPTTL). An acquirer held up between its SET
// and its INCR past its lease gets a larger token than the one that took the lock after
// it, and its SET XX writes its value over the newer holder's lock. With
// SetTrustGrantForChaos (a lock library has no local deadline: the lock is held from
// the moment Obtain returns) it leads on that stale lock.
func lateTokenAcquire(ctx context.Context, c redis.UniversalClient, lock, counter, instance string, ttl time.Duration, _ time.Time) (int64, bool, string, time.Duration, error) {
	ok, err := c.SetNX(ctx, lock, election.LockValue(instance, 0), ttl).Result()
	if err != nil {
		return 0, false, "", 0, err
	}
	if !ok {
		holder, err := c.Get(ctx, lock).Result()
		if errors.Is(err, redis.Nil) {
			return 0, false, "", -1, nil // expired since: the next attempt follows
		}
		if err != nil {
			return 0, false, "", 0, err
		}
		pttl, err := c.PTTL(ctx, lock).Result()
		return 0, false, holder, pttl, err
	}
	// The lock is won here, its token not yet minted: where this design's acquirer is
	// "just after winning" (fp-stall-new-leader's point; the elector's own hit of it,
	// after the acquire returns, then finds it spent).
	_ = hit("election/acquire-after-win")
	// Obtain runs under its caller's context, which seldom ends within a lease: the
	// steps after the SET go on past the elector's request deadline, as they did there.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lateTokenTimeout)
	defer cancel()
	token, err := c.Incr(ctx, counter).Result()
	if err != nil {
		return 0, false, "", 0, err
	}
	if err := c.SetArgs(ctx, lock, election.LockValue(instance, token), redis.SetArgs{Mode: "XX", KeepTTL: true}).Err(); err != nil {
		return 0, false, "", 0, err
	}
	return token, true, "", 0, nil
}

// splitBrainMember is a node that embeds a member of an AP lock service, as Hazelcast's
// ILock was before its CP subsystem (Jepsen, Hazelcast 3.8.3: "locks aren't exclusive"):
// a member that hears nothing from the others for its member timeout (a lease TTL here)
// declares them dead and forms a cluster of its own, in which the locks they held are
// free and its own copy of the ID generator goes on. So the lock is held on both sides of
// a partition: the holder's side keeps it (SetNoStepDownForChaos: its term ends only when
// the lock service rejects a renewal), and a member cut off from the holder grants it to
// itself, with the next token of its own copy (the last it saw, plus one), a token the
// other side may issue too.
type splitBrainMember struct {
	mu        sync.Mutex
	heard     time.Time // when the lock service last answered, by the elector's clock
	lastToken int64     // the highest token this member has seen issued
}

// splitBrainAcquire takes a free lock and mints its token in one script, as the
// reference does; it answers {1, token}, or {0, holder, pttl} for a held lock. The
// token is read back as the counter's string: INCR's reply is a Lua number, a double,
// which rounds tokens above 2^53 (a run's counter may start near 10^16).
var splitBrainAcquire = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('INCR', KEYS[2])
  local token = redis.call('GET', KEYS[2])
  redis.call('SET', KEYS[1], ARGV[1] .. ':' .. token, 'PX', ARGV[2])
  return {1, token}
end
return {0, redis.call('GET', KEYS[1]) or '', redis.call('PTTL', KEYS[1])}
`)

func (m *splitBrainMember) acquire(ctx context.Context, c redis.UniversalClient, lock, counter, instance string, ttl time.Duration, now time.Time) (int64, bool, string, time.Duration, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, err := splitBrainAcquire.Run(ctx, c, []string{lock, counter}, instance, ttl.Milliseconds()).Slice()
	if err != nil {
		if m.heard.IsZero() || now.Sub(m.heard) < ttl {
			return 0, false, "", 0, err
		}
		// A cluster of its own: whoever held the lock is gone from it.
		m.lastToken++
		return m.lastToken, true, "", 0, nil
	}
	m.heard = now
	if len(v) == 2 {
		ts, _ := v[1].(string)
		token, err := strconv.ParseInt(ts, 10, 64)
		if err != nil {
			return 0, false, "", 0, fmt.Errorf("variants: split-brain-lock: token %q: %w", ts, err)
		}
		m.lastToken = max(m.lastToken, token)
		return token, true, "", 0, nil
	}
	holder, _ := v[1].(string)
	pttl, _ := v[2].(int64)
	if _, token, err := election.ParseLockValue(holder); err == nil {
		m.lastToken = max(m.lastToken, token)
	}
	return 0, false, holder, time.Duration(pttl) * time.Millisecond, nil
}

// ZooOnly reports whether variant name was written for the zoo: `validate --zoo`
// measures it at the default settings (every fault and the probes that end the run,
// which reach it), and the self-validation matrix (`validate --variants all`, `make
// validate`, `validate-short`) leaves it out: under its own faults alone several are
// reached only by the probes, and six more pairs of runs would add a quarter of an hour
// to CI (docs/known-bugs.md). It runs when named.
func ZooOnly(name string) bool {
	switch name {
	case LeaseNotRechecked, StaleObservedRecord, NeverTold, WorkAfterDeadline, WallClockLease, LateToken, SplitBrainLock, RedlockMajority:
		return true
	}
	return false
}

// Bug is one row of the known-bug zoo: a published split-brain bug and the variant that
// reproduces its mechanism.
type Bug struct {
	// Source names the project and the issue, pull request or analysis; URL links it.
	Source, URL string
	// Mechanism says in one line what went wrong.
	Mechanism string
	// Variant reproduces it.
	Variant string
}

// Zoo returns the zoo's rows, in the order docs/known-bugs.md lists them.
func Zoo() []Bug {
	return []Bug{
		{"etcd-io/etcd#11408 (Jepsen, etcd 3.4.3; issue #11456)", "https://github.com/etcd-io/etcd/pull/11408",
			"a lock granted after waiting is returned without checking that its lease is still alive", LeaseNotRechecked},
		{"kubernetes/kubernetes#67651", "https://github.com/kubernetes/kubernetes/issues/67651",
			"concurrent candidates act on a stale observed record and update it without a compare-and-swap", StaleObservedRecord},
		{"kubernetes/kubernetes#23731", "https://github.com/kubernetes/kubernetes/issues/23731",
			"a leader that lost the lease is never told: OnStoppedLeading is not called", NeverTold},
		{"cilium/cilium#42920", "https://github.com/cilium/cilium/pull/42920",
			"the operator keeps acting after the renew deadline (a blocking stop hook) and hands out duplicate PodCIDRs", WorkAfterDeadline},
		{"Kleppmann, How to do distributed locking (the Redlock critique)", "https://martin.kleppmann.com/2016/02/08/how-to-do-distributed-locking.html",
			"a lease judged by a clock that jumps: a live holder's lease looks expired to a candidate", WallClockLease},
		{"bsm/redislock#93", "https://github.com/bsm/redislock/issues/93",
			"the fencing token is minted by a separate INCR after the lock, so a later lock can get a smaller token", LateToken},
		{"Jepsen, Hazelcast 3.8.3 (2017): locks aren't exclusive", "https://jepsen.io/analyses/hazelcast-3-8-3",
			"an AP lock service grants on both sides of a partition: the holder's side keeps the lock, the other side declares it dead and grants it again", SplitBrainLock},
		{"home-grown fences (Kleppmann, same article: the check must be in the storage)", "https://martin.kleppmann.com/2016/02/08/how-to-do-distributed-locking.html",
			"the client checks the token in a separate read, then writes (TOCTOU)", ClientCheck},
		{"home-grown fences: a replayed batch", "https://martin.kleppmann.com/2016/02/08/how-to-do-distributed-locking.html",
			"the fence checks the token but not the stored position, so a batch is applied twice", NoCursorCheck},
		{"Redis distributed-lock pattern (redis.io, unlock with a script)", "https://redis.io/docs/latest/develop/use/patterns/distributed-locks/",
			"a release by GET, compare, DEL in separate steps deletes a newer holder's lock", NonAtomicRelease},
		{"Redis distributed-lock pattern (redis.io: remove the lock only if the value matches)", "https://redis.io/docs/latest/develop/use/patterns/distributed-locks/",
			"a release by plain DEL deletes whoever's lock is there", UncheckedRelease},
		{"antirez/Kleppmann debate: a Redis restarted without persistence", "http://antirez.com/news/101",
			"the token counter comes back empty after a restart, so tokens repeat", VolatileRedis},
		{"antirez/Kleppmann debate: Redlock, a majority of independent Redis servers, one restarted without persistence", "http://antirez.com/news/101",
			"a leader holding a bare majority loses one server's lock to a restart, and a standby locks a majority beside it", RedlockMajority},
	}
}
