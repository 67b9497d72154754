package election_test

import (
	"context"
	"testing"
	"time"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/internal/redisserver"
)

// pausedRedis is the queued-acquire case: Redis stopped (SIGSTOP) for longer than the lease
// while several electors wait. Their requests time out and stay queued in Redis; when it
// resumes, one of the acquires that its client already gave up on takes the lock.
const (
	pausedLease = 2 * time.Second
	pausedRetry = 100 * time.Millisecond
	pausedFor   = pausedLease + time.Second
)

func pausedConfig(id string) election.Config {
	return election.Config{InstanceID: id, LeaseTTL: pausedLease, RetryInterval: pausedRetry}
}

// pauseAndResume stops srv for pausedFor while nodes campaign, resumes it, and returns when
// it resumed, the token led before, and the first term led after (any node).
func pauseAndResume(tb testing.TB, srv *redisserver.Server, nodes []*node) (resumed time.Time, before int64, first began) {
	tb.Helper()
	l := leaderOf(tb, wait, nodes...)
	before = l.e.Status().Token
	time.Sleep(3 * pausedRetry) // the standbys have seen the lease and wait
	if err := srv.Pause(); err != nil {
		tb.Fatal(err)
	}
	time.Sleep(pausedFor)
	resumed = time.Now()
	if err := srv.Resume(); err != nil {
		tb.Fatal(err)
	}
	first = firstTermAbove(tb, wait, before, nodes...)
	return resumed, before, first
}

// After Redis was unreachable for longer than the lease, the first term under a new token
// starts within about RetryInterval of Redis answering again, and with the token that the
// queued acquire took: the elector whose acquire reply was lost finds its own value in the
// lock and adopts that term instead of waiting a whole lease for it to expire.
func TestRedisPausedLongerThanLease(t *testing.T) {
	srv := redisserver.New(t)
	var nodes []*node
	for _, id := range []string{"a", "b", "c"} {
		nodes = append(nodes, startNode(t, newClient(t, srv.Addr()), pausedConfig(id), nil))
	}
	resumed, before, first := pauseAndResume(t, srv, nodes)
	took := first.at.Sub(resumed)
	t.Logf("token %d -> %d (%s) %v after Redis resumed", before, first.term.Token, first.term.Instance, took)
	// RetryInterval + 100ms is the target (measured in BenchmarkLostReply); the bound is
	// generous for a loaded machine and still well under the lease.
	if bound := pausedLease / 2; took > bound {
		t.Errorf("first new term %v after Redis resumed, want < %v (lease %v)", took, bound, pausedLease)
	}
	if first.term.Token != before+1 {
		t.Errorf("first new term has token %d after %d: the queued acquire's lease was wasted", first.term.Token, before)
	}
}

// A proxy delivers the acquire and drops its reply: the lock is the standby's, and it does
// not know. When replies flow again, its next attempt finds its own value and adopts the
// term (same token), instead of waiting for the lease to expire.
func TestLostAcquireReplyAdopted(t *testing.T) {
	srv := redisserver.New(t)
	p := startProxy(t, srv.Addr())
	direct := newClient(t, srv.Addr())
	ctx := context.Background()
	const name = "lost"
	lease := 5 * time.Second
	// Another instance holds the lease (token 1) while b campaigns through the proxy.
	if err := direct.Set(ctx, election.TokenKey(name), 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := direct.Set(ctx, election.LockKey(name), election.LockValue("a", 1), time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	cfg := election.Config{InstanceID: "b", Name: name, LeaseTTL: lease,
		RetryInterval: 300 * time.Millisecond, RequestTimeout: 300 * time.Millisecond}
	b := startNode(t, newClient(t, p.addr()), cfg, nil)
	if !b.rec.eventually("acquire/fail", 1, wait) {
		t.Fatalf("b made no attempt: %v", b.rec.snapshot())
	}
	// Right after one of b's attempts (the next is RetryInterval away): drop the replies
	// and free the lock without a release notice.
	n := b.rec.count("acquire/fail")
	if !b.rec.eventually("acquire/fail", n+1, wait) {
		t.Fatalf("b stopped campaigning: %v", b.rec.snapshot())
	}
	p.dropReplies(true)
	if err := direct.Del(ctx, election.LockKey(name)).Err(); err != nil {
		t.Fatal(err)
	}
	var info election.Info
	deadline := time.Now().Add(wait)
	for {
		var err error
		if info, err = election.Leader(ctx, direct, name); err == nil && info.Held {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b's acquire did not reach Redis: %+v, %v; steps %v", info, err, b.rec.snapshot())
		}
		time.Sleep(time.Millisecond)
	}
	if info.Instance != "b" || info.Token != 2 {
		t.Fatalf("lock = %+v, want b's token 2", info)
	}
	if !b.rec.eventually("acquire/unknown", 1, wait) {
		t.Fatalf("b's steps = %v, want an unknown acquire", b.rec.snapshot())
	}
	if st := b.e.Status(); st.Role == election.RoleLeader {
		t.Fatalf("b leads without having heard a reply: %+v", st)
	}
	healed := time.Now()
	p.dropReplies(false)
	first := firstTermAbove(t, wait, 1, b)
	took := first.at.Sub(healed)
	t.Logf("b led token %d %v after the replies flowed again; steps %v", first.term.Token, took, b.rec.snapshot())
	// At most RequestTimeout (an attempt under way when replies stopped) + RetryInterval
	// + round trips; without recovery, the rest of the 5s lease.
	if bound := 1500 * time.Millisecond; took > bound {
		t.Errorf("b led %v after the heal, want < %v", took, bound)
	}
	if first.term.Token != 2 {
		t.Errorf("b led token %d, want the lost acquire's token 2", first.term.Token)
	}
	if info, err := election.Leader(ctx, direct, name); err != nil || info.Counter != 2 {
		t.Errorf("Leader = %+v, %v: want the counter still at 2 (no token wasted)", info, err)
	}
}
