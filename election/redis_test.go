package election_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/internal/redisserver"
	"github.com/fenceline/fenceline/node/skewclock"
)

// Generous bounds: the machine has two shared, noisy cores and tests run with -race.
const (
	wait      = 10 * time.Second
	fastBound = 500 * time.Millisecond
)

func TestOneLeaderAmongMany(t *testing.T) {
	srv := redisserver.New(t)
	var active leaders
	var nodes []*node
	for _, id := range []string{"a", "b", "c", "d"} {
		nodes = append(nodes, startNode(t, newClient(t, srv.Addr()), election.Config{InstanceID: id}, &active))
	}
	l := leaderOf(t, wait, nodes...)
	time.Sleep(3 * time.Second) // several renewals and standby retries
	if l2 := leaderOf(t, wait, nodes...); l2 != l {
		t.Errorf("leader changed from %s to %s without a fault", l.id, l2.id)
	}
	for _, n := range nodes {
		st := n.e.Status()
		if n != l && (st.Role != election.RoleFollower || st.Leader != l.id || st.LeaderToken != 1) {
			t.Errorf("%s: status %+v, want follower seeing %s/1", n.id, st, l.id)
		}
	}
	if m := active.most.Load(); m != 1 {
		t.Errorf("%d lead funcs ran at once, want 1", m)
	}
	info, err := election.Leader(context.Background(), newClient(t, srv.Addr()), "")
	if err != nil || !info.Held || info.Instance != l.id || info.Token != 1 || info.Counter != 1 ||
		info.TTL <= 0 || info.TTL > election.DefaultLeaseTTL {
		t.Errorf("Leader = %+v, %v; want %s holding token 1", info, err, l.id)
	}
}

// Graceful handoffs go through pub/sub (the lease and the retry interval are 10s, so
// nothing else could explain a fast takeover), and every term's token is greater.
func TestGracefulHandoffIncreasesTokens(t *testing.T) {
	srv := redisserver.New(t)
	cfg := func(id string) election.Config {
		return election.Config{InstanceID: id, LeaseTTL: 10 * time.Second, RetryInterval: 10 * time.Second}
	}
	c := newClient(t, srv.Addr())
	nodes := []*node{startNode(t, c, cfg("a"), nil)}
	last := nodes[0].term(t, wait).Token
	nodes = append(nodes, startNode(t, c, cfg("b"), nil), startNode(t, c, cfg("c"), nil))
	time.Sleep(100 * time.Millisecond) // b and c subscribed and waiting

	for i := 0; i < 5; i++ {
		old := leaderOf(t, wait, nodes...)
		began := time.Now()
		old.stop()
		if e := old.end(t, wait); !errors.Is(e.cause, context.Canceled) {
			t.Errorf("%s: term ended by %v, want context.Canceled", old.id, e.cause)
		}
		var next *node
		var term election.Term
		select {
		case term = <-nodes[(indexOf(nodes, old)+1)%3].starts:
		case term = <-nodes[(indexOf(nodes, old)+2)%3].starts:
		case <-time.After(wait):
			t.Fatalf("handoff %d: no new leader within %v", i, wait)
		}
		took := time.Since(began)
		next = byID(nodes, term.Instance)
		t.Logf("handoff %d: %s -> %s (token %d) in %v", i, old.id, next.id, term.Token, took)
		if took > fastBound {
			t.Errorf("handoff %d took %v, want < %v", i, took, fastBound)
		}
		if term.Token <= last {
			t.Errorf("handoff %d: token %d after %d, want strictly greater", i, term.Token, last)
		}
		last = term.Token
		if old.rec.count("release/ok") != 1 {
			t.Errorf("%s: steps %v, want one ok release", old.id, old.rec.snapshot())
		}
		// Restart the old leader as a standby.
		nodes[indexOf(nodes, old)] = startNode(t, c, cfg(old.id), nil)
		time.Sleep(100 * time.Millisecond)
	}
}

func indexOf(nodes []*node, n *node) int {
	for i := range nodes {
		if nodes[i] == n {
			return i
		}
	}
	return -1
}

