package election_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/internal/redisserver"
)

// lockConfig has a lease and retry interval of 10s: a handoff faster than that can only
// come from the release notice.
func lockConfig(id string, rec *recorder) election.Config {
	cfg := election.Config{InstanceID: id, LeaseTTL: 10 * time.Second, RetryInterval: 10 * time.Second}
	if rec != nil {
		cfg.Recorder = rec
	}
	return cfg
}

func newElector(tb testing.TB, c redis.UniversalClient, cfg election.Config) *election.Elector {
	tb.Helper()
	e, err := election.New(c, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// Two electors take turns on the lock: one holder at a time, each new holder's token above
// the last, a Release hands over at once, and the steps are recorded as Run's are.
func TestLockExclusiveAndHandoff(t *testing.T) {
	srv := redisserver.New(t)
	c := newClient(t, srv.Addr())
	recA, recB := &recorder{}, &recorder{}
	a := newElector(t, c, lockConfig("a", recA))
	b := newElector(t, c, lockConfig("b", recB))
	ctx := context.Background()

	la, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.TryAcquire(ctx); !errors.Is(err, election.ErrLeaseHeld) {
		t.Fatalf("TryAcquire while a holds: %v, want ErrLeaseHeld", err)
	}
	got := make(chan *election.Lock, 1)
	go func() {
		lb, err := b.Acquire(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- lb
	}()
	if !recB.eventually("acquire/fail", 2, wait) { // the TryAcquire, then Acquire's first attempt
		t.Fatal("b's Acquire made no attempt")
	}
	select {
	case <-got:
		t.Fatal("b acquired while a holds the lock")
	default:
	}
	if la.Context().Err() != nil {
		t.Fatalf("a's lease ended while held: %v", context.Cause(la.Context()))
	}

	released := time.Now()
	if err := la.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	lb := <-got
	if lb == nil {
		t.FailNow()
	}
	if d := time.Since(released); d > 5*time.Second {
		t.Errorf("handoff took %v: the release notice did not wake b", d)
	}
	if lb.Token() <= la.Token() {
		t.Errorf("b's token %d is not above a's %d", lb.Token(), la.Token())
	}
	if cause := context.Cause(la.Context()); !errors.Is(cause, election.ErrReleased) {
		t.Errorf("a's lease context cause %v, want ErrReleased", cause)
	}
	if err := lb.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// The elector can acquire again after a Release; its token is above both.
	la2, err := a.TryAcquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if la2.Token() <= lb.Token() {
		t.Errorf("a's second token %d is not above b's %d", la2.Token(), lb.Token())
	}
	if err := la2.Release(ctx); err != nil {
		t.Fatal(err)
	}

	want := []string{"acquire/ok", "step-down/shutdown", "release/ok", "acquire/ok", "step-down/shutdown", "release/ok"}
	if got := recA.snapshot(); !slices.Equal(got, want) {
		t.Errorf("a's history %v, want %v", got, want)
	}
}

// The lease's context ends when the lease is lost, with the reason as its cause, and
// Release then says so.
func TestLockContextEndsOnLoss(t *testing.T) {
	srv := redisserver.New(t)

	t.Run("rejected renewal", func(t *testing.T) {
		c := newClient(t, srv.Addr())
		cfg := election.Config{InstanceID: "a", Name: "rejected", LeaseTTL: 300 * time.Millisecond}
		l, err := newElector(t, c, cfg).Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		// Someone deletes the lock (an operator, an expiry seen by Redis first).
		if err := c.Del(context.Background(), election.LockKey("rejected")).Err(); err != nil {
			t.Fatal(err)
		}
		<-l.Context().Done()
		if cause := context.Cause(l.Context()); !errors.Is(cause, election.ErrNotHeld) {
			t.Fatalf("cause %v, want ErrNotHeld", cause)
		}
		if err := l.Release(context.Background()); !errors.Is(err, election.ErrNotHeld) {
			t.Fatalf("Release after loss: %v, want ErrNotHeld", err)
		}
	})

	t.Run("expired lease", func(t *testing.T) {
		p := startProxy(t, srv.Addr())
		c := newClient(t, p.addr())
		cfg := election.Config{InstanceID: "a", Name: "expired", LeaseTTL: 300 * time.Millisecond}
		l, err := newElector(t, c, cfg).Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		p.blackhole(true) // no renewal gets an answer: the local deadline passes
		<-l.Context().Done()
		if cause := context.Cause(l.Context()); !errors.Is(cause, election.ErrLeaseExpired) {
			t.Fatalf("cause %v, want ErrLeaseExpired", cause)
		}
		if err := l.Release(context.Background()); !errors.Is(err, election.ErrLeaseExpired) {
			t.Fatalf("Release after loss: %v, want ErrLeaseExpired", err)
		}
	})
}

// Misuse gets an error, never a panic or a hang.
func TestLockMisuse(t *testing.T) {
	srv := redisserver.New(t)
	c := newClient(t, srv.Addr())
	e := newElector(t, c, lockConfig("a", nil))
	ctx := context.Background()

	l, err := e.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Acquire(ctx); !errors.Is(err, election.ErrRunning) {
		t.Errorf("Acquire while held: %v, want ErrRunning", err)
	}
	if _, err := e.TryAcquire(ctx); !errors.Is(err, election.ErrRunning) {
		t.Errorf("TryAcquire while held: %v, want ErrRunning", err)
	}
	if err := e.Run(ctx, func(context.Context, election.Term) {}); !errors.Is(err, election.ErrRunning) {
		t.Errorf("Run while held: %v, want ErrRunning", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); !errors.Is(err, election.ErrReleased) {
		t.Errorf("second Release: %v, want ErrReleased", err)
	}

	// A held lease and a done ctx: the wait ends with ctx's cause.
	other := newElector(t, c, lockConfig("b", nil))
	lb, err := other.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := e.Acquire(cctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Acquire until a deadline: %v, want DeadlineExceeded", err)
	}
	if err := lb.Release(ctx); err != nil {
		t.Fatal(err)
	}

	closed := election.NewClient(srv.Addr())
	_ = closed.Close()
	ec := newElector(t, closed, lockConfig("c", nil))
	if _, err := ec.Acquire(ctx); !errors.Is(err, redis.ErrClosed) {
		t.Errorf("Acquire on a closed client: %v, want redis.ErrClosed", err)
	}
	if _, err := ec.TryAcquire(ctx); !errors.Is(err, redis.ErrClosed) {
		t.Errorf("TryAcquire on a closed client: %v, want redis.ErrClosed", err)
	}
}

// BenchmarkLockHandoff measures the lock API's handoff on a real redis-server: from the
// holder's call to Release to the return of the Acquire another elector, on its own
// client, has blocked in (the release, its notice and the acquire). The lease and retry interval are 10s, so
// only the notice can explain a fast handoff. It reports p50 and p99 in milliseconds.
func BenchmarkLockHandoff(b *testing.B) {
	srv := redisserver.New(b)
	recs := []*recorder{{}, {}}
	es := []*election.Elector{ // a client each, as two processes would have
		newElector(b, newClient(b, srv.Addr()), lockConfig("a", recs[0])),
		newElector(b, newClient(b, srv.Addr()), lockConfig("b", recs[1])),
	}
	ctx := context.Background()
	held, err := es[0].Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var handoffs []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		next := 1 - i%2
		got := make(chan *election.Lock, 1)
		attempts := recs[next].count("acquire/fail")
		go func() {
			l, err := es[next].Acquire(ctx)
			if err != nil {
				b.Error(err)
			}
			got <- l
		}()
		// Release only once the waiter is subscribed: it attempts after subscribing.
		if !recs[next].eventually("acquire/fail", attempts+1, wait) {
			b.Fatal("the waiter made no attempt")
		}
		start := time.Now()
		if err := held.Release(ctx); err != nil {
			b.Fatal(err)
		}
		if held = <-got; held == nil {
			b.FailNow()
		}
		handoffs = append(handoffs, time.Since(start))
	}
	b.StopTimer()
	_ = held.Release(ctx)
	report(b, handoffs, "handoff")
	b.ReportMetric(0, "ns/op") // the per-iteration time includes the waiter's start; see the percentiles
}

// A lock holder's connections close (its process dies): with TakeoverOnDisconnect, an
// Acquire waiting elsewhere takes the lease at once, not a 10s lease later, and the old
// holder's lease context ends with the reason once it learns.
func TestLockTakeoverOnDisconnect(t *testing.T) {
	srv := redisserver.New(t)
	p := startProxy(t, srv.Addr())
	a := newElector(t, newClient(t, p.addr()), takeoverConfig("a", true))
	la, err := a.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	cfg := takeoverConfig("b", true)
	cfg.Recorder = rec
	b := newElector(t, newClient(t, srv.Addr()), cfg)
	got := make(chan *election.Lock, 1)
	go func() {
		lb, err := b.Acquire(context.Background())
		if err != nil {
			t.Error(err)
		}
		got <- lb
	}()
	if !rec.eventually("acquire/fail", 1, wait) {
		t.Fatal("b made no attempt")
	}
	closed := time.Now()
	p.close()
	lb := <-got
	if lb == nil {
		t.FailNow()
	}
	if took := time.Since(closed); took > fastBound {
		t.Errorf("takeover took %v, want < %v", took, fastBound)
	}
	if lb.Token() <= la.Token() {
		t.Errorf("b's token %d is not above a's %d", lb.Token(), la.Token())
	}
	<-la.Context().Done()
	if cause := context.Cause(la.Context()); !errors.Is(cause, election.ErrLeaseExpired) && !errors.Is(cause, election.ErrNotHeld) {
		t.Errorf("a's lease ended by %v", cause)
	}
	if err := la.Release(context.Background()); err == nil {
		t.Error("a's Release after the takeover: nil, want the loss")
	}
	if err := lb.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
}
