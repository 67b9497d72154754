package nemesis_test

import (
	"cmp"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/backend/proc"
	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/nemesis"
)

// TestPresenceLoss: a leader whose presence channel is denied keeps running and reaching
// Redis, yet a standby takes its lease over (takeover on disconnect) and it steps down as
// a follower; the other nodes' presence stays. The heal gives its presence back.
func TestPresenceLoss(t *testing.T) {
	c, _, present := presenceCluster(t, "")
	ctx := context.Background()
	old, tok := leader(t, c, 0)
	f, err := nemesis.ByKind(faults.PresenceLoss)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.(nemesis.Confirmer); !ok {
		t.Error("presence-loss does not confirm its effect: the harness records no interval in which it held")
	}
	what, err := f.Inject(ctx, c, old, nemesis.Params{LeaseTTL: lease})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("injected on %s: %s", old, what)
	if present(old) {
		t.Fatalf("%s's presence still visible after the injection", old)
	}
	start := time.Now()
	_, newTok := leader(t, c, tok, old)
	if took := time.Since(start); took > lease {
		// A takeover, not a lease that ran out: the fault leaves renewals alone.
		t.Errorf("a standby took over %v after the injection, more than the lease %v", took, lease)
	}
	eventually(t, electTimeout, old+" steps down, alive", func() bool { return c.Running(old) && role(c, old) == "follower" })
	time.Sleep(200 * time.Millisecond)
	if present(old) {
		t.Fatalf("%s's presence came back before the heal", old)
	}
	for _, id := range c.Nodes() {
		if id != old && !present(id) {
			t.Errorf("%s's presence gone, though the fault aimed at %s", id, old)
		}
	}
	what, err = f.Heal(ctx, c, old)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("healed: %s", what)
	eventually(t, electTimeout, old+"'s presence back after the heal", func() bool { return present(old) })
	if id, tok2, ok := backend.Leader(ctx, c); !ok || tok2 < newTok || id == old && tok2 == tok {
		t.Fatalf("after heal: leader %s token %d (ok %v), want the new term (>= %d)", id, tok2, ok, newTok)
	}
}

// presenceCluster starts three nodes of variant that take over on disconnect, and waits
// until each one's presence is visible; present tells whether node id's is, through rc,
// a client of their Redis.
func presenceCluster(t *testing.T, variant string) (c *proc.Backend, rc *redis.Client, present func(id string) bool) {
	t.Helper()
	c = proc.StartT(t, backend.Spec{Nodes: 3, SourceRate: 200,
		Node: backend.NodeOptions{LeaseTTL: lease, Batch: 10, TakeoverOnDisconnect: true, Variant: variant}})
	rc = election.NewClient(c.RedisAddr())
	t.Cleanup(func() { rc.Close() })
	present = func(id string) bool {
		ch := election.PresenceChannel("", id)
		n, err := rc.PubSubNumSub(context.Background(), ch).Result()
		return err == nil && n[ch] == 1
	}
	for _, id := range c.Nodes() {
		eventually(t, electTimeout, id+"'s presence visible", func() bool { return present(id) })
	}
	return c, rc, present
}

// A Redis whose default user may not use every channel is refused with a clear error: the
// heal could not give back what the fault took.
func TestPresenceLossNeedsEveryChannel(t *testing.T) {
	c := proc.StartT(t, backend.Spec{Nodes: 1, SourceRate: 200, Node: backend.NodeOptions{LeaseTTL: lease, Batch: 10}})
	rc := election.NewClient(c.RedisAddr())
	t.Cleanup(func() { rc.Close() })
	if err := rc.Do(context.Background(), "ACL", "SETUSER", "default", "resetchannels", "&x").Err(); err != nil {
		t.Fatal(err)
	}
	f, err := nemesis.ByKind(faults.PresenceLoss)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Inject(context.Background(), c, "n1", nemesis.Params{LeaseTTL: lease}); !errors.Is(err, nemesis.ErrPresenceACL) {
		t.Fatalf("inject = %v, want ErrPresenceACL", err)
	}
}

// TestPresenceFlap: the leader's presence vanishes until the standbys' polls see it
// gone, and is back, continuously, before their stalled takeovers run. The reference's
// takeover script finds the holder present and leaves its lock alone; one that trusts
// the poll (variant non-atomic-takeover) takes a live, present leader's lease. Sustained
// holds while the subscription stays, and not once it was dropped and made again.
func TestPresenceFlap(t *testing.T) {
	for _, c := range []struct {
		variant  string
		takeover bool
	}{{"", false}, {"non-atomic-takeover", true}} {
		t.Run(cmp.Or(c.variant, "reference"), func(t *testing.T) {
			t.Parallel()
			cl, rc, present := presenceCluster(t, c.variant)
			ctx := context.Background()
			old, tok := leader(t, cl, 0)
			f, err := nemesis.ByKind(faults.PresenceFlap)
			if err != nil {
				t.Fatal(err)
			}
			s, ok := f.(nemesis.Sustainer)
			if !ok {
				t.Fatal("presence-flap cannot tell whether the presence stayed: the harness would record an interval it did not check")
			}
			start := time.Now()
			what, err := f.Inject(ctx, cl, old, nemesis.Params{LeaseTTL: lease})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("injected on %s in %v: %s", old, time.Since(start), what)
			if !present(old) {
				t.Fatalf("%s's presence not back after the injection", old)
			}
			// The standbys' stall (a lease) ends, and their takeover scripts run.
			time.Sleep(lease * 3 / 2)
			id, tok2, ok := backend.Leader(ctx, cl)
			if taken := !ok || id != old || tok2 != tok; taken != c.takeover {
				t.Errorf("after the flap: leader %s token %d (ok %v), was %s token %d; want taken over %v", id, tok2, ok, old, tok, c.takeover)
			}
			held, err := s.Sustained(ctx, cl, old)
			if err != nil || !held {
				t.Errorf("Sustained = %v, %v with the subscription untouched; want true", held, err)
			}
			if _, err := f.Heal(ctx, cl, old); err != nil {
				t.Fatal(err)
			}
			if c.takeover {
				return
			}
			// The subscription dropped and made again on a new connection: not sustained.
			list, err := rc.ClientList(ctx).Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(list, "\n") {
				if strings.Contains(line, " sub=") && !strings.Contains(line, " sub=0 ") {
					id, _, _ := strings.Cut(strings.TrimPrefix(line, "id="), " ")
					if err := rc.Do(ctx, "CLIENT", "KILL", "ID", id).Err(); err != nil {
						t.Fatal(err)
					}
				}
			}
			eventually(t, electTimeout, old+"'s presence back on a new connection", func() bool { return present(old) })
			if held, err := s.Sustained(ctx, cl, old); err != nil || held {
				t.Errorf("Sustained = %v, %v after every subscription was made again; want false", held, err)
			}
		})
	}
}
