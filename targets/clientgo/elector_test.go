package clientgo

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/internal/redisserver"
	"github.com/fenceline/fenceline/targets"
)

// node is one elector of a test, with its own Redis client and context.
type node struct {
	id     string
	e      *Elector
	client *redis.Client
	cancel context.CancelFunc
	done   chan struct{}
}

// cluster runs n electors of target on srv; each term they lead is sent on terms.
func cluster(t *testing.T, srv *redisserver.Server, target string, n int, terms chan<- election.Term) []*node {
	t.Helper()
	var nodes []*node
	for i := range n {
		nd := &node{id: fmt.Sprintf("n%d", i+1), done: make(chan struct{})}
		nd.client = redis.NewClient(election.ClientOptions(srv.Addr()))
		e, err := New(nd.client, Config{Target: target, InstanceID: nd.id, Name: "e-" + target, LeaseDuration: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		nd.e = e
		ctx, cancel := context.WithCancel(context.Background())
		nd.cancel = cancel
		go func() {
			defer close(nd.done)
			if err := e.Run(ctx, func(ctx context.Context, term election.Term) {
				terms <- term
				<-ctx.Done()
			}); err != nil {
				t.Errorf("%s: Run: %v", nd.id, err)
			}
		}()
		nodes = append(nodes, nd)
	}
	t.Cleanup(func() {
		for _, nd := range nodes {
			nd.cancel()
			<-nd.done
			nd.client.Close()
		}
	})
	return nodes
}

func next(t *testing.T, terms <-chan election.Term) election.Term {
	t.Helper()
	select {
	case term := <-terms:
		return term
	case <-time.After(20 * time.Second):
		t.Fatal("no term started within 20s")
	}
	return election.Term{}
}

// oneLeader waits until exactly one elector says it leads, the one of term, and the
// others have observed it, and fails the test if that does not happen in time.
func oneLeader(t *testing.T, nodes []*node, term election.Term) {
	t.Helper()
	var last string
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		leaders, observed := 0, 0
		for _, nd := range nodes {
			st := nd.e.Status()
			if st.Role == election.RoleLeader {
				leaders++
			}
			if st.Leader == term.Instance && st.LeaderToken == term.Token {
				observed++
			}
		}
		live := 0
		for _, nd := range nodes {
			select {
			case <-nd.done:
			default:
				live++
			}
		}
		if leaders == 1 && observed == live {
			return
		}
		last = fmt.Sprintf("%d leaders, %d of %d running electors observe %s (token %d)", leaders, observed, live, term.Instance, term.Token)
	}
	t.Fatalf("no single leader: %s", last)
}

// TestFailover: three electors of each client-go target elect one leader, which all
// observe; when its context is cancelled (client-go releases the record) or its
// connection to Redis is closed (it can neither renew nor release: a crash, as Redis
// sees it), another node leads under a greater token.
func TestFailover(t *testing.T) {
	srv := redisserver.New(t)
	for _, target := range []string{targets.ClientGo, targets.ClientGoFenced, targets.ClientGoTransitions} {
		t.Run(target, func(t *testing.T) {
			terms := make(chan election.Term, 16)
			nodes := cluster(t, srv, target, 3, terms)
			byID := map[string]*node{}
			for _, nd := range nodes {
				byID[nd.id] = nd
			}
			first := next(t, terms)
			oneLeader(t, nodes, first)

			byID[first.Instance].cancel()
			second := next(t, terms)
			if second.Instance == first.Instance || second.Token <= first.Token {
				t.Fatalf("after %s (token %d) stopped, %s led with token %d", first.Instance, first.Token, second.Instance, second.Token)
			}
			<-byID[first.Instance].done
			oneLeader(t, nodes, second)

			byID[second.Instance].client.Close()
			third := next(t, terms)
			if third.Instance == second.Instance || third.Instance == first.Instance || third.Token <= second.Token {
				t.Fatalf("after %s (token %d) lost Redis, %s led with token %d", second.Instance, second.Token, third.Instance, third.Token)
			}
		})
	}
}

// TestLeadReturned: a lead func that returns on its own ends the term; the record is
// released and a term starts again, under a greater token.
func TestLeadReturned(t *testing.T) {
	srv := redisserver.New(t)
	client := redis.NewClient(election.ClientOptions(srv.Addr()))
	defer client.Close()
	rec := &steps{}
	e, err := New(client, Config{Target: targets.ClientGoFenced, InstanceID: "a", Name: "ret", LeaseDuration: time.Second, Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	terms := make(chan election.Term, 4)
	done := make(chan error, 1)
	go func() {
		done <- e.Run(ctx, func(_ context.Context, term election.Term) { terms <- term })
	}()
	a, b := next(t, terms), next(t, terms)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if b.Token <= a.Token {
		t.Fatalf("tokens %d then %d: want a greater one", a.Token, b.Token)
	}
	if got := rec.reasons(); len(got) < 2 || got[0] != election.ReasonLeadReturned {
		t.Fatalf("step-downs %v, want lead-returned first", got)
	}
	if rec.count(election.OpRelease, election.OK) < 1 {
		t.Fatal("no release recorded after lead returned")
	}
}

// steps is a Recorder that keeps what it is told.
type steps struct {
	mu       sync.Mutex
	stepDown []election.Reason
	outcomes map[election.Op]map[election.Outcome]int
}

func (s *steps) Invoke(op election.Op, _ int64) func(election.Result) {
	return func(r election.Result) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.outcomes == nil {
			s.outcomes = map[election.Op]map[election.Outcome]int{}
		}
		if s.outcomes[op] == nil {
			s.outcomes[op] = map[election.Outcome]int{}
		}
		s.outcomes[op][r.Outcome]++
	}
}

func (s *steps) StepDown(_ int64, r election.Reason) {
	s.mu.Lock()
	s.stepDown = append(s.stepDown, r)
	s.mu.Unlock()
}

func (s *steps) reasons() []election.Reason {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]election.Reason(nil), s.stepDown...)
}

