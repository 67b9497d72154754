package election

import (
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// An acquire whose reply is lost took the lock: the next attempt finds this instance's
// value with a token above every token the elector has seen, and adopts that term at
// once, instead of waiting for the lease to expire and wasting the token.
func TestLostAcquireReplyAdoptedAtNextAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStore()
		fs.counter = 5
		fs.set("b:5", time.Second) // another instance leads until 1s
		fs.setFault(OpAcquire, func(call int) fault { return fault{lost: call == 3} })
		e, rec := newTestElector(t, fs, Config{InstanceID: "a"})
		tr := newTracker()
		stop := start(t, e, tr.lead)
		time.Sleep(3 * time.Second)
		stop()

		// Attempts at 0 and 500ms see b:5; the one at 1s wins token 6 but its reply is
		// lost; the one at 1.5s finds a:6 and adopts it.
		if unk := rec.find("unknown", OpAcquire); len(unk) != 1 || unk[0].At != time.Second {
			t.Fatalf("unknown acquires = %+v, want one at 1s", unk)
		}
		adopt := rec.find("invoke", OpAcquire)
		if len(adopt) != 5 || adopt[4].Token != 6 || adopt[4].At != 3*retry {
			t.Fatalf("acquire invokes = %+v, want the fifth an adoption of token 6 at %v", adopt, 3*retry)
		}
		if ok := rec.find("ok", OpAcquire); len(ok) != 1 || ok[0].Token != 6 || ok[0].At != 3*retry {
			t.Errorf("ok acquires = %+v, want token 6 once, at %v", ok, 3*retry)
		}
		terms := tr.all()
		if len(terms) != 1 || terms[0].Term.Token != 6 || terms[0].Start != 3*retry || terms[0].Term.Start.IsZero() {
			t.Fatalf("terms = %+v, want token 6 from %v", terms, 3*retry)
		}
		// The adopted term renews like any other: its first renewal RenewInterval after
		// the adoption was sent.
		if r := rec.find("ok", OpRenew); len(r) == 0 || r[0].Token != 6 || r[0].At != 3*retry+renewEvery {
			t.Errorf("renewals = %+v, want token 6's first at %v", r, 3*retry+renewEvery)
		}
		if fs.counter != 6 {
			t.Errorf("counter = %d, want 6: no token wasted", fs.counter)
		}
	})
}

// An adoption whose own reply is lost is tried again at the next attempt (the lock still
// holds the value), not mistaken for a lease nobody uses.
func TestUnknownAdoptionRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStore()
		fs.counter = 5
		fs.set("b:5", time.Second)
		fs.setFault(OpAcquire, func(call int) fault { return fault{lost: call == 3} })
		fs.setFault(OpRenew, func(call int) fault {
			if call == 1 {
				return fault{err: errConnReset}
			}
			return fault{}
		})
		e, rec := newTestElector(t, fs, Config{InstanceID: "a"})
		tr := newTracker()
		stop := start(t, e, tr.lead)
		time.Sleep(3 * time.Second)
		stop()
		terms := tr.all()
		if len(terms) != 1 || terms[0].Term.Token != 6 || terms[0].Start != 4*retry {
			t.Fatalf("terms = %+v, want token 6 adopted at %v", terms, 4*retry)
		}
		if r := rec.find("invoke", OpRelease); len(r) != 1 || r[0].Token != 6 {
			t.Errorf("releases = %+v, want only token 6's at shutdown", r)
		}
	})
}

// A lock value of this instance that no term uses — here left by an earlier process of
// the same instance — is released at once, and a new term starts without waiting for it
// to expire.
func TestUnusedOwnLeaseReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStore()
		fs.counter = 3
		fs.set("a:3", 10*time.Second)
		e, rec := newTestElector(t, fs, Config{InstanceID: "a"})
		b, _ := newTestElector(t, fs, Config{InstanceID: "b", RetryInterval: ttl})
		tr, trb := newTracker(), newTracker()
		stopB := start(t, b, trb.lead) // a standby, waiting
		time.Sleep(time.Second)
		stop := start(t, e, tr.lead)
		time.Sleep(time.Second)
		stop()
		stopB()

		if r := rec.find("ok", OpRelease); len(r) == 0 || r[0].Token != 3 || r[0].At != time.Second {
			t.Fatalf("releases = %+v, want token 3's at once (1s)", r)
		}
		// The release notice woke the standby too; one of them leads token 4 at once.
		var first termLog
		for _, l := range append(tr.all(), trb.all()...) {
			if l.Term.Token == 4 {
				first = l
			}
		}
		if first.Term.Token != 4 || first.Start != time.Second {
			t.Errorf("terms a %+v, b %+v: want token 4 at once (1s)", tr.all(), trb.all())
		}
	})
}

