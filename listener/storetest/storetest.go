// Package storetest is the contract every listener.Store must meet, and its fenced-write
// primitive with it, as a test suite: run it against a real backend with Run (RunWork for
// the primitive alone). fenceline runs it against RedisStore with RedisFence (its writes
// and its Lua bodies) and pgstore.Store with pgstore.Fence; a store of your own can run
// it too.
//
// The suite's event (Event) credits an amount to an account and is appended to a list of
// applied positions, so that the suite can tell a batch applied once from one applied
// twice or not at all.
//
// What a pass shows: the store's answers and what it applied agree with the contract,
// request by request and for concurrent writers of one backend (stale tokens refused,
// cursor conflicts refused, a batch and its effects whole or not at all, every attempt
// audited). What it does not: behaviour under faults (lost replies, pauses, partitions,
// a restarted server) and across failovers; fenceline's chaos harness judges those.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fenceline/fenceline/listener"
)

// Event is the suite's event: at position Pos, credit Amount to Account.
type Event struct {
	Pos     int64
	Account string
	Amount  int64
}

// Position returns Pos.
func (e Event) Position() int64 { return e.Pos }

// Events returns the suite's events from+1 .. to: event i credits i to account "a<i%3>".
func Events(from, to int64) []Event {
	var out []Event
	for i := from + 1; i <= to; i++ {
		out = append(out, Event{Pos: i, Account: fmt.Sprintf("a%d", i%3), Amount: i})
	}
	return out
}

// State is what a backend holds: the cursor record, what the effects did, and the audit.
type State struct {
	Cursor, Token int64
	// Credits are the sums credited, by account; Applied the positions appended, in order.
	Credits map[string]int64
	Applied []int64
	// Audit lists every commit attempt in the store's order.
	Audit []AuditEntry
}

// AuditEntry is one attempt in a store's audit.
type AuditEntry struct {
	Op, Node        string
	Token, From, To int64
	// Result is "ok", "stale-token", "cursor-conflict" or "bad-argument".
	Result string
}

// Backend is one fresh, empty store backend.
type Backend struct {
	// NewStore returns a store on the backend for node, whose requests time out after
	// timeout (0: the store's default), recording to rec (may be nil). Every store of a
	// Backend shares its state. Its effects must be Event's: credit Amount to Account,
	// append Pos to the applied list.
	NewStore func(t *testing.T, node string, timeout time.Duration, rec listener.Recorder) listener.Store[Event]
	// State reads the backend's state, bypassing the stores.
	State func(t *testing.T) State
	// Stall makes the backend hold every commit and write (queue it, without answering)
	// until resume is called.
	Stall func(t *testing.T) (resume func())
	// NewWork returns node's Work on the backend, through its fenced-write primitive,
	// with NewStore's timeout and recorder, on the fence its stores commit through. Nil:
	// Run skips the work contract (RunWork).
	NewWork func(t *testing.T, node string, timeout time.Duration, rec listener.Recorder) Work
}

// Run runs the contract against backends made by newBackend, one per subtest: a feed's
// commits, and fenced work that moves no cursor (RunWork) if the backend has NewWork.
func Run(t *testing.T, newBackend func(t *testing.T) Backend) {
	t.Run("RoundTrip", func(t *testing.T) { roundTrip(t, newBackend(t)) })
	t.Run("StaleTokenRejected", func(t *testing.T) { staleToken(t, newBackend(t)) })
	t.Run("CursorConflict", func(t *testing.T) { cursorConflict(t, newBackend(t)) })
	t.Run("InvalidBatchSendsNothing", func(t *testing.T) { invalidBatch(t, newBackend(t)) })
	t.Run("UnknownOutcomeResolvedByAudit", func(t *testing.T) { unknownOutcome(t, newBackend(t)) })
	t.Run("EffectsExactlyOnce", func(t *testing.T) { exactlyOnce(t, newBackend(t)) })
	if newBackend(t).NewWork != nil {
		RunWork(t, newBackend)
	}
}

