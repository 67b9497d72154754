package nemesis_test

import (
	"context"
	"errors"
	"testing"
	"time"

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
	c := proc.StartT(t, backend.Spec{Nodes: 3, SourceRate: 200,
		Node: backend.NodeOptions{LeaseTTL: lease, Batch: 10, TakeoverOnDisconnect: true}})
	rc := election.NewClient(c.RedisAddr())
	t.Cleanup(func() { rc.Close() })
	ctx := context.Background()
	present := func(id string) bool {
		ch := election.PresenceChannel("", id)
		n, err := rc.PubSubNumSub(ctx, ch).Result()
		return err == nil && n[ch] == 1
	}
	old, tok := leader(t, c, 0)
	for _, id := range c.Nodes() {
		eventually(t, electTimeout, id+"'s presence visible", func() bool { return present(id) })
	}
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
