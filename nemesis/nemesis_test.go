package nemesis_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/backend/proc"
	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/harness"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/internal/testbin"
	"github.com/fenceline/fenceline/nemesis"
)

func TestMain(m *testing.M) { testbin.Main(m) }

const lease = time.Second

// Generous bounds: the machine is small and shared, and other tests run alongside.
const electTimeout = 10 * time.Second

func startCluster(t *testing.T, nodes int, volatile bool) *proc.Backend {
	t.Helper()
	c := proc.StartT(t, backend.Spec{
		Nodes: nodes, NoPersistence: volatile, SourceRate: 200,
		Node: backend.NodeOptions{LeaseTTL: lease, Batch: 10},
	})
	return c
}

func leader(t *testing.T, c backend.Backend, minToken int64, exclude ...string) (string, int64) {
	t.Helper()
	id, tok, err := backend.WaitLeader(context.Background(), c, minToken, electTimeout, exclude...)
	if err != nil {
		t.Fatal(err)
	}
	return id, tok
}

func inject(t *testing.T, c backend.Backend, kind, target string, p nemesis.Params) nemesis.Fault {
	t.Helper()
	f, err := nemesis.ByKind(kind)
	if err != nil {
		t.Fatal(err)
	}
	p.LeaseTTL = lease
	if _, err := f.Inject(context.Background(), c, target, p); err != nil {
		t.Fatalf("inject %s on %s: %v", kind, target, err)
	}
	return f
}

func heal(t *testing.T, c backend.Backend, f nemesis.Fault, target string) {
	t.Helper()
	if _, err := f.Heal(context.Background(), c, target); err != nil {
		t.Fatalf("heal %s on %s: %v", f.Kind(), target, err)
	}
}

// eventually polls cond until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func role(c backend.Backend, id string) string {
	st, err := c.NodeStatus(context.Background(), id)
	if err != nil {
		return "unreachable"
	}
	return st.Role
}

// TestProcessFaults: a killed or stopped leader is gone and a standby takes over with a
// newer token; a paused leader stops renewing, loses the lease, and after SIGCONT finds
// itself a follower. Healing brings the node back, as a follower.
func TestProcessFaults(t *testing.T) {
	for _, kind := range []string{faults.Kill, faults.Stop, faults.Pause} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			c := startCluster(t, 3, false)
			old, tok := leader(t, c, 0)
			f := inject(t, c, kind, old, nemesis.Params{})
			if kind != faults.Pause && c.Running(old) {
				t.Fatalf("%s: node %s still running", kind, old)
			}
			if kind == faults.Pause {
				// SIGSTOP takes effect when the kernel next schedules the node: a request
				// already being served may still be answered.
				eventually(t, 10*time.Second, "paused node "+old+" stops answering its control endpoint", func() bool {
					_, err := c.NodeStatus(context.Background(), old)
					return err != nil
				})
			}
			_, newTok := leader(t, c, tok, old)
			heal(t, c, f, old)
			if !c.Running(old) {
				t.Fatalf("%s healed but %s not running", kind, old)
			}
			eventually(t, electTimeout, old+" back as follower", func() bool { return role(c, old) == "follower" })
			if id, tok2, ok := backend.Leader(context.Background(), c); !ok || tok2 < newTok || id == old && tok2 == tok {
				t.Fatalf("after heal: leader %s token %d (ok %v), want the new term (>= %d)", id, tok2, ok, newTok)
			}
		})
	}
}

// TestPartitions: a leader cut off from Redis (reset or blackhole) steps down on its own
// lease deadline although Redis is unreachable, a standby takes over, and after the heal
// the old leader stays a follower.
func TestPartitions(t *testing.T) {
	for _, kind := range []string{faults.PartitionReset, faults.PartitionBlackhole} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			c := startCluster(t, 3, false)
			old, tok := leader(t, c, 0)
			f := inject(t, c, kind, old, nemesis.Params{})
			leader(t, c, tok, old)
			eventually(t, electTimeout, old+" steps down while cut off", func() bool { return role(c, old) == "follower" })
			heal(t, c, f, old)
			time.Sleep(2 * lease)
			if r := role(c, old); r != "follower" {
				t.Fatalf("after heal %s is %s, want follower", old, r)
			}
		})
	}
}

