//go:build chaos

package variants

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/internal/redisserver"
)

// The antirez/Kleppmann scenario on three real servers: a holds the lock on a bare
// majority (the run's Redis and the first server); the first server forgets it (a
// restart without persistence); b then locks a majority too, while a's lease runs. a's
// next extension finds a majority gone and reports the lease lost.
func TestRedlockRestartGrantsTwice(t *testing.T) {
	ctx := context.Background()
	var clients []redis.UniversalClient
	for range 1 + RedlockServers {
		c := election.NewClient(redisserver.New(t).Addr())
		t.Cleanup(func() { c.Close() })
		clients = append(clients, c)
	}
	main, servers := clients[0], clients[1:]
	r := &redlock{servers: servers}
	lock, counter := election.LockKey(t.Name()), election.TokenKey(t.Name())
	acquire := func(who string) (int64, bool) {
		t.Helper()
		token, won, _, _, err := r.acquire(ctx, main, lock, counter, who, 10*time.Second, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		return token, won
	}

	// a takes every server; b cannot, and leaves nothing behind.
	ta, won := acquire("a")
	if !won {
		t.Fatal("a did not win three free servers")
	}
	if _, won := acquire("b"); won {
		t.Fatal("b won a held lock")
	}
	valueA := election.LockValue("a", ta)
	for i, c := range clients {
		if v := c.Get(ctx, lock).Val(); v != valueA {
			t.Fatalf("server %d holds %q, want a's %q", i, v, valueA)
		}
	}
	// a's lock on the second server runs out (a was cut off from it): still a majority.
	servers[1].Del(ctx, lock)
	if ok, err := r.renew(ctx, main, lock, valueA, 10*time.Second); !ok || err != nil {
		t.Fatalf("renew on two of three: %v %v, want kept", ok, err)
	}
	if _, won := acquire("b"); won {
		t.Fatal("b won with one server")
	}
	if v := servers[1].Get(ctx, lock).Val(); v != "" {
		t.Fatalf("b's failed attempt left %q on the free server", v)
	}
	// The first server restarts without persistence: b wins a majority beside a.
	if err := servers[0].FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	tb, won := acquire("b")
	if !won || tb <= ta {
		t.Fatalf("b won %v (token %d, a's %d): want a second grant, with a later token", won, tb, ta)
	}
	if ok, err := r.renew(ctx, main, lock, valueA, 10*time.Second); ok || err != nil {
		t.Fatalf("a's renewal with one server: %v %v, want lost", ok, err)
	}
	if ok, err := r.renew(ctx, main, lock, election.LockValue("b", tb), 10*time.Second); !ok || err != nil {
		t.Fatalf("b's renewal: %v %v, want kept", ok, err)
	}
	// A release deletes only b's locks, everywhere.
	if ok, err := r.release(ctx, main, lock, election.LockValue("b", tb), election.ReleaseChannel(t.Name())); !ok || err != nil {
		t.Fatalf("release: %v %v", ok, err)
	}
	if v := main.Get(ctx, lock).Val(); v != valueA {
		t.Errorf("the run's Redis holds %q after b's release, want a's", v)
	}
	for i, c := range servers {
		if n := c.Exists(ctx, lock).Val(); n != 0 {
			t.Errorf("server %d still holds the lock after b's release", i+1)
		}
	}
}

// A renewal that reaches too few servers to know is unknown, not lost.
func TestRedlockRenewUnknown(t *testing.T) {
	ctx := context.Background()
	main := election.NewClient(redisserver.New(t).Addr())
	defer main.Close()
	dead := election.NewClient("127.0.0.1:1") // nothing listens there
	defer dead.Close()
	r := &redlock{servers: []redis.UniversalClient{dead, dead}}
	lock := election.LockKey(t.Name())
	main.Set(ctx, lock, "a:1", time.Minute)
	ok, err := r.renew(ctx, main, lock, "a:1", time.Minute)
	if ok || err == nil {
		t.Fatalf("renew with one server of three answering: %v %v, want unknown (an error)", ok, err)
	}
	if ok, err := r.renew(ctx, main, lock, "b:2", time.Minute); ok || err == nil {
		t.Fatalf("renew of another's lock, two servers silent: %v %v, want unknown", ok, err)
	}
	el, _ := election.New(main, election.Config{InstanceID: "n1", Name: "x"})
	if err := Elector(RedlockMajority, el, nil); !errors.Is(err, ErrRedlockServers) {
		t.Errorf("redlock without servers: %v, want ErrRedlockServers", err)
	}
	if err := Elector(Reference, el, []redis.UniversalClient{dead}); !errors.Is(err, ErrRedlockServers) {
		t.Errorf("servers for the reference: %v, want ErrRedlockServers", err)
	}
}
