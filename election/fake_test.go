package election

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// errConnReset stands for a transport error: the request may or may not have happened.
var errConnReset = errors.New("fake: connection reset")

// fault is how the fake store misbehaves on one request.
type fault struct {
	delay     time.Duration // answer after this long (applied before the effect)
	err       error         // answer with this error, without effect
	hang      bool          // block until the request's ctx is done, then fail (a client that honours deadlines)
	blackhole bool          // block until the store is unblocked, ignoring ctx, then fail with errConnReset
	lost      bool          // take effect, then fail with errConnReset: the reply is lost
}

// fakeStore is an in-memory lease with the semantics of the Lua scripts. Its time is
// time.Now, which inside a synctest bubble is the bubble's fake clock.
type fakeStore struct {
	mu      sync.Mutex
	value   string
	expires time.Time
	counter int64
	subs    []chan struct{}
	unblock chan struct{}
	faults  map[Op]func(call int) fault
	calls   map[Op]int
}

func newFakeStore() *fakeStore {
	return &fakeStore{unblock: make(chan struct{}), faults: map[Op]func(int) fault{}, calls: map[Op]int{}}
}

// setFault makes every call of op (numbered from 1) misbehave as f says.
func (s *fakeStore) setFault(op Op, f func(call int) fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[op] = f
}

// unblockAll releases every blackholed request, now and later.
func (s *fakeStore) unblockAll() { close(s.unblock) }

// set overwrites the lock, as another process (or an operator) would.
func (s *fakeStore) set(value string, ttl time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.value, s.expires = value, time.Now().Add(ttl)
}

func (s *fakeStore) holder() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked()
	return s.value
}

func (s *fakeStore) expireLocked() {
	if s.value != "" && !time.Now().Before(s.expires) {
		s.value = ""
	}
}

// before applies the fault of op's next call. A non-nil error means "no effect"; lost
// means "take effect, then answer errConnReset".
func (s *fakeStore) before(ctx context.Context, op Op) (lost bool, err error) {
	s.mu.Lock()
	s.calls[op]++
	var f fault
	if fn := s.faults[op]; fn != nil {
		f = fn(s.calls[op])
	}
	s.mu.Unlock()
	if f.delay > 0 {
		time.Sleep(f.delay)
	}
	switch {
	case f.blackhole:
		<-s.unblock
		return false, errConnReset
	case f.hang:
		<-ctx.Done()
		return false, ctx.Err()
	}
	return f.lost, f.err
}