// TestDelay: a write the leader sends while its link is slower than the lease reaches
// Redis after a newer leader has written, and the store rejects it as stale.
func TestDelay(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, false)
	// Whether the delayed leader still sends a write before its own deadline stops it
	// depends on where in its loop the delay catches it: a loaded machine may need
	// another round.
	var tries []string
	for round := 1; round <= 3; round++ {
		old, tok := leader(t, c, 0)
		f := inject(t, c, faults.Delay, old, nemesis.Params{Magnitude: 1})
		leader(t, c, tok, old)
		// Wait for the delayed requests to land, then heal.
		time.Sleep(nemesis.DelayLatency(nemesis.Params{Magnitude: 1, LeaseTTL: lease}) + lease)
		heal(t, c, f, old)
		st := readStore(t, c)
		for _, a := range st.Audit {
			if a.Node == old && a.Token == tok && a.Result == history.ErrStaleToken {
				return
			}
		}
		tries = append(tries, fmt.Sprintf("%s (token %d, %d audit entries)", old, tok, len(st.Audit)))
	}
	t.Fatalf("no delayed write of the delayed leader was rejected as stale in 3 rounds: %v", tries)
}

// TestClock: a leader whose clock runs at a quarter speed renews too late, loses the
// lease to another node and has its renewal rejected; a jump forward makes a leader step
// down early. Healing sets the clock right.
func TestClock(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, false)
	old, tok := leader(t, c, 0)
	f := inject(t, c, faults.Clock, old, nemesis.Params{Variant: 2}) // rate 0.25
	leader(t, c, tok, old)
	eventually(t, electTimeout, old+" steps down", func() bool { return role(c, old) == "follower" })
	heal(t, c, f, old)

	cur, tok2 := leader(t, c, 0)
	f = inject(t, c, faults.Clock, cur, nemesis.Params{Variant: 0}) // jump forward
	_, tok3 := leader(t, c, tok2)
	heal(t, c, f, cur)
	if tok3 <= tok2 {
		t.Fatalf("token did not move after a clock jump: %d -> %d", tok2, tok3)
	}
}

// TestRedisRestart: with the append-only file, the token counter survives a SIGKILL of
// Redis and the next term's token is greater; without it the counter restarts and
// tokens repeat — which is why the harness runs Redis with persistence.
func TestRedisRestart(t *testing.T) {
	for _, volatile := range []bool{false, true} {
		kind := faults.RedisRestart
		if volatile {
			kind = faults.RedisRestartVolatile
		}
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			c := startCluster(t, 2, volatile)
			leader(t, c, 0)
			// Move the counter far ahead: a node re-elected right after a volatile restart
			// then still leaves it far below where it was, with no race on the read.
			rc := election.NewClient(c.RedisAddr())
			err := rc.IncrBy(context.Background(), election.TokenKey(""), 1000).Err()
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
			before := counter(t, c)
			f := inject(t, c, kind, nemesis.AimRedis, nemesis.Params{})
			if err := redisPing(c); err == nil {
				t.Fatal("redis answers after the kill")
			}
			heal(t, c, f, nemesis.AimRedis)
			if err := redisPing(c); err != nil {
				t.Fatalf("redis after heal: %v", err)
			}
			after := counter(t, c)
			if !volatile && after < before {
				t.Fatalf("token counter went back from %d to %d with persistence", before, after)
			}
			if volatile && after >= before {
				t.Fatalf("token counter %d -> %d: expected it to restart without persistence", before, after)
			}
			// The cluster elects again after the restart.
			leader(t, c, 0)
		})
	}
}

func readStore(t *testing.T, c backend.Backend) *history.Store {
	t.Helper()
	st, err := harness.ReadStore(context.Background(), c.RedisAddr(), "")
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func counter(t *testing.T, c backend.Backend) int64 {
	t.Helper()
	rc := election.NewClient(c.RedisAddr())
	defer rc.Close()
	n, err := rc.Get(context.Background(), election.TokenKey("")).Int64()
	if err != nil && err != redis.Nil {
		t.Fatal(err)
	}
	return n
}

func redisPing(c backend.Backend) error {
	rc := election.NewClient(c.RedisAddr())
	defer rc.Close()
	return rc.Ping(context.Background()).Err()
}

// The checker explains a leadership overlap after a clock fault's heal by at most
// checker.MaxClockJump of jump: no clock fault may jump further.
func TestClockSkewWithinCheckerBound(t *testing.T) {
	for v := range 3 {
		for _, m := range []float64{0, 0.5, 0.999999} {
			off, _ := nemesis.ClockSkew(nemesis.Params{LeaseTTL: 2 * time.Second, Magnitude: m, Variant: v})
			if off < 0 {
				off = -off
			}
			if off > checker.MaxClockJump(2*time.Second) {
				t.Errorf("variant %d magnitude %g: jump %v beyond the checker's %v", v, m, off, checker.MaxClockJump(2*time.Second))
			}
		}
	}
}
