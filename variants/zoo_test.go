//go:build chaos

package variants

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/internal/redisserver"
)

// before runs do once, just before the client sends its first command named cmd (after
// skip earlier ones): the other candidate's steps, interleaved at that point.
type before struct {
	cmd  string
	skip int
	do   func()
	once sync.Once
}

func (b *before) DialHook(next redis.DialHook) redis.DialHook { return next }
func (b *before) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (b *before) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if strings.EqualFold(cmd.Name(), b.cmd) {
			if b.skip > 0 {
				b.skip--
			} else {
				b.once.Do(b.do)
			}
		}
		return next(ctx, cmd)
	}
}

func zooClients(t *testing.T) (a, b *redis.Client, lock, counter string) {
	t.Helper()
	srv := redisserver.New(t)
	a, b = election.NewClient(srv.Addr()), election.NewClient(srv.Addr())
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b, election.LockKey(t.Name()), election.TokenKey(t.Name())
}

// kubernetes#67651: two candidates that both read the record free both win; the later
// SET overwrites the earlier winner's lock.
func TestStaleObservedRecordBothWin(t *testing.T) {
	a, b, lock, counter := zooClients(t)
	ctx := context.Background()
	var tb int64
	var wonB bool
	a.AddHook(&before{cmd: "incr", do: func() {
		var err error
		tb, wonB, _, _, err = staleObservedAcquire(ctx, b, lock, counter, "b", time.Second, time.Time{})
		if err != nil {
			t.Error(err)
		}
	}})
	ta, wonA, _, _, err := staleObservedAcquire(ctx, a, lock, counter, "a", time.Second, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if !wonA || !wonB || ta <= tb {
		t.Fatalf("a won %v (token %d), b won %v (token %d): want both, a later", wonA, ta, wonB, tb)
	}
	if v := a.Get(ctx, lock).Val(); v != election.LockValue("a", ta) {
		t.Errorf("lock %q, want a's", v)
	}
	// A held lock is not taken.
	if _, won, holder, pttl, err := staleObservedAcquire(ctx, b, lock, counter, "b", time.Second, time.Time{}); err != nil || won || holder != election.LockValue("a", ta) || pttl <= 0 {
		t.Errorf("acquire of a held lock: won %v, holder %q, pttl %v, %v", won, holder, pttl, err)
	}
}

// The clock-judged lease: a candidate takes a live holder's lock once its own clock
// says the PTTL it saw has run out; retries within that PTTL do not.
func TestWallClockLeaseTakesALiveLease(t *testing.T) {
	a, _, lock, counter := zooClients(t)
	ctx := context.Background()
	holder := election.LockValue("h", 7)
	if err := a.Set(ctx, lock, holder, 2*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	var o observedExpiry
	now := time.Now()
	for _, d := range []time.Duration{0, 500 * time.Millisecond} { // a standby's retries
		if _, won, h, _, err := o.acquire(ctx, a, lock, counter, "c", 2*time.Second, now.Add(d)); err != nil || won || h != holder {
			t.Fatalf("retry at +%v: won %v, holder %q, %v", d, won, h, err)
		}
	}
	// The clock jumps forward past the PTTL: the live lease looks expired.
	token, won, _, _, err := o.acquire(ctx, a, lock, counter, "c", 2*time.Second, now.Add(5*time.Second))
	if err != nil || !won {
		t.Fatalf("after the jump: won %v, %v", won, err)
	}
	if v := a.Get(ctx, lock).Val(); v != election.LockValue("c", token) {
		t.Errorf("lock %q, want c's", v)
	}
	// A free lock is taken only if it still is free (NX).
	a.Del(ctx, lock)
	var p observedExpiry
	if _, won, _, _, err := p.acquire(ctx, a, lock, counter, "d", time.Second, time.Now()); err != nil || !won {
		t.Errorf("free lock: won %v, %v", won, err)
	}
}

// bsm/redislock#93: an acquirer held up between its SET NX and its INCR, past its
// lease, gets a larger token than the one that took the lock after it, and its SET XX
// overwrites that holder's lock.
func TestLateTokenInverts(t *testing.T) {
	a, b, lock, counter := zooClients(t)
	ctx := context.Background()
	var tb int64
	a.AddHook(&before{cmd: "incr", do: func() {
		b.Del(ctx, lock) // a's lease runs out while it is held up
		var won bool
		var err error
		tb, won, _, _, err = lateTokenAcquire(ctx, b, lock, counter, "b", time.Second, time.Time{})
		if err != nil || !won {
			t.Errorf("b: won %v, %v", won, err)
		}
	}})
	ta, won, _, _, err := lateTokenAcquire(ctx, a, lock, counter, "a", time.Second, time.Time{})
	if err != nil || !won {
		t.Fatalf("a: won %v, %v", won, err)
	}
	if ta <= tb {
		t.Errorf("a (the earlier lock) got token %d, b (the later) %d: want a's larger", ta, tb)
	}
	if v := a.Get(ctx, lock).Val(); v != election.LockValue("a", ta) {
		t.Errorf("lock %q, want a's value over b's", v)
	}
	if pttl := a.PTTL(ctx, lock).Val(); pttl <= 0 {
		t.Errorf("the lock lost its TTL: %v", pttl)
	}
}

// Hazelcast 3.8.3's AP lock: a member takes a free lock as the reference does, learns
// the holder's token from a held one, and once the lock service has not answered for a
// lease TTL it grants itself the lock with the next token it knows of; before that, a
// failed request is only an error.
func TestSplitBrainLockGrantsWhenCutOff(t *testing.T) {
	a, _, lock, counter := zooClients(t)
	ctx := context.Background()
	ttl := 2 * time.Second
	if err := a.Set(ctx, lock, election.LockValue("h", 41), ttl).Err(); err != nil {
		t.Fatal(err)
	}
	var m splitBrainMember
	now := time.Now()
	if _, won, holder, pttl, err := m.acquire(ctx, a, lock, counter, "c", ttl, now); err != nil || won || holder != election.LockValue("h", 41) || pttl <= 0 {
		t.Fatalf("held lock: won %v, holder %q, pttl %v, %v", won, holder, pttl, err)
	}
	cut := election.NewClient("127.0.0.1:1") // nothing listens there: the service is out of reach
	defer cut.Close()
	if _, won, _, _, err := m.acquire(ctx, cut, lock, counter, "c", ttl, now.Add(ttl/2)); err == nil || won {
		t.Fatalf("cut off for half a lease: won %v, %v; want the error", won, err)
	}
	token, won, _, _, err := m.acquire(ctx, cut, lock, counter, "c", ttl, now.Add(ttl))
	if err != nil || !won || token != 42 {
		t.Fatalf("cut off for a lease: won %v, token %d, %v; want a grant of its own, token 42", won, token, err)
	}
	// The holder's side still has the lock: both sides hold it.
	if v := a.Get(ctx, lock).Val(); v != election.LockValue("h", 41) {
		t.Errorf("lock %q, want the holder's", v)
	}
	// Free, the lock is taken with the counter's next token, in one script, exact above
	// 2^53 (where a Lua number is not).
	a.Del(ctx, lock)
	if err := a.Set(ctx, counter, "9999999999999999", 0).Err(); err != nil {
		t.Fatal(err)
	}
	var f splitBrainMember
	token, won, _, _, err = f.acquire(ctx, a, lock, counter, "d", ttl, time.Now())
	if err != nil || !won || token != 10000000000000000 || a.Get(ctx, lock).Val() != election.LockValue("d", token) {
		t.Errorf("free lock: won %v, token %d, lock %q, %v", won, token, a.Get(ctx, lock).Val(), err)
	}
	a.Del(ctx, lock)
	if token, _, _, _, err = f.acquire(ctx, a, lock, counter, "d", ttl, time.Now()); err != nil || token != 10000000000000001 {
		t.Errorf("next token %d, %v; want 10000000000000001", token, err)
	}
}
