//go:build chaos

package election_test

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

// The chaos seam replaces the release, and only the release: the elector calls the
// installed function with its own client and keys when it steps down, and the lease is
// taken and renewed as usual.
func TestSetReleaseForChaos(t *testing.T) {
	client, el := seamElector(t)
	var mu sync.Mutex
	var calls [][3]string
	err := election.SetReleaseForChaos(el, func(ctx context.Context, c redis.UniversalClient, lock, value, channel string) (bool, error) {
		mu.Lock()
		calls = append(calls, [3]string{lock, value, channel})
		mu.Unlock()
		return c.Del(ctx, lock).Val() == 1, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	n := runNode(t, "n1", el)
	n.term(t, 10*time.Second)
	if err := election.SetReleaseForChaos(el, nil); !errors.Is(err, election.ErrRunning) {
		t.Errorf("SetReleaseForChaos on a running elector: %v, want ErrRunning", err)
	}
	if err := n.stopped(); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := [3]string{election.LockKey("seam"), "n1:1", election.ReleaseChannel("seam")}
	if len(calls) != 1 || calls[0] != want {
		t.Fatalf("release calls %q, want one %q", calls, want)
	}
	if n, _ := client.Exists(context.Background(), election.LockKey("seam")).Result(); n != 0 {
		t.Error("the lock outlived the replaced release")
	}
}

// The renewal seam: the elector renews through the installed function with its own
// client, lock and value, and a renewal that reports the lease lost ends the term.
func TestSetRenewForChaos(t *testing.T) {
	_, el := seamElector(t)
	var mu sync.Mutex
	var calls []string
	err := election.SetRenewForChaos(el, func(ctx context.Context, c redis.UniversalClient, lock, value string, ttl time.Duration) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, lock+" "+value+" "+ttl.String())
		return len(calls) < 2, nil // the second renewal finds the lease gone
	})
	if err != nil {
		t.Fatal(err)
	}
	n := runNode(t, "n1", el)
	defer n.stop()
	if tm := n.term(t, 10*time.Second); tm.Token != 1 {
		t.Fatalf("term %+v, want token 1", tm)
	}
	n.end(t, 10*time.Second)
	if err := election.SetRenewForChaos(el, nil); !errors.Is(err, election.ErrRunning) {
		t.Errorf("SetRenewForChaos on a running elector: %v, want ErrRunning", err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := election.LockKey("seam") + " n1:1 1s"
	if len(calls) < 2 || calls[0] != want || calls[1] != want {
		t.Fatalf("renew calls %q, want two or more of %q", calls, want)
	}
}

// seamElector is an elector of a lease of 1 s on a Redis of its own, not running.
func seamElector(t *testing.T) (redis.UniversalClient, *election.Elector) {
	t.Helper()
	client := newClient(t, redisserver.New(t).Addr())
	el, err := election.New(client, election.Config{InstanceID: "n1", Name: "seam", LeaseTTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return client, el
}
