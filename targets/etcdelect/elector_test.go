package etcdelect

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/internal/etcdserver"
)

const testLease = 2 * time.Second

// event is a term's start or end, as a test's lead func sees it.
type event struct {
	term  election.Term
	start bool
	cause error // why the term ended
	at    time.Time
}

// board collects the terms that a test's electors lead.
type board struct {
	mu     sync.Mutex
	active map[string]election.Term // by instance
	maxLed int                      // most terms active at once
	ch     chan event
}

func newBoard() *board {
	return &board{active: map[string]election.Term{}, ch: make(chan event, 64)}
}

// lead records the term's start and end and leads until the term ends.
func (b *board) lead(ctx context.Context, t election.Term) {
	b.mu.Lock()
	b.active[t.Instance] = t
	b.maxLed = max(b.maxLed, len(b.active))
	b.mu.Unlock()
	b.ch <- event{term: t, start: true, at: time.Now()}
	<-ctx.Done()
	b.mu.Lock()
	delete(b.active, t.Instance)
	b.mu.Unlock()
	b.ch <- event{term: t, cause: context.Cause(ctx), at: time.Now()}
}

// next returns the next event, failing the test after within.
func (b *board) next(tb testing.TB, within time.Duration) event {
	tb.Helper()
	select {
	case ev := <-b.ch:
		return ev
	case <-time.After(within):
		tb.Fatalf("no term started or ended within %v", within)
	}
	return event{}
}

// nextStart skips ends up to the next start.
func (b *board) nextStart(tb testing.TB, within time.Duration) event {
	tb.Helper()
	end := time.Now().Add(within)
	for {
		ev := b.next(tb, time.Until(end))
		if ev.start {
			return ev
		}
	}
}

// recorder records the step-down reasons and the acquired tokens.
type recorder struct {
	mu       sync.Mutex
	reasons  []election.Reason
	acquired []int64
}

func (r *recorder) Invoke(op election.Op, _ int64) func(election.Result) {
	return func(res election.Result) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if op == election.OpAcquire && res.Outcome == election.OK {
			r.acquired = append(r.acquired, res.Token)
		}
	}
}

func (r *recorder) StepDown(_ int64, reason election.Reason) {
	r.mu.Lock()
	r.reasons = append(r.reasons, reason)
	r.mu.Unlock()
}

// node is one elector running on its own client.
type node struct {
	id     string
	client *clientv3.Client
	el     *Elector
	cancel context.CancelFunc
	done   chan struct{}
}

