package targets

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/internal/redisserver"
)

// terms collects the terms a test's electors lead, in start order.
type terms struct {
	mu      sync.Mutex
	started []election.Term
	ch      chan election.Term
}

func newTerms() *terms { return &terms{ch: make(chan election.Term, 16)} }

// lead records the term and leads until it ends.
func (ts *terms) lead(ctx context.Context, t election.Term) {
	ts.mu.Lock()
	ts.started = append(ts.started, t)
	ts.mu.Unlock()
	ts.ch <- t
	<-ctx.Done()
}

func (ts *terms) next(tb testing.TB, within time.Duration) election.Term {
	tb.Helper()
	select {
	case t := <-ts.ch:
		return t
	case <-time.After(within):
		tb.Fatalf("no term started within %v", within)
	}
	return election.Term{}
}

// stepDowns records the reasons of the electors' step-downs.
type stepDowns struct {
	mu      sync.Mutex
	reasons []election.Reason
}

func (s *stepDowns) Invoke(election.Op, int64) func(election.Result) { return func(election.Result) {} }
func (s *stepDowns) StepDown(_ int64, r election.Reason) {
	s.mu.Lock()
	s.reasons = append(s.reasons, r)
	s.mu.Unlock()
}

func (s *stepDowns) has(r election.Reason) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.reasons {
		if x == r {
			return true
		}
	}
	return false
}

func lockTargets() []string { return []string{Redsync, RedsyncFenced, Redislock, RedislockFenced} }

// TestHandover: against a real Redis, two electors of each library target elect one
// leader; when it shuts down (releasing the lock), the other leads under a greater token.
func TestHandover(t *testing.T) {
	srv := redisserver.New(t)
	for _, name := range lockTargets() {
		t.Run(name, func(t *testing.T) {
			client := redis.NewClient(election.ClientOptions(srv.Addr()))
			t.Cleanup(func() { client.Close() })
			ts := newTerms()
			cancels := map[string]context.CancelFunc{}
			var wg sync.WaitGroup
			t.Cleanup(wg.Wait)
			for _, id := range []string{"a", "b"} {
				e, err := New(client, Config{Target: name, InstanceID: id, Name: "t-" + name, LeaseTTL: time.Second})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				cancels[id] = cancel
				t.Cleanup(cancel)
				wg.Go(func() {
					if err := e.Run(ctx, ts.lead); err != nil {
						t.Errorf("Run: %v", err)
					}
				})
			}
			first := ts.next(t, 10*time.Second)
			stopped := time.Now()
			cancels[first.Instance]()
			second := ts.next(t, 10*time.Second)
			if second.Instance == first.Instance || second.Token <= first.Token {
				t.Fatalf("after %s (token %d) stopped, %s led with token %d: want the other node and a greater token",
					first.Instance, first.Token, second.Instance, second.Token)
			}
			t.Logf("%s: handover in %v", name, time.Since(stopped).Round(time.Millisecond))
		})
	}
}

// TestExtendRefused: a leader whose lock was deleted under it (an operator, or an
// expiry) is refused its next extend and ends its term: lead's context is cancelled.
func TestExtendRefused(t *testing.T) {
	srv := redisserver.New(t)
	for _, name := range []string{Redsync, Redislock} {
		t.Run(name, func(t *testing.T) {
			client := redis.NewClient(election.ClientOptions(srv.Addr()))
			t.Cleanup(func() { client.Close() })
			rec := &stepDowns{}
			e, err := New(client, Config{Target: name, InstanceID: "a", Name: "x-" + name, LeaseTTL: time.Second, Recorder: rec})
			if err != nil {
				t.Fatal(err)
			}
			ended := make(chan error, 1)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			t.Cleanup(func() { cancel(); <-done })
			go func() {
				defer close(done)
				_ = e.Run(ctx, func(tctx context.Context, _ election.Term) {
					if err := client.Del(context.Background(), LockKey("x-"+name, name)).Err(); err != nil {
						t.Errorf("del: %v", err)
					}
					<-tctx.Done()
					select {
					case ended <- context.Cause(tctx):
					default:
					}
				})
			}()
			select {
			case cause := <-ended:
				if !errors.Is(cause, election.ErrNotHeld) {
					t.Fatalf("term ended with %v, want a refused extend", cause)
				}
				// The step-down is recorded just after the term's context is cancelled.
				for end := time.Now().Add(5 * time.Second); !rec.has(election.ReasonRenewRejected); time.Sleep(10 * time.Millisecond) {
					if time.Now().After(end) {
						t.Fatal("no renew-rejected step-down recorded")
					}
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the term did not end after its lock was deleted")
			}
		})
	}
}

func TestNewRefusesReference(t *testing.T) {
	client := redis.NewClient(election.ClientOptions("127.0.0.1:1"))
	defer client.Close()
	for _, name := range []string{Reference, "nope"} {
		if _, err := New(client, Config{Target: name, InstanceID: "a"}); err == nil {
			t.Errorf("New(%q) = nil error, want one", name)
		}
	}
	if _, err := ByName("nope"); !errors.Is(err, ErrUnknown) {
		t.Errorf("ByName(nope) = %v, want ErrUnknown", err)
	}
}
