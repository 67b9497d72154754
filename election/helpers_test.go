package election_test

import (
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fenceline/fenceline/election"
	"github.com/redis/go-redis/v9"
)

// newClient returns a history-safe client of addr, closed when the test ends.
func newClient(tb testing.TB, addr string) *redis.Client {
	tb.Helper()
	c := election.NewClient(addr)
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// termEnd is a term as its lead func saw it end.
type termEnd struct {
	term  election.Term
	cause error
	at    time.Time
}

// node runs one Elector in the background for a test.
type node struct {
	id     string
	e      *election.Elector
	rec    *recorder
	starts chan election.Term // every lead call, at once
	ends   chan termEnd       // every lead return
	cancel context.CancelFunc
	done   chan struct{}
	err    error // what Run returned, once done is closed
	once   sync.Once

	mu  sync.Mutex
	led []began // every lead call, with the time it was made
}

// began is one lead call and when it was made.
type began struct {
	term election.Term
	at   time.Time
}

// leaders counts the lead funcs running at once across nodes, and the most ever.
type leaders struct{ now, most atomic.Int32 }

// startNode runs an elector with cfg on c until the test ends or stop is called.
func startNode(tb testing.TB, c redis.UniversalClient, cfg election.Config, active *leaders) *node {
	tb.Helper()
	n := newNode(cfg.InstanceID)
	if cfg.Recorder == nil {
		cfg.Recorder = n.rec
	}
	e, err := election.New(c, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	n.run(tb, e, active)
	return n
}

// runNode runs e, made by the test, until the test ends or stop is called.
func runNode(tb testing.TB, id string, e *election.Elector) *node {
	tb.Helper()
	n := newNode(id)
	n.run(tb, e, nil)
	return n
}

func newNode(id string) *node {
	return &node{id: id, rec: &recorder{}, starts: make(chan election.Term, 100),
		ends: make(chan termEnd, 100), done: make(chan struct{})}
}

func (n *node) run(tb testing.TB, e *election.Elector, active *leaders) {
	n.e = e
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	go func() {
		defer close(n.done)
		n.err = e.Run(ctx, func(ctx context.Context, t election.Term) {
			if active != nil {
				if v := active.now.Add(1); v > active.most.Load() {
					active.most.Store(v)
				}
				defer active.now.Add(-1)
			}
			n.mu.Lock()
			n.led = append(n.led, began{term: t, at: time.Now()})
			n.mu.Unlock()
			n.starts <- t
			<-ctx.Done()
			n.ends <- termEnd{term: t, cause: context.Cause(ctx), at: time.Now()}
		})
	}()
	tb.Cleanup(n.stop)
}

// stop cancels the node's Run and waits for it to return (release included).
func (n *node) stop() {
	n.once.Do(func() {
		n.cancel()
		<-n.done
	})
}

// stopped is stop, and then what Run returned.
func (n *node) stopped() error {
	n.stop()
	return n.err
}

// term waits up to d for the node's next term.
func (n *node) term(tb testing.TB, d time.Duration) election.Term {
	tb.Helper()
	select {
	case t := <-n.starts:
		return t
	case <-time.After(d):
		tb.Fatalf("%s did not become leader within %v (status %+v)", n.id, d, n.e.Status())
		return election.Term{}
	}
}

// end waits up to d for the node's current term to end.
func (n *node) end(tb testing.TB, d time.Duration) termEnd {
	tb.Helper()
	select {
	case e := <-n.ends:
		return e
	case <-time.After(d):
		tb.Fatalf("%s's term did not end within %v", n.id, d)
		return termEnd{}
	}
}

// firstTermAbove waits up to d for a lead call with a token above token on any of nodes,
// and returns the earliest such call.
func firstTermAbove(tb testing.TB, d time.Duration, token int64, nodes ...*node) began {
	tb.Helper()
	deadline := time.Now().Add(d)
	for {
		var first began
		for _, n := range nodes {
			n.mu.Lock()
			for _, b := range n.led {
				if b.term.Token > token && (first.at.IsZero() || b.at.Before(first.at)) {
					first = b
				}
			}
			n.mu.Unlock()
		}
		if !first.at.IsZero() {
			return first
		}
		if time.Now().After(deadline) {
			tb.Fatalf("no term above token %d within %v", token, d)
			return began{}
		}
		time.Sleep(time.Millisecond)
	}
}

// leaderOf waits up to d until exactly one of nodes leads, and returns it.
func leaderOf(tb testing.TB, d time.Duration, nodes ...*node) *node {
	tb.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		var found []*node
		for _, n := range nodes {
			if n.e.Status().Role == election.RoleLeader {
				found = append(found, n)
			}
		}
		if len(found) == 1 {
			return found[0]
		}
		time.Sleep(5 * time.Millisecond)
	}
	tb.Fatalf("no single leader within %v", d)
	return nil
}

// recorder keeps the steps a node's elector reports.
type recorder struct {
	mu       sync.Mutex
	steps    []string  // "op/outcome" or "step-down/reason"
	released time.Time // when the last ok release completed
	tookOver []string  // the lock values taken over by ok acquires
}

func (r *recorder) Invoke(op election.Op, token int64) func(election.Result) {
	return func(res election.Result) {
		now := time.Now()
		r.mu.Lock()
		defer r.mu.Unlock()
		r.steps = append(r.steps, string(op)+"/"+string(res.Outcome))
		if op == election.OpRelease && res.Outcome == election.OK {
			r.released = now
		}
		if res.TookOver != "" {
			r.tookOver = append(r.tookOver, res.TookOver)
		}
	}
}

func (r *recorder) lastRelease() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.released
}

func (r *recorder) StepDown(token int64, reason election.Reason) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steps = append(r.steps, "step-down/"+string(reason))
}

// takeovers returns the lock values taken over so far.
func (r *recorder) takeovers() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.tookOver...)
}

// snapshot returns the steps so far.
func (r *recorder) snapshot() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.steps...)
}

// eventually waits up to d for step to have been recorded n times, and reports whether it was.
func (r *recorder) eventually(step string, n int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for r.count(step) < n {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

func (r *recorder) count(step string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, s := range r.steps {
		if s == step {
			n++
		}
	}
	return n
}

// proxy forwards TCP to a target and can blackhole: keep every connection open and drop
// every byte, as a partition with no resets does. It can also drop the replies only:
// requests reach the target and run there, but their answers are lost.
type proxy struct {
	ln      net.Listener
	target  string
	hole    atomic.Bool
	noReply atomic.Bool
	mu      sync.Mutex
	conns   []net.Conn
	closed  bool
	wg      sync.WaitGroup
}

func startProxy(tb testing.TB, target string) *proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	tb.Cleanup(p.close)
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) blackhole(on bool) { p.hole.Store(on) }

// dropReplies drops every byte from the target to the clients while on.
func (p *proxy) dropReplies(on bool) { p.noReply.Store(on) }

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			u.Close()
			return
		}
		p.conns = append(p.conns, c, u)
		p.wg.Add(2)
		p.mu.Unlock()
		go p.pipe(u, c, false)
		go p.pipe(c, u, true)
	}
}

func (p *proxy) pipe(dst io.Writer, src io.Reader, replies bool) {
	defer p.wg.Done()
	buf := make([]byte, 32*1024)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.hole.Load() && !(replies && p.noReply.Load()) {
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	p.closed = true
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