// A lock value of this instance with a token above every token the elector has seen,
// while none of its acquires is unresolved, is not adopted: it is not from this elector
// (here, another process running with the same InstanceID, against Config's rule). It is
// released, so that no two processes lead one token.
func TestOwnValueAdoptedOnlyAfterALostAcquire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStore()
		e, rec := newTestElector(t, fs, Config{InstanceID: "a"})
		tr := newTracker()
		stop := start(t, e, tr.lead)
		time.Sleep(time.Second)
		fs.mu.Lock()
		fs.counter = 2
		fs.mu.Unlock()
		fs.set("a:2", time.Minute) // the other process's term
		time.Sleep(time.Second)
		stop()
		for _, s := range rec.find("invoke", OpAcquire) {
			if s.Token == 2 {
				t.Fatalf("adopted token 2: %+v", rec.all())
			}
		}
		if r := rec.find("ok", OpRelease); len(r) == 0 || r[0].Token != 2 {
			t.Errorf("releases = %+v, want token 2's", r)
		}
		for _, l := range tr.all() {
			if l.Term.Token == 2 {
				t.Errorf("led token 2: %+v", tr.all())
			}
		}
	})
}

// Renewals whose replies are lost extend the lock although the leader never hears it: it
// steps down at its deadline, then finds its ended term's value in the lock and releases
// it, so a new term starts at once instead of a lease later.
func TestLostRenewReplyReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStore()
		fs.setFault(OpRenew, func(call int) fault { return fault{lost: call <= 2} })
		e, rec := newTestElector(t, fs, Config{InstanceID: "a"})
		tr := newTracker()
		stop := start(t, e, tr.lead)
		time.Sleep(3 * time.Second)
		stop()

		if sd := rec.find("step-down", ""); len(sd) == 0 || sd[0].Token != 1 || sd[0].Reason != ReasonLeaseExpired {
			t.Fatalf("step-downs = %+v, want token 1 lease-expired", sd)
		}
		if r := rec.find("ok", OpRelease); len(r) == 0 || r[0].Token != 1 || r[0].At != localLease {
			t.Fatalf("releases = %+v, want token 1's at %v", r, localLease)
		}
		terms := tr.all()
		if len(terms) != 2 || terms[1].Term.Token != 2 || terms[1].Start != localLease {
			t.Errorf("terms = %+v, want token 2 from %v", terms, localLease)
		}
	})
}

// OnNewLeader is told each new holder once: a standby sees the leader, then itself.
func TestOnNewLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		type seen struct {
			id    string
			token int64
		}
		var mu sync.Mutex
		got := map[string][]seen{}
		cb := func(self string) func(string, int64) {
			return func(id string, token int64) {
				mu.Lock()
				defer mu.Unlock()
				got[self] = append(got[self], seen{id, token})
			}
		}
		fs := newFakeStore()
		a, _ := newTestElector(t, fs, Config{InstanceID: "a", OnNewLeader: cb("a")})
		b, _ := newTestElector(t, fs, Config{InstanceID: "b", OnNewLeader: cb("b")})
		stopA := start(t, a, newTracker().lead)
		synctest.Wait()
		stopB := start(t, b, newTracker().lead)
		time.Sleep(3 * time.Second) // b attempts several times and sees a:1 each time
		stopA()
		time.Sleep(time.Second)
		stopB()
		mu.Lock()
		defer mu.Unlock()
		if want := []seen{{"a", 1}}; !equalSeen(got["a"], want) {
			t.Errorf("a saw %v, want %v", got["a"], want)
		}
		if want := []seen{{"a", 1}, {"b", 2}}; !equalSeen(got["b"], want) {
			t.Errorf("b saw %v, want %v", got["b"], want)
		}
	})
}

func equalSeen[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// blockingRecorder blocks the first renewal's Invoke until unblock is closed: Run's
// goroutine is stuck while the elector believes it leads.
type blockingRecorder struct {
	*testRecorder
	once    sync.Once
	unblock chan struct{}
}

func (r *blockingRecorder) Invoke(op Op, token int64) func(Result) {
	if op == OpRenew {
		r.once.Do(func() { <-r.unblock })
	}
	return r.testRecorder.Invoke(op, token)
}

// Check fails only when the elector believes it leads more than maxTolerable past its
// local lease deadline.
func TestCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const tolerated = time.Second
		fs := newFakeStore()
		rec := &blockingRecorder{testRecorder: newTestRecorder(), unblock: make(chan struct{})}
		cfg := Config{InstanceID: "a", Recorder: rec}.WithDefaults()
		e := newElector(fs, cfg)
		if err := e.Check(tolerated); err != nil {
			t.Errorf("Check before Run = %v, want nil", err)
		}
		stop := start(t, e, newTracker().lead)
		time.Sleep(time.Second) // stuck in the first renewal's Invoke since 666ms
		if err := e.Check(tolerated); err != nil {
			t.Errorf("Check within the lease = %v, want nil", err)
		}
		time.Sleep(localLease + tolerated - time.Second) // exactly at deadline + tolerated
		if err := e.Check(tolerated); err != nil {
			t.Errorf("Check at deadline + tolerated = %v, want nil", err)
		}
		time.Sleep(time.Millisecond)
		if st := e.Status(); st.Role != RoleLeader {
			t.Fatalf("status %+v, want a stuck leader", st)
		}
		err := e.Check(tolerated)
		if !errors.Is(err, ErrLeaseOverdue) {
			t.Errorf("Check past deadline + tolerated = %v, want ErrLeaseOverdue", err)
		}
		close(rec.unblock)
		synctest.Wait()
		if err := e.Check(tolerated); err != nil {
			t.Errorf("Check after the step-down = %v (status %+v), want nil", err, e.Status())
		}
		if sd := rec.find("step-down", ""); len(sd) == 0 || sd[0].Reason != ReasonLeaseExpired {
			t.Errorf("step-downs = %+v, want lease-expired", sd)
		}
		stop()
	})
}