// start runs an elector called id on a client of endpoints until the test ends.
func start(t *testing.T, id string, endpoints []string, b *board, rec election.Recorder) *node {
	t.Helper()
	client, err := NewClient(endpoints, nil)
	if err != nil {
		t.Fatal(err)
	}
	el, err := New(client, Config{InstanceID: id, Name: "t", LeaseTTL: testLease, Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &node{id: id, client: client, el: el, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(n.done)
		if err := el.Run(ctx, b.lead); err != nil {
			t.Errorf("%s: Run: %v", id, err)
		}
	}()
	t.Cleanup(func() {
		n.stop(t)
		client.Close()
	})
	return n
}

// stop cancels the node's Run and waits for it (Run returns within a request timeout of
// its ctx, even when etcd is gone).
func (n *node) stop(t *testing.T) {
	n.cancel()
	select {
	case <-n.done:
	case <-time.After(10 * time.Second):
		t.Errorf("%s: Run did not return 10s after its ctx was cancelled", n.id)
	}
}

func byID(nodes []*node, id string) *node {
	for _, n := range nodes {
		if n.id == id {
			return n
		}
	}
	panic("no node " + id)
}

// TestOneLeaderAmongThree: three electors on a three-member cluster elect exactly one
// leader: never two terms at once, and one leader after three leases. (A loaded machine
// may stall the leader past its deadline and hand over; that is logged, not failed.)
func TestOneLeaderAmongThree(t *testing.T) {
	c := etcdserver.New(t, 3)
	b := newBoard()
	var nodes []*node
	for i := range 3 {
		nodes = append(nodes, start(t, fmt.Sprintf("n%d", i+1), c.Endpoints(), b, nil))
	}
	first := b.nextStart(t, 20*time.Second)
	for end := time.After(3 * testLease); ; {
		select {
		case ev := <-b.ch:
			t.Logf("after %s led (token %d), another event: %s start=%v token %d cause %v",
				first.term.Instance, first.term.Token, ev.term.Instance, ev.start, ev.term.Token, ev.cause)
			continue
		case <-end:
		}
		break
	}
	leaders := 0
	for _, n := range nodes {
		if n.el.Status().Role == election.RoleLeader {
			leaders++
		}
	}
	b.mu.Lock()
	maxLed := b.maxLed
	b.mu.Unlock()
	if leaders != 1 || maxLed != 1 {
		t.Fatalf("%d leaders now, at most %d at once: want 1", leaders, maxLed)
	}
}

// TestHandoverOnStop: a leader that stops resigns; a standby leads at once under a greater
// token; each stop hands over, and the tokens keep growing.
func TestHandoverOnStop(t *testing.T) {
	c := etcdserver.New(t, 1)
	b := newBoard()
	rec := &recorder{}
	var nodes []*node
	for _, id := range []string{"a", "b", "c"} {
		nodes = append(nodes, start(t, id, c.Endpoints(), b, rec))
	}
	prev := b.nextStart(t, 20*time.Second)
	for range 2 {
		stopped := time.Now()
		byID(nodes, prev.term.Instance).stop(t)
		next := b.nextStart(t, 10*time.Second)
		if next.term.Instance == prev.term.Instance || next.term.Token <= prev.term.Token {
			t.Fatalf("after %s (token %d) stopped, %s led with token %d: want another node and a greater token",
				prev.term.Instance, prev.term.Token, next.term.Instance, next.term.Token)
		}
		t.Logf("handover %s -> %s in %v (tokens %d -> %d)", prev.term.Instance, next.term.Instance,
			next.at.Sub(stopped).Round(time.Millisecond), prev.term.Token, next.term.Token)
		if d := next.at.Sub(stopped); d > testLease {
			t.Errorf("handover took %v, more than a lease: the stopped leader did not resign", d)
		}
		prev = next
	}
}

// TestFailoverOnClientClose: a leader whose client is closed (its process died, nothing
// resigned) ends its term at once (its session is lost); a standby leads once the lease
// expires in etcd, under a greater token.
func TestFailoverOnClientClose(t *testing.T) {
	c := etcdserver.New(t, 1)
	b := newBoard()
	rec := &recorder{}
	nodes := []*node{start(t, "a", c.Endpoints(), b, rec), start(t, "b", c.Endpoints(), b, rec)}
	first := b.nextStart(t, 20*time.Second)
	closed := time.Now()
	byID(nodes, first.term.Instance).client.Close()
	end := b.next(t, 10*time.Second)
	if end.start || end.term.Token != first.term.Token {
		t.Fatalf("want the end of term %d first, got %+v", first.term.Token, end)
	}
	if !errors.Is(end.cause, election.ErrLeaseLost) && !errors.Is(end.cause, election.ErrLeaseExpired) {
		t.Errorf("term ended with %v, want a lost lease or an expired one", end.cause)
	}
	second := b.nextStart(t, 10*time.Second)
	if second.term.Instance == first.term.Instance || second.term.Token <= first.term.Token {
		t.Fatalf("after %s's client closed, %s led with token %d: want the other node and a token > %d",
			first.term.Instance, second.term.Instance, second.term.Token, first.term.Token)
	}
	t.Logf("term ended %v after the close (%v); the standby led %v after it",
		end.at.Sub(closed).Round(time.Millisecond), end.cause, second.at.Sub(closed).Round(time.Millisecond))
}

// TestFailoverOnMemberKill: each elector talks to one member of three; when the leader's
// member is killed, the leader ends its term by its local deadline, and a standby leads
// under a greater token once the cluster expires the lease.
func TestFailoverOnMemberKill(t *testing.T) {
	c := etcdserver.New(t, 3)
	b := newBoard()
	members := c.Members()
	var nodes []*node
	for i, m := range members {
		nodes = append(nodes, start(t, fmt.Sprintf("n%d", i+1), []string{m.Addr()}, b, nil))
	}
	first := b.nextStart(t, 20*time.Second)
	var killed time.Time
	for i, n := range nodes {
		if n.id == first.term.Instance {
			members[i].Kill()
			killed = time.Now()
		}
	}
	end := b.next(t, 10*time.Second)
	if end.start || end.term.Token != first.term.Token || !errors.Is(end.cause, election.ErrLeaseExpired) {
		t.Fatalf("want term %d to end by its local deadline, got %+v", first.term.Token, end)
	}
	second := b.nextStart(t, 20*time.Second)
	if second.term.Token <= first.term.Token || second.term.Instance == first.term.Instance {
		t.Fatalf("after %s's member was killed, %s led with token %d: want another node and a token > %d",
			first.term.Instance, second.term.Instance, second.term.Token, first.term.Token)
	}
	t.Logf("term ended %v after the kill; the next began %v after it (tokens %d -> %d)",
		end.at.Sub(killed).Round(time.Millisecond), second.at.Sub(killed).Round(time.Millisecond), first.term.Token, second.term.Token)
}

// TestPausedMemberEndsTerm: when the single member is paused past the lease, the leader's
// term ends by its local deadline: within a lease of the pause. After the resume it
// leads again under a greater token.
func TestPausedMemberEndsTerm(t *testing.T) {
	c := etcdserver.New(t, 1)
	m := c.Members()[0]
	b := newBoard()
	rec := &recorder{}
	start(t, "a", c.Endpoints(), b, rec)
	first := b.nextStart(t, 20*time.Second)
	if err := m.Pause(); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			_ = m.Resume()
		}
	})
	end := b.next(t, 10*time.Second)
	after := end.at.Sub(paused)
	if end.start || !errors.Is(end.cause, election.ErrLeaseExpired) {
		t.Fatalf("want the term to end by its local deadline, got %+v", end)
	}
	t.Logf("term %d ended %v after the pause (lease %v)", first.term.Token, after.Round(time.Millisecond), testLease)
	if after > testLease+time.Second {
		t.Errorf("term ended %v after the pause: more than the lease (%v) and a second", after, testLease)
	}
	time.Sleep(testLease) // paused past the lease
	if err := m.Resume(); err != nil {
		t.Fatal(err)
	}
	resumed = true
	resumedAt := time.Now()
	second := b.nextStart(t, 30*time.Second)
	if second.term.Token <= first.term.Token {
		t.Fatalf("after the resume, token %d: want > %d", second.term.Token, first.term.Token)
	}
	t.Logf("led again %v after the resume, token %d", second.at.Sub(resumedAt).Round(time.Millisecond), second.term.Token)
}

