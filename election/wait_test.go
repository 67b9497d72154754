package election_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/internal/redisserver"
)

// With AddWait, a step whose WAIT misses (the only replica is stopped) is recorded as
// unknown, never ok: a renewal does not extend the local lease, which ends; an acquire
// returns ErrWaitMissed although the primary ran it, and the next attempt adopts that
// term once the replica is back.
func TestWaitMissIsUnknown(t *testing.T) {
	primary := redisserver.New(t)
	replica := redisserver.NewWith(t, redisserver.Options{Config: "replicaof " + strings.Replace(primary.Addr(), ":", " ", 1) + "\n"})
	ctx := context.Background()
	c := newClient(t, primary.Addr())
	if err := election.AddWait(c, 1, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	plain := newClient(t, primary.Addr())
	deadline := time.Now().Add(wait)
	for { // until the replica has synced
		err := c.Eval(ctx, `return redis.call('INCR', KEYS[1])`, []string{"{w}:sync"}).Err()
		if err == nil {
			break
		}
		if !errors.Is(err, election.ErrWaitMissed) || time.Now().After(deadline) {
			t.Fatalf("script with a replica attached: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	rec := &recorder{}
	// A lease long enough that each request's deadline (RenewInterval/2 = 250 ms) outlasts the
	// 50 ms WAIT on a loaded machine: a miss must come back as ErrWaitMissed, not as a timeout.
	e := newElector(t, c, election.Config{InstanceID: "a", Name: "w", LeaseTTL: 1500 * time.Millisecond, Recorder: rec})
	l, err := e.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := replica.Pause(); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			_ = replica.Resume()
		}
	}()
	<-l.Context().Done()
	if cause := context.Cause(l.Context()); !errors.Is(cause, election.ErrLeaseExpired) {
		t.Fatalf("lease ended with %v, want ErrLeaseExpired: renewals that miss WAIT must not count", cause)
	}
	if rec.count("renew/unknown") == 0 {
		t.Errorf("no renew recorded unknown: %v", rec.snapshot())
	}
	if err := l.Release(ctx); !errors.Is(err, election.ErrLeaseExpired) {
		t.Fatalf("Release: %v, want ErrLeaseExpired", err)
	}
	for plain.Exists(ctx, election.LockKey("w")).Val() != 0 { // the renewals ran: wait for the TTL
		if time.Now().After(deadline.Add(wait)) {
			t.Fatal("the lease never expired")
		}
		time.Sleep(20 * time.Millisecond)
	}

	if _, err := e.TryAcquire(ctx); !errors.Is(err, election.ErrWaitMissed) {
		t.Fatalf("TryAcquire with the replica stopped: %v, want ErrWaitMissed", err)
	}
	if n := rec.count("acquire/unknown"); n != 1 {
		t.Errorf("%d acquires recorded unknown, want 1: %v", n, rec.snapshot())
	}
	if v := plain.Get(ctx, election.LockKey("w")).Val(); v != election.LockValue("a", 2) {
		t.Fatalf("lock %q: the primary did not run the acquire", v)
	}
	if err := replica.Resume(); err != nil {
		t.Fatal(err)
	}
	resumed = true
	l, err = e.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l.Token() != 2 {
		t.Errorf("token %d after the replica came back, want 2 (the unknown acquire's term, adopted)", l.Token())
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// AddWait refuses what WAIT cannot do, and a client it cannot hook.
func TestAddWaitRefuses(t *testing.T) {
	c := election.NewClient("127.0.0.1:1") // sends nothing
	defer c.Close()
	type wrapped struct{ *redis.Client }
	for _, tc := range []struct {
		name     string
		c        redis.UniversalClient
		replicas int
		timeout  time.Duration
	}{
		{"no replicas", c, 0, time.Second},
		{"no timeout", c, 1, 0},
		{"sub-millisecond timeout", c, 1, 1500 * time.Microsecond},
		{"unknown client", wrapped{c}, 1, time.Second},
	} {
		if err := election.AddWait(tc.c, tc.replicas, tc.timeout); !errors.Is(err, election.ErrInvalidConfig) {
			t.Errorf("%s: %v, want ErrInvalidConfig", tc.name, err)
		}
	}
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}, MaxRetries: -1, MaxRedirects: -1})
	defer cluster.Close()
	if err := election.AddWait(cluster, 1, time.Second); err != nil {
		t.Errorf("cluster client: %v", err)
	}
}