func byID(nodes []*node, id string) *node {
	for _, n := range nodes {
		if n.id == id {
			return n
		}
	}
	return nil
}

// A leader cut off from Redis by a blackhole steps down on its own deadline, although its
// renewal never gets an answer; a standby takes over with a greater token.
func TestBlackholedLeaderStepsDown(t *testing.T) {
	srv := redisserver.New(t)
	p := startProxy(t, srv.Addr())
	cfg := election.Config{LeaseTTL: time.Second}
	cfg.InstanceID = "a"
	a := startNode(t, newClient(t, p.addr()), cfg, nil)
	ta := a.term(t, wait)
	cfg.InstanceID = "b"
	b := startNode(t, newClient(t, srv.Addr()), cfg, nil)
	time.Sleep(500 * time.Millisecond)

	cut := time.Now()
	p.blackhole(true)
	end := a.end(t, wait)
	if !errors.Is(end.cause, election.ErrLeaseExpired) {
		t.Errorf("a's term ended by %v, want ErrLeaseExpired", end.cause)
	}
	// The deadline is at most LeaseTTL - DriftMargin after the last renewal was sent,
	// which was before the cut.
	if d := end.at.Sub(cut); d > cfg.LeaseTTL+fastBound {
		t.Errorf("a stepped down %v after the cut, want < %v", d, cfg.LeaseTTL+fastBound)
	}
	tb := b.term(t, wait)
	if tb.Token <= ta.Token {
		t.Errorf("b's token %d, a's %d: want greater", tb.Token, ta.Token)
	}
	if !a.rec.eventually("step-down/lease-expired", 1, wait) || !a.rec.eventually("renew/unknown", 1, wait) {
		t.Errorf("a's steps = %v, want unknown renewals and a lease-expired step-down", a.rec.snapshot())
	}
	p.blackhole(false)
	time.Sleep(2 * cfg.LeaseTTL)
	if st := a.e.Status(); st.Role != election.RoleFollower || st.Leader != "b" {
		t.Errorf("a after heal: %+v, want follower of b", st)
	}
}

// When Redis dies the leader steps down by its deadline; after a restart (with the
// append-only file) leadership resumes with a greater token.
func TestRedisRestart(t *testing.T) {
	srv := redisserver.New(t)
	a := startNode(t, newClient(t, srv.Addr()), election.Config{InstanceID: "a", LeaseTTL: time.Second}, nil)
	t1 := a.term(t, wait)
	time.Sleep(200 * time.Millisecond)
	killed := time.Now()
	srv.Kill()
	if e := a.end(t, wait); !errors.Is(e.cause, election.ErrLeaseExpired) || e.at.Sub(killed) > time.Second+fastBound {
		t.Errorf("term ended by %v %v after the kill, want ErrLeaseExpired within ~1s", e.cause, e.at.Sub(killed))
	}
	if err := srv.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	if t2 := a.term(t, wait); t2.Token <= t1.Token {
		t.Errorf("token after restart %d, before %d: want greater", t2.Token, t1.Token)
	}
}

// A former leader that restarts while another holds the lease comes back as a follower.
func TestRestartedLeaderStaysFollower(t *testing.T) {
	srv := redisserver.New(t)
	cfg := election.Config{} // default 2s lease: b must keep it through load spikes
	cfg.InstanceID = "a"
	ca := election.NewClient(srv.Addr())
	a := startNode(t, ca, cfg, nil)
	a.term(t, wait)
	cfg.InstanceID = "b"
	b := startNode(t, newClient(t, srv.Addr()), cfg, nil)

	// Crash a: its connection is gone, so its release cannot reach Redis.
	_ = ca.Close()
	a.stop()
	if a.rec.count("release/unknown") != 1 {
		t.Errorf("a's steps = %v, want its release unknown", a.rec.snapshot())
	}
	tb := b.term(t, wait)

	cfg.InstanceID = "a"
	a2 := startNode(t, newClient(t, srv.Addr()), cfg, nil)
	time.Sleep(2 * election.DefaultLeaseTTL)
	if st := a2.e.Status(); st.Role != election.RoleFollower || st.Leader != "b" || st.LeaderToken != tb.Token {
		t.Errorf("restarted a: %+v, want follower of b/%d; b's steps %v", st, tb.Token, b.rec.snapshot())
	}
	if n := a2.rec.count("acquire/fail"); n < 3 {
		t.Errorf("restarted a made %d failed attempts, want several", n)
	}
	select {
	case tt := <-a2.starts:
		t.Errorf("restarted a led term %d while b held the lease", tt.Token)
	default:
	}
}

