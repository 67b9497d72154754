package election_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/internal/redisserver"
	"github.com/redis/go-redis/v9"
)

// takeoverConfig is a lease long enough that only a takeover explains a fast change.
func takeoverConfig(id string, on bool) election.Config {
	return election.Config{InstanceID: id, LeaseTTL: 10 * time.Second, TakeoverOnDisconnect: on}
}

// The leader's connections close (its proxy goes, as when its process dies): a standby
// with TakeoverOnDisconnect takes the lease at once, with a greater token, and records
// what it took over; without the option it waits out the lease.
func TestTakeoverOnDisconnect(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[on], func(t *testing.T) {
			srv := redisserver.New(t)
			p := startProxy(t, srv.Addr())
			a := startNode(t, newClient(t, p.addr()), takeoverConfig("a", on), nil)
			first := a.term(t, wait)
			b := startNode(t, newClient(t, srv.Addr()), takeoverConfig("b", on), nil)
			time.Sleep(200 * time.Millisecond) // b has found the lease held
			closed := time.Now()
			p.close()
			if !on {
				select {
				case term := <-b.starts:
					t.Fatalf("b led (token %d) %v after a's connections closed, with the option off and a 10s lease", term.Token, time.Since(closed))
				case <-time.After(2 * time.Second):
				}
				return
			}
			term := b.term(t, wait)
			took := time.Since(closed)
			t.Logf("takeover in %v", took)
			if took > fastBound {
				t.Errorf("takeover took %v, want < %v", took, fastBound)
			}
			if term.Token <= first.Token {
				t.Errorf("b's token %d is not above a's %d", term.Token, first.Token)
			}
			if got, want := b.rec.takeovers(), []string{election.LockValue("a", first.Token)}; !slices.Equal(got, want) {
				t.Errorf("b took over %v, want %v", got, want)
			}
			// a believes it leads until its renewal fails or its deadline passes; it
			// never renews the lease b holds.
			if e := a.end(t, 15*time.Second); !errors.Is(e.cause, election.ErrLeaseExpired) && !errors.Is(e.cause, election.ErrNotHeld) {
				t.Errorf("a's term ended by %v", e.cause)
			}
			if st := b.e.Status(); st.Role != election.RoleLeader || st.Token != term.Token {
				t.Errorf("b: %+v, want leader with token %d", st, term.Token)
			}
		})
	}
}

// A leader whose link is blackholed keeps its connections open: its presence stays, and
// the standby waits out the lease as without the option.
func TestTakeoverNotOnBlackhole(t *testing.T) {
	srv := redisserver.New(t)
	p := startProxy(t, srv.Addr())
	cfg := func(id string) election.Config {
		return election.Config{InstanceID: id, LeaseTTL: 2 * time.Second, TakeoverOnDisconnect: true}
	}
	a := startNode(t, newClient(t, p.addr()), cfg("a"), nil)
	a.term(t, wait)
	b := startNode(t, newClient(t, srv.Addr()), cfg("b"), nil)
	time.Sleep(200 * time.Millisecond)
	holed := time.Now()
	p.blackhole(true)
	b.term(t, wait)
	if took := time.Since(holed); took < 2*time.Second-2*time.Second/3-100*time.Millisecond {
		t.Errorf("b led %v after the blackhole, before a's lease (2s, renewed every 667ms) could have expired", took)
	}
	if got := b.rec.takeovers(); len(got) != 0 {
		t.Errorf("b took over %v from a leader whose connection stayed open", got)
	}
}

// An elector with the option holds no lease while its own presence is not visible, so
// that a standby never takes over from a leader that had not subscribed yet.
func TestTakeoverNeedsOwnPresence(t *testing.T) {
	srv := redisserver.New(t)
	c := newClient(t, srv.Addr())
	// A user that may do everything but SUBSCRIBE: its presence never appears.
	if err := c.Do(t.Context(), "ACL", "SETUSER", "nosub", "on", ">pw", "~*", "&*", "+@all", "-subscribe").Err(); err != nil {
		t.Fatal(err)
	}
	nc := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: "nosub", Password: "pw", MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = nc.Close() })
	a := startNode(t, nc, election.Config{InstanceID: "a", LeaseTTL: time.Second, TakeoverOnDisconnect: true}, nil)
	select {
	case term := <-a.starts:
		t.Fatalf("a led (token %d) without its presence", term.Token)
	case <-time.After(1500 * time.Millisecond):
	}
	if n := a.rec.count("acquire/fail"); n < 10 {
		t.Errorf("a made %d refused acquires in 1.5s, want it to try every PresenceInterval", n)
	}
	b := startNode(t, c, election.Config{InstanceID: "b", LeaseTTL: time.Second, TakeoverOnDisconnect: true}, nil)
	b.term(t, wait)
}