// wantEffects checks that the effects are exactly those of events 1..cursor, once each.
func wantEffects(t *testing.T, st State) {
	t.Helper()
	want := map[string]int64{}
	for _, e := range Events(0, st.Cursor) {
		want[e.Account] += e.Amount
	}
	applied := make([]int64, 0, st.Cursor)
	for i := int64(1); i <= st.Cursor; i++ {
		applied = append(applied, i)
	}
	if !slices.Equal(st.Applied, applied) {
		t.Errorf("applied %v, want 1..%d once each", st.Applied, st.Cursor)
	}
	for a, v := range want {
		if st.Credits[a] != v {
			t.Errorf("credits %v, want %v", st.Credits, want)
			break
		}
	}
	if len(st.Credits) != len(want) {
		t.Errorf("credits %v, want %v", st.Credits, want)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func roundTrip(t *testing.T, b Backend) {
	ctx := context.Background()
	rec := &Recording{}
	s := b.NewStore(t, "n1", 0, rec)
	if cur, tok, err := s.Load(ctx); err != nil || cur != 0 || tok != 0 {
		t.Fatalf("empty store: Load = %d, %d, %v; want 0, 0, nil", cur, tok, err)
	}
	must(t, s.Commit(ctx, 1, 0, Events(0, 5)))
	must(t, s.Commit(ctx, 1, 5, Events(5, 12)))
	big := int64(1) << 52 // tokens need not be contiguous
	must(t, s.Commit(ctx, big, 12, Events(12, 13)))
	if cur, tok, err := s.Load(ctx); err != nil || cur != 13 || tok != big {
		t.Fatalf("Load = %d, %d, %v; want 13, %d, nil", cur, tok, err, big)
	}
	st := b.State(t)
	wantEffects(t, st)
	if st.Cursor != 13 || st.Token != big || len(st.Audit) != 3 {
		t.Fatalf("state %+v", st)
	}
	a := st.Audit[2]
	if a.Result != "ok" || a.Node != "n1" || a.Token != big || a.From != 12 || a.To != 13 || a.Op == "" || a.Op == st.Audit[1].Op {
		t.Errorf("audit entry %+v", a)
	}
	// The recorder saw each request once, in order, with its result; the audit names
	// the recorded commits.
	ops := rec.Ops()
	if len(ops) != 5 || ops[0].Op.Kind != listener.OpLoad || ops[4].Result.Cursor != 13 || ops[4].Result.Token != big {
		t.Fatalf("recorded %+v", ops)
	}
	for i, o := range ops[1:4] {
		if o.Op.Kind != listener.OpCommit || o.Result.Outcome != listener.OutcomeOK || o.Op.ID != st.Audit[i].Op {
			t.Errorf("recorded commit %d: %+v; audit %+v", i, o, st.Audit[i])
		}
	}
}

func staleToken(t *testing.T, b Backend) {
	ctx := context.Background()
	s := b.NewStore(t, "n1", 0, nil)
	old := b.NewStore(t, "old", 0, nil)
	must(t, s.Commit(ctx, 5, 0, Events(0, 3)))
	before := b.State(t)
	err := old.Commit(ctx, 4, 3, Events(3, 6))
	var rej *listener.RejectedError
	if !errors.Is(err, listener.ErrStaleToken) || !errors.As(err, &rej) || rej.StoredToken != 5 || rej.StoredCursor != 3 || rej.Token != 4 {
		t.Fatalf("stale commit: %v, want a RejectedError with ErrStaleToken and the stored 5, 3", err)
	}
	// Stale and with a wrong cursor: reported as stale (the token is checked first).
	if err := old.Commit(ctx, 4, 0, Events(0, 2)); !errors.Is(err, listener.ErrStaleToken) {
		t.Errorf("stale commit with a wrong cursor: %v, want ErrStaleToken", err)
	}
	after := b.State(t)
	if after.Cursor != before.Cursor || after.Token != before.Token || !slices.Equal(after.Applied, before.Applied) {
		t.Errorf("a stale commit changed the store: %+v -> %+v", before, after)
	}
	wantEffects(t, after)
	// Tokens compare as numbers ("10" < "9" as strings).
	must(t, s.Commit(ctx, 10, 3, Events(3, 4)))
	if err := old.Commit(ctx, 9, 4, Events(4, 5)); !errors.Is(err, listener.ErrStaleToken) {
		t.Fatalf("token 9 after 10: %v, want ErrStaleToken", err)
	}
	st := b.State(t)
	wantEffects(t, st)
	var results []string
	for _, a := range st.Audit {
		results = append(results, fmt.Sprintf("%s:%d:%s", a.Node, a.Token, a.Result))
	}
	want := []string{"n1:5:ok", "old:4:stale-token", "old:4:stale-token", "n1:10:ok", "old:9:stale-token"}
	if !slices.Equal(results, want) {
		t.Errorf("audit %v, want %v", results, want)
	}
}

func cursorConflict(t *testing.T, b Backend) {
	ctx := context.Background()
	s := b.NewStore(t, "n1", 0, nil)
	must(t, s.Commit(ctx, 1, 0, Events(0, 3)))
	for _, tc := range []struct{ token, from int64 }{{1, 0}, {1, 2}, {7, 5}} { // a replay, behind, a higher token ahead
		err := s.Commit(ctx, tc.token, tc.from, Events(tc.from, tc.from+2))
		var rej *listener.RejectedError
		if !errors.Is(err, listener.ErrCursorConflict) || errors.Is(err, listener.ErrStaleToken) ||
			!errors.As(err, &rej) || rej.StoredCursor != 3 || rej.StoredToken != 1 {
			t.Fatalf("commit token %d from %d: %v, want ErrCursorConflict with the stored 3, 1", tc.token, tc.from, err)
		}
	}
	st := b.State(t)
	wantEffects(t, st)
	// A rejected commit does not raise the stored token.
	if st.Cursor != 3 || st.Token != 1 || len(st.Audit) != 4 || st.Audit[3].Result != "cursor-conflict" || st.Audit[3].Token != 7 {
		t.Errorf("after conflicts: %+v", st)
	}
}

func invalidBatch(t *testing.T, b Backend) {
	ctx := context.Background()
	rec := &Recording{}
	s := b.NewStore(t, "n1", 0, rec)
	for name, evs := range map[string][]Event{
		"empty":     nil,
		"behind":    Events(0, 3),
		"unordered": {{Pos: 6}, {Pos: 5}},
		"duplicate": {{Pos: 6}, {Pos: 6}},
	} {
		if err := s.Commit(ctx, 1, 3, evs); !errors.Is(err, listener.ErrInvalidBatch) {
			t.Errorf("%s: %v, want ErrInvalidBatch", name, err)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Commit(cancelled, 1, 0, Events(0, 1)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled ctx: Commit %v", err)
	}
	if _, _, err := s.Load(cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled ctx: Load %v", err)
	}
	if st := b.State(t); len(st.Audit) != 0 || st.Cursor != 0 {
		t.Errorf("state %+v, want untouched", st)
	}
	if ops := rec.Ops(); len(ops) != 0 {
		t.Errorf("recorded %+v, want nothing", ops)
	}
}

// unknownOutcome: a commit whose answer does not come in time is unknown, recorded so,
// sent once; the audit then tells whether it was applied, and the state agrees.
func unknownOutcome(t *testing.T, b Backend) {
	ctx := context.Background()
	s := b.NewStore(t, "n1", 0, nil)
	must(t, s.Commit(ctx, 1, 0, Events(0, 2)))
	rec := &Recording{}
	hasty := b.NewStore(t, "n2", 300*time.Millisecond, rec)
	resume := b.Stall(t)
	err := hasty.Commit(ctx, 1, 2, Events(2, 5))
	resume()
	if !errors.Is(err, listener.ErrOutcomeUnknown) || errors.Is(err, listener.ErrStaleToken) || errors.Is(err, listener.ErrCursorConflict) {
		t.Fatalf("commit to a stalled store: %v, want ErrOutcomeUnknown", err)
	}
	ops := rec.Ops()
	if len(ops) != 1 || ops[0].Result.Outcome != listener.OutcomeUnknown || ops[0].Result.Err == nil {
		t.Fatalf("recorded %+v, want one unknown commit", ops)
	}
	op := ops[0].Op.ID
	st := settled(t, b, op)
	wantEffects(t, st)
	n := 0
	for _, a := range st.Audit {
		if a.Op == op {
			n++
		}
	}
	switch a := auditOf(st, op); {
	case n > 1:
		t.Errorf("op %s is %d times in the audit", op, n)
	case a != nil && a.Result == "ok":
		if st.Cursor != 5 {
			t.Errorf("the audit says %s was applied, but the cursor is %d", op, st.Cursor)
		}
	default:
		if st.Cursor != 2 {
			t.Errorf("the audit says %s was not applied (%+v), but the cursor is %d", op, a, st.Cursor)
		}
	}
	t.Logf("unknown commit %s resolved by the audit: applied=%v", op, st.Cursor == 5)
}

// settled is b's state once op, a write of unknown outcome, is in the audit, or after 2 s:
// a store either runs a held write once it resumes or has dropped it for good, so it is
// given time to run.
func settled(t *testing.T, b Backend, op string) State {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		st := b.State(t)
		if auditOf(st, op) != nil || time.Now().After(deadline) {
			return st
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func auditOf(st State, op string) *AuditEntry {
	for i := range st.Audit {
		if st.Audit[i].Op == op {
			return &st.Audit[i]
		}
	}
	return nil
}

// exactlyOnce: writers with rising tokens race over one store, each reloading after a
// rejection; whatever interleaving the backend picks, the accepted commits chain in the
// audit and every event's effects are there exactly once.
func exactlyOnce(t *testing.T, b Backend) {
	ctx := context.Background()
	const writers, rounds = 4, 25
	var wg sync.WaitGroup
	for w := range writers {
		s := b.NewStore(t, fmt.Sprintf("w%d", w), 0, nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				token := int64(r*writers + w + 1)
				cur, _, err := s.Load(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				err = s.Commit(ctx, token, cur, Events(cur, cur+int64(1+r%3)))
				if err != nil && !errors.Is(err, listener.ErrStaleToken) && !errors.Is(err, listener.ErrCursorConflict) {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	st := b.State(t)
	wantEffects(t, st)
	var prev, maxTok, okCount int64
	for _, a := range st.Audit {
		if a.Result != "ok" {
			continue
		}
		okCount++
		if a.From != prev || a.Token < maxTok {
			t.Fatalf("accepted commit %+v after cursor %d and token %d", a, prev, maxTok)
		}
		prev, maxTok = a.To, a.Token
	}
	if prev != st.Cursor || maxTok != st.Token || okCount == 0 {
		t.Errorf("accepted commits end at cursor %d, token %d; the store has %d, %d", prev, maxTok, st.Cursor, st.Token)
	}
	t.Logf("%d attempts, %d accepted, cursor %d", len(st.Audit), okCount, st.Cursor)
}

// Recording is a listener.Recorder that keeps every request and its result.
type Recording struct {
	mu  sync.Mutex
	ops []Recorded
}

// Recorded is one request and its result.
type Recorded struct {
	Op     listener.Op
	Result listener.Result
}

// Invoke records op once its result comes.
func (r *Recording) Invoke(op listener.Op) func(listener.Result) {
	return func(res listener.Result) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.ops = append(r.ops, Recorded{op, res})
	}
}

// Ops returns what was recorded, in the order the results came.
func (r *Recording) Ops() []Recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ops)
}