func (s *fakeStore) acquire(ctx context.Context, instance string, ttl time.Duration) (acquireReply, error) {
	lost, err := s.before(ctx, OpAcquire)
	if err != nil {
		return acquireReply{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked()
	r := acquireReply{holder: s.value, pttl: s.expires.Sub(time.Now()).Truncate(time.Millisecond)}
	if s.value == "" {
		s.counter++
		s.value, s.expires = LockValue(instance, s.counter), time.Now().Add(ttl)
		r = acquireReply{won: true, token: s.counter}
	}
	if lost {
		return acquireReply{}, errConnReset
	}
	return r, nil
}

func (s *fakeStore) renew(ctx context.Context, value string, ttl time.Duration) (bool, error) {
	return s.ifHeld(ctx, OpRenew, value, func() { s.expires = time.Now().Add(ttl) })
}

func (s *fakeStore) release(ctx context.Context, value string) (bool, error) {
	return s.ifHeld(ctx, OpRelease, value, func() {
		s.value = ""
		for _, c := range s.subs {
			select {
			case c <- struct{}{}:
			default:
			}
		}
	})
}

// ifHeld is op on the lock: if the lock (its expiry applied) holds value, do runs, under
// the store's lock. It reports whether it held, or errConnReset if op's reply is lost.
func (s *fakeStore) ifHeld(ctx context.Context, op Op, value string, do func()) (bool, error) {
	lost, err := s.before(ctx, op)
	if err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked()
	ok := s.value == value
	if ok {
		do()
	}
	if lost {
		return false, errConnReset
	}
	return ok, nil
}

// takeover and present: the fake has no presence channels; every holder is present.
func (s *fakeStore) takeover(ctx context.Context, instance string, ttl time.Duration, _ string) (acquireReply, error) {
	return s.acquire(ctx, instance, ttl)
}

func (s *fakeStore) present(context.Context, string) (string, bool, error) {
	return s.holder(), true, nil
}

func (s *fakeStore) subscribe(context.Context, string) subscription {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := make(chan struct{}, 1)
	s.subs = append(s.subs, c)
	return fakeSub(c)
}

type fakeSub chan struct{}

func (s fakeSub) C() <-chan struct{} { return s }
func (s fakeSub) Close()             {}

// step is one thing a testRecorder saw.
type step struct {
	At     time.Duration // since the recorder was made
	What   string        // "invoke", an Outcome, or "step-down"
	Op     Op
	Token  int64
	Reason Reason
	Err    error
	Lease  time.Duration // a step-down's counted lease (LeaseRecorder)
}

// testRecorder records steps with times relative to its creation (fake time in a bubble).
type testRecorder struct {
	mu    sync.Mutex
	start time.Time
	steps []step
	open  int // invoked, not completed
	maxOp int // most requests open at once
}

func newTestRecorder() *testRecorder { return &testRecorder{start: time.Now()} }

func (r *testRecorder) add(s step) {
	s.At = time.Since(r.start)
	r.steps = append(r.steps, s)
}

func (r *testRecorder) Invoke(op Op, token int64) func(Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.add(step{What: "invoke", Op: op, Token: token})
	r.open++
	r.maxOp = max(r.maxOp, r.open)
	var once sync.Once
	return func(res Result) {
		called := false
		once.Do(func() { called = true })
		r.mu.Lock()
		defer r.mu.Unlock()
		if !called {
			panic("complete called twice")
		}
		r.open--
		r.add(step{What: string(res.Outcome), Op: op, Token: res.Token, Err: res.Err})
	}
}

func (r *testRecorder) StepDown(token int64, reason Reason) {
	panic("StepDown called on a LeaseRecorder")
}

func (r *testRecorder) StepDownCounted(token int64, reason Reason, lease time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.add(step{What: "step-down", Token: token, Reason: reason, Lease: lease})
}

func (r *testRecorder) all() []step {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]step(nil), r.steps...)
}

// find returns the steps matching what and op ("" matches any op).
func (r *testRecorder) find(what string, op Op) []step {
	var out []step
	for _, s := range r.all() {
		if s.What == what && (op == "" || s.Op == op) {
			out = append(out, s)
		}
	}
	return out
}

// termLog is what a tracking lead func saw of one term.
type termLog struct {
	Term       Term
	Start, End time.Duration // since the tracker was made
	Cause      error         // context.Cause of the term context
}

// tracker makes lead funcs that record their terms.
type tracker struct {
	mu    sync.Mutex
	start time.Time
	terms []termLog
	// linger keeps lead running this long after its context is done.
	linger time.Duration
	// returnAfter, if positive, makes lead return on its own after this long.
	returnAfter time.Duration
}

func newTracker() *tracker { return &tracker{start: time.Now()} }

func (tr *tracker) lead(ctx context.Context, t Term) {
	tr.mu.Lock()
	i := len(tr.terms)
	tr.terms = append(tr.terms, termLog{Term: t, Start: time.Since(tr.start), End: -1})
	linger, ret := tr.linger, tr.returnAfter
	tr.mu.Unlock()
	if ret > 0 {
		select {
		case <-ctx.Done():
		case <-time.After(ret):
		}
	} else {
		<-ctx.Done()
	}
	cause := context.Cause(ctx)
	if ctx.Err() != nil && linger > 0 {
		time.Sleep(linger)
	}
	tr.mu.Lock()
	tr.terms[i].End, tr.terms[i].Cause = time.Since(tr.start), cause
	tr.mu.Unlock()
}

func (tr *tracker) all() []termLog {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]termLog(nil), tr.terms...)
}

// newTestElector builds an elector on fs with cfg's defaults and a test recorder.
func newTestElector(t testing.TB, fs *fakeStore, cfg Config) (*Elector, *testRecorder) {
	t.Helper()
	rec := newTestRecorder()
	cfg.Recorder = rec
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	return newElector(fs, cfg), rec
}

// start runs e in the background. stop cancels it and waits for Run to return.
func start(t testing.TB, e *Elector, lead func(context.Context, Term)) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx, lead) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
}