// A clock jumped forward makes the leader step down at once (early: safe). A slow clock
// makes it renew too late: Redis expires the lease, another node takes over, and the old
// leader believes it leads until its renewal is rejected. Only a fence at the store makes
// that overlap harmless.
func TestSkewedClock(t *testing.T) {
	srv := redisserver.New(t)
	clk := skewclock.New()
	cfg := election.Config{InstanceID: "a", LeaseTTL: time.Second, Clock: clk}
	a := startNode(t, newClient(t, srv.Addr()), cfg, nil)
	t1 := a.term(t, wait)

	jumped := time.Now()
	clk.SetOffset(cfg.LeaseTTL)
	e := a.end(t, wait)
	if !errors.Is(e.cause, election.ErrLeaseExpired) || e.at.Sub(jumped) > fastBound {
		t.Errorf("after a jump: term ended by %v after %v, want ErrLeaseExpired at once", e.cause, e.at.Sub(jumped))
	}
	t2 := a.term(t, wait) // its own lease expires in Redis, and it campaigns again
	// The offset stays: SetOffset(0) now would be a backward jump, delaying a's renewals.

	b := startNode(t, newClient(t, srv.Addr()), election.Config{InstanceID: "b", LeaseTTL: time.Second}, nil)
	time.Sleep(100 * time.Millisecond)
	if err := clk.SetRate(0.25); err != nil {
		t.Fatal(err)
	}
	t3 := b.term(t, wait) // the lease expired in Redis while a still believed it led
	e = a.end(t, wait)
	if !errors.Is(e.cause, election.ErrNotHeld) {
		t.Errorf("slow clock: a's term ended by %v, want ErrNotHeld (renewal rejected)", e.cause)
	}
	if !a.rec.eventually("step-down/renew-rejected", 1, wait) {
		t.Errorf("a's steps = %v, want one renew-rejected step-down", a.rec.snapshot())
	}
	if !(t1.Token < t2.Token && t2.Token < t3.Token) {
		t.Errorf("tokens %d, %d, %d: want increasing", t1.Token, t2.Token, t3.Token)
	}
	clk.Heal()
}

func TestLeaderInfo(t *testing.T) {
	srv := redisserver.New(t)
	c := newClient(t, srv.Addr())
	ctx := context.Background()
	info, err := election.Leader(ctx, c, "x")
	if err != nil || info != (election.Info{}) {
		t.Fatalf("empty: Leader = %+v, %v; want zero Info", info, err)
	}
	if err := c.Set(ctx, election.TokenKey("x"), 41, 0).Err(); err != nil {
		t.Fatal(err)
	}
	a := startNode(t, c, election.Config{InstanceID: "node:1", Name: "x"}, nil)
	a.term(t, wait)
	info, err = election.Leader(ctx, c, "x")
	if err != nil || !info.Held || info.Instance != "node:1" || info.Token != 42 || info.Counter != 42 ||
		info.TTL <= 0 || info.TTL > election.DefaultLeaseTTL {
		t.Errorf("Leader = %+v, %v; want node:1 holding 42", info, err)
	}
	a.stop()
	if info, err = election.Leader(ctx, c, "x"); err != nil || info.Held || info.Counter != 42 {
		t.Errorf("after release: Leader = %+v, %v; want not held, counter 42", info, err)
	}
	c.Set(ctx, election.LockKey("x"), "garbage", time.Minute)
	if _, err := election.Leader(ctx, c, "x"); !errors.Is(err, election.ErrMalformedLock) {
		t.Errorf("garbage lock: err %v, want ErrMalformedLock", err)
	}
}