func (s *steps) count(op election.Op, o election.Outcome) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.outcomes[op][o]
}

// TestNewRefuses: a target that is not client-go's, a lease client-go cannot write in
// whole seconds, durations client-go refuses.
func TestNewRefuses(t *testing.T) {
	client := redis.NewClient(election.ClientOptions("127.0.0.1:1"))
	defer client.Close()
	for _, c := range []Config{
		{Target: targets.Redsync, InstanceID: "a"},
		{Target: targets.ClientGo},
		{Target: targets.ClientGo, InstanceID: "a", LeaseDuration: 1500 * time.Millisecond},
		{Target: targets.ClientGo, InstanceID: "a", LeaseDuration: 500 * time.Millisecond},
		{Target: targets.ClientGo, InstanceID: "a", LeaseDuration: 2 * time.Second, RenewDeadline: 3 * time.Second},
		{Target: targets.ClientGo, InstanceID: "a", LeaseDuration: 2 * time.Second, RetryPeriod: 1200 * time.Millisecond},
		{Target: targets.ClientGo, InstanceID: "a", Name: "{x}"},
	} {
		if _, err := New(client, c); err == nil {
			t.Errorf("New(%+v): no error", c)
		}
	}
	if _, err := New(nil, Config{Target: targets.ClientGo, InstanceID: "a"}); err == nil {
		t.Error("New without a client: no error")
	}
	e, err := New(client, Config{Target: targets.ClientGo, InstanceID: "a", LeaseDuration: 15 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if c := e.cfg; c.RenewDeadline != 10*time.Second || c.RetryPeriod != 2*time.Second {
		t.Errorf("--lease-ttl 15s: RenewDeadline %v, RetryPeriod %v; want client-go's 10s and 2s", c.RenewDeadline, c.RetryPeriod)
	}
	if err := e.Check(time.Second); err != nil || e.Status().Role != election.RoleFollower {
		t.Errorf("before Run: Check %v, Status %+v", err, e.Status())
	}
}