// TestSessionDoneAfterPause measures the library alone: how long after its single member
// is paused a session's Done fires. The client closes it a TTL after the last keep-alive
// answer arrived, on a check once a second, so anywhere from 0 to TTL + 1 s after the
// pause; etcd expires the lease a TTL after it received the last keep-alive, up to a
// second before Done. The local deadline is why the elector does not wait for Done.
func TestSessionDoneAfterPause(t *testing.T) {
	c := etcdserver.New(t, 1)
	m := c.Members()[0]
	client, err := NewClient(c.Endpoints(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	s, err := concurrency.NewSession(client, concurrency.WithTTL(SessionTTL(testLease)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Orphan()
	time.Sleep(testLease) // a few keep-alives
	if err := m.Pause(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = m.Resume() }()
	paused := time.Now()
	select {
	case <-s.Done():
	case <-time.After(4 * testLease):
		t.Fatalf("the session's Done did not fire within %v of the pause", 4*testLease)
	}
	after := time.Since(paused)
	t.Logf("the session's Done fired %v after the pause (TTL %ds)", after.Round(time.Millisecond), SessionTTL(testLease))
	if after > testLease+time.Second+500*time.Millisecond {
		t.Errorf("Done fired %v after the pause: later than the TTL and the client's one-second check", after)
	}
}

// TestLeadReturned: a lead func that returns ends the term; the elector resigns and
// leads again under a greater token each time.
func TestLeadReturned(t *testing.T) {
	c := etcdserver.New(t, 1)
	client, err := NewClient(c.Endpoints(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	rec := &recorder{}
	el, err := New(client, Config{InstanceID: "a", LeaseTTL: testLease, RetryInterval: 10 * time.Millisecond, Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tokens := make(chan int64, 8)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = el.Run(ctx, func(_ context.Context, t election.Term) { tokens <- t.Token })
	}()
	var got []int64
	for len(got) < 3 {
		select {
		case tok := <-tokens:
			if len(got) > 0 && tok <= got[len(got)-1] {
				t.Fatalf("tokens %v then %d: want strictly increasing", got, tok)
			}
			got = append(got, tok)
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d terms in 10s", len(got))
		}
	}
	cancel()
	<-done
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, r := range rec.reasons[:2] {
		if r != election.ReasonLeadReturned {
			t.Errorf("step-down reasons %v, want lead-returned", rec.reasons)
		}
	}
	t.Logf("tokens %v; acquired %v", got, rec.acquired)
}

// TestRunReturnsWithEtcdGone: an elector whose etcd is gone (killed) stops within a few
// request timeouts of its ctx, while it campaigns.
func TestRunReturnsWithEtcdGone(t *testing.T) {
	c := etcdserver.New(t, 1)
	b := newBoard()
	a := start(t, "a", c.Endpoints(), b, nil)
	nb := start(t, "b", c.Endpoints(), b, nil)
	first := b.nextStart(t, 20*time.Second)
	c.Kill()
	standby := a
	if first.term.Instance == "a" {
		standby = nb
	}
	time.Sleep(testLease / 2)
	stopped := time.Now()
	standby.stop(t)
	t.Logf("standby %s stopped %v after its ctx was cancelled, with etcd gone", standby.id, time.Since(stopped).Round(time.Millisecond))
}

func TestBadConfig(t *testing.T) {
	client, err := NewClient([]string{"127.0.0.1:1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if _, err := New(nil, Config{InstanceID: "a"}); err == nil {
		t.Error("New with no client: no error")
	}
	if _, err := New(client, Config{}); err == nil {
		t.Error("New with no InstanceID: no error")
	}
	_, err = New(client, Config{InstanceID: "a", LeaseTTL: time.Second, RenewInterval: 2 * time.Second})
	if !errors.Is(err, election.ErrInvalidConfig) {
		t.Errorf("renew interval past the lease: %v, want ErrInvalidConfig", err)
	}
	for _, eps := range [][]string{nil, {"127.0.0.1"}, {":2379"}, {"127.0.0.1:0"}, {"127.0.0.1:2379", "h:70000"}, {"http://127.0.0.1:2379"}} {
		if _, err := NewClient(eps, nil); err == nil {
			t.Errorf("NewClient(%q): no error", eps)
		}
	}
}

func TestSessionTTL(t *testing.T) {
	for _, tc := range []struct {
		lease time.Duration
		want  int
	}{{time.Millisecond, 1}, {500 * time.Millisecond, 1}, {time.Second, 1}, {1500 * time.Millisecond, 2}, {2 * time.Second, 2}, {2001 * time.Millisecond, 3}} {
		if got := SessionTTL(tc.lease); got != tc.want {
			t.Errorf("SessionTTL(%v) = %d, want %d", tc.lease, got, tc.want)
		}
	}
}

// TestStandbyHealth: a standby waiting in Campaign tells Health that etcd answers, every
// renew interval, and that it does not once the member is paused (without it a standby
// says nothing until it wins, and the node's /health cannot tell a live standby from a
// cut-off one).
func TestStandbyHealth(t *testing.T) {
	c := etcdserver.New(t, 1)
	b := newBoard()
	leader := start(t, "leader", c.Endpoints(), b, nil)
	if ev := b.nextStart(t, 10*time.Second); ev.term.Instance != leader.id {
		t.Fatalf("first term: %s", ev.term.Instance)
	}
	heard := make(chan error, 64)
	client, err := NewClient(c.Endpoints(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	el, err := New(client, Config{InstanceID: "standby", Name: "t", LeaseTTL: testLease,
		Health: func(err error) {
			select {
			case heard <- err:
			default:
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = el.Run(ctx, b.lead) }()
	defer func() { cancel(); <-done }()
	wait := func(wantErr bool) {
		t.Helper()
		deadline := time.After(15 * time.Second)
		for {
			select {
			case err := <-heard:
				if (err != nil) == wantErr {
					return
				}
			case <-deadline:
				t.Fatalf("no Health(%s) within 15s", map[bool]string{true: "error", false: "nil"}[wantErr])
			}
		}
	}
	wait(false) // the session grant
	wait(false) // a probe while it waits
	m := c.Members()[0]
	if err := m.Pause(); err != nil {
		t.Fatal(err)
	}
	wait(true)
	if err := m.Resume(); err != nil {
		t.Fatal(err)
	}
}