// New refuses a go-redis client that re-sends commands, with the listener's message.
func TestNewRefusesRetryingClient(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    redis.UniversalClient
		ok   bool
	}{
		{"default client", redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), false},
		{"MaxRetries 1", redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: 1}), false},
		{"cluster MaxRetries 2", redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}, MaxRetries: 2}), false},
		{"ClientOptions", NewClient("127.0.0.1:1"), true},
		// A cluster client re-sends on a redirect, and after an EOF or a timeout when
		// redirects are on (MaxRedirects defaults to 3).
		{"cluster default (redirects)", redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}}), false},
		{"cluster without retries or redirects", redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}, MaxRetries: -1, MaxRedirects: -1}), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer tc.c.Close()
			_, err := New(tc.c, Config{InstanceID: "a"})
			if tc.ok {
				if err != nil {
					t.Fatalf("New = %v, want ok", err)
				}
				return
			}
			var ce *ConfigError
			if !errors.Is(err, ErrInvalidConfig) || !errors.Is(err, ErrRetryingClient) || !errors.As(err, &ce) || ce.Field != "client" {
				t.Fatalf("New = %v, want a ConfigError on client wrapping ErrRetryingClient", err)
			}
			const want = "election: invalid config: client: redis client retries commands (MaxRetries "
			if msg := err.Error(); len(msg) < len(want) || msg[:len(want)] != want {
				t.Errorf("message %q, want it to start with %q", msg, want)
			}
		})
	}
	if errors.Is(&ConfigError{Field: "x"}, ErrRetryingClient) {
		t.Error("a ConfigError without Err matches ErrRetryingClient")
	}
}

// Two electors with Prometheus metrics on one registry in one process: each has its own
// series when their labels differ, and creating metrics twice with the same labels
// neither panics nor fails.
func TestTwoElectorsOneRegistry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewPedanticRegistry()
		var stops []func()
		for _, name := range []string{"x", "y"} {
			m, err := NewPrometheusMetrics(reg, prometheus.Labels{"election": name})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			e, _ := newTestElector(t, newFakeStore(), Config{InstanceID: "a", Name: name, Metrics: m})
			stops = append(stops, start(t, e, newTracker().lead))
		}
		time.Sleep(time.Second)
		synctest.Wait()
		for _, name := range []string{"x", "y"} {
			if v := gatherLabel(t, reg, "fenceline_election_is_leader", "election", name); v != 1 {
				t.Errorf("is_leader{election=%s} = %v, want 1", name, v)
			}
		}
		stops[0]()
		if v := gatherLabel(t, reg, "fenceline_election_is_leader", "election", "x"); v != 0 {
			t.Errorf("is_leader{election=x} = %v after x stopped, want 0", v)
		}
		if v := gatherLabel(t, reg, "fenceline_election_is_leader", "election", "y"); v != 1 {
			t.Errorf("is_leader{election=y} = %v while y leads, want 1", v)
		}
		stops[1]()

		// The same labels again: shared collectors, no error.
		again, err := NewPrometheusMetrics(reg, prometheus.Labels{"election": "x"})
		if err != nil {
			t.Fatalf("same labels twice: %v", err)
		}
		again.BecameLeader(9)
		if v := gatherLabel(t, reg, "fenceline_election_token", "election", "x"); v != 9 {
			t.Errorf("token{election=x} = %v, want 9 (shared)", v)
		}
		plain := prometheus.NewPedanticRegistry()
		for range 2 { // no labels, twice: shared too
			m, err := NewPrometheusMetrics(plain, nil)
			if err != nil {
				t.Fatalf("nil labels twice: %v", err)
			}
			m.BecameLeader(7)
		}
		if _, err := plain.Gather(); err != nil {
			t.Errorf("gather: %v", err)
		}
		// A foreign collector under an election metric's name is an error, not a panic.
		foreign := prometheus.NewPedanticRegistry()
		foreign.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "fenceline_election_token", Help: "not ours"}))
		if _, err := NewPrometheusMetrics(foreign, nil); err == nil {
			t.Error("NewPrometheusMetrics over a foreign collector: no error")
		}
	})
}
