package listener

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/source"
)

func TestNewValidates(t *testing.T) {
	st, src := &memStore{}, &memSource{}
	for name, cfg := range map[string]Config[source.Event]{
		"no store":      {Source: src},
		"no source":     {Store: st},
		"batch too big": {Store: st, Source: src, BatchSize: MaxBatchSize + 1},
		"batch < 0":     {Store: st, Source: src, BatchSize: -1},
		"poll < 0":      {Store: st, Source: src, PollInterval: -time.Second},
	} {
		if _, err := New(cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: err %v, want ErrInvalidConfig", name, err)
		}
	}
	l, err := New(Config[source.Event]{Store: st, Source: src})
	if err != nil {
		t.Fatal(err)
	}
	if l.batch != DefaultBatchSize || l.poll != DefaultPollInterval {
		t.Errorf("defaults: batch %d, poll %v", l.batch, l.poll)
	}
	if err := l.Run(context.Background(), 0); err == nil {
		t.Error("Run with token 0 returned nil")
	}
}

// memStore is an in-memory CursorStore with the reference semantics, and hooks to
// simulate lost replies.
type memStore struct {
	mu          sync.Mutex
	cursor, tok int64
	sink        []int64
	// loseReply, if set, is asked after each applied commit whether to report it as
	// unknown; failBefore whether to fail a commit, unknown, without applying it.
	loseReply, failBefore func(n int) bool
	n                     int
}

func newMemStore() *memStore { return &memStore{} }

func (m *memStore) Load(ctx context.Context) (int64, int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cursor, m.tok, ctx.Err()
}

func (m *memStore) Commit(ctx context.Context, token, from int64, events []source.Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n++
	if m.failBefore != nil && m.failBefore(m.n) {
		return ErrOutcomeUnknown
	}
	switch {
	case token < m.tok:
		return ErrStaleToken
	case from != m.cursor:
		return ErrCursorConflict
	}
	for _, e := range events {
		m.sink = append(m.sink, e.ID)
	}
	m.cursor, m.tok = events[len(events)-1].ID, token
	if m.loseReply != nil && m.loseReply(m.n) {
		return ErrOutcomeUnknown
	}
	return nil
}

func runAsync(ctx context.Context, l *Listener[source.Event], token int64) <-chan error {
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx, token) }()
	return done
}

// runUntil runs l in a term of token 1 until cond holds (waitFor: up to timeout), then
// ends the term and returns what Run returned.
func runUntil(t *testing.T, l *Listener[source.Event], timeout time.Duration, what string, cond func() bool) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := runAsync(ctx, l, 1)
	waitFor(t, timeout, what, cond)
	cancel()
	return waitRun(t, done)
}

func waitRun(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return")
		return nil
	}
}

// TestRunReturnsOnCancel: a caught-up listener waits and returns nil as soon as its term
// ends.
func TestRunReturnsOnCancel(t *testing.T) {
	src := &memSource{}
	l, err := New(Config[source.Event]{Store: newMemStore(), Source: src, PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := runUntil(t, l, 10*time.Second, "a fetch", func() bool { return src.calls.Load() > 0 }); err != nil {
		t.Errorf("Run returned %v after cancel, want nil", err)
	}
}

// TestRunSurvivesUnknownOutcomes: commits whose reply is lost (applied) or that fail
// before applying are both reported as unknown; the listener reloads and never applies an
// event twice or skips one.
func TestRunSurvivesUnknownOutcomes(t *testing.T) {
	src := &memSource{}
	src.avail.Store(1000)
	st := newMemStore()
	st.loseReply = func(n int) bool { return n%3 == 0 }
	st.failBefore = func(n int) bool { return n%5 == 0 }
	m := newCountingMetrics(0)
	l, err := New(Config[source.Event]{Store: st, Source: src, BatchSize: 37, PollInterval: time.Millisecond, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	if err := runUntil(t, l, 20*time.Second, "cursor 1000", func() bool { c, _, _ := st.Load(context.Background()); return c == 1000 }); err != nil {
		t.Fatal(err)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	for i, id := range st.sink {
		if id != int64(i+1) {
			t.Fatalf("sink[%d] = %d: an event was applied twice or skipped", i, id)
		}
	}
	if m.count(OutcomeUnknown) == 0 {
		t.Error("no unknown outcome was observed")
	}
}

// TestListenerIngestsIntoRedis: a listener on a real Redis ingests exactly the feed, its
// effects included, and records each request.
func TestListenerIngestsIntoRedis(t *testing.T) {
	const total = 3000
	in := newIngestion(t, "ingest", total)
	c, rec, m := in.c, in.rec, in.m
	l, err := New(Config[source.Event]{Store: in.store, Source: in.src, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := runAsync(ctx, l, 3)
	select {
	case <-m.reached:
	case err := <-done:
		t.Fatalf("Run returned early: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("the listener did not ingest the feed in 60s")
	}
	cancel()
	if err := waitRun(t, done); err != nil {
		t.Fatal(err)
	}
	st := readState(t, c, "ingest")
	checkStore(t, st)
	if st.Cursor != total || st.MaxToken != 3 {
		t.Errorf("cursor %d, token %d; want %d, 3", st.Cursor, st.MaxToken, total)
	}
	for _, a := range st.Audit {
		if a.Result != "ok" {
			t.Errorf("audit entry %+v: a lone listener was rejected", a)
		}
	}
	if m.count(OutcomeOK) != len(st.Audit) {
		t.Errorf("metrics saw %d ok commits, audit has %d", m.count(OutcomeOK), len(st.Audit))
	}
	if commits := rec.count(OpCommit, OutcomeOK); commits != len(st.Audit) {
		t.Errorf("recorded %d ok commits, audit %d", commits, len(st.Audit))
	}
}

// TestStaleListenerStops: two listeners with tokens 1 and 2 share a store and a
// rate-limited source. Once token 2 commits, token 1's listener stops with ErrStaleToken,
// logs fencing-token-rejected and counts it; nothing is applied twice.
func TestStaleListenerStops(t *testing.T) {
	_, c := newRedis(t)
	src := &memSource{}
	src.avail.Store(1 << 40)
	rec := &recording{}
	var logs1 syncBuffer
	m1, m2 := newCountingMetrics(0), newCountingMetrics(0)
	s1 := newStore(t, c, RedisConfig[source.Event]{Name: "two", Node: "n1", Recorder: rec})
	s2 := newStore(t, c, RedisConfig[source.Event]{Name: "two", Node: "n2", Recorder: rec})
	l1, err := New(Config[source.Event]{Store: s1, Source: src, BatchSize: 20, PollInterval: 5 * time.Millisecond, Metrics: m1,
		Logger: slog.New(slog.NewJSONHandler(&logs1, nil)).With(slog.String("node", "n1"))})
	if err != nil {
		t.Fatal(err)
	}
	l2, err := New(Config[source.Event]{Store: s2, Source: src, BatchSize: 20, PollInterval: 5 * time.Millisecond, Metrics: m2})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done1 := runAsync(ctx, l1, 1)
	waitFor(t, 20*time.Second, "token 1 to commit", func() bool { return loadCursor(t, s1) >= 50 })

	done2 := runAsync(ctx, l2, 2)
	err1 := waitRun(t, done1)
	if !errors.Is(err1, ErrStaleToken) {
		t.Fatalf("listener 1 returned %v, want ErrStaleToken", err1)
	}
	stopped := loadCursor(t, s1)
	waitFor(t, 20*time.Second, "token 2 to make progress", func() bool { return loadCursor(t, s2) >= stopped+100 })
	cancel()
	if err := waitRun(t, done2); err != nil {
		t.Fatalf("listener 2 returned %v", err)
	}

	st := readState(t, c, "two")
	checkStore(t, st)
	if st.MaxToken != 2 {
		t.Errorf("max token %d, want 2", st.MaxToken)
	}
	// In the store's order: no accepted token-1 write after the first accepted token-2
	// write, and token 1 was rejected as stale.
	seen2, stale := false, 0
	for _, a := range st.Audit {
		switch {
		case a.Token == 2 && a.Result == "ok":
			seen2 = true
		case a.Token == 1 && a.Result == "ok" && seen2:
			t.Errorf("token 1 accepted after token 2: %+v", a)
		case a.Token == 1 && a.Result == history.ErrStaleToken:
			stale++
		}
	}
	if stale != 1 {
		t.Errorf("%d stale-token rejections of token 1 in the audit stream, want 1", stale)
	}
	if n := m1.count(OutcomeStaleToken); n != 1 {
		t.Errorf("listener 1 counted %d stale-token rejections, want 1", n)
	}
	var logged map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(logs1.String()), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "fencing-token-rejected" {
			logged = rec
		}
	}
	if logged == nil || logged["token"] != 1.0 || logged["stored_token"] != 2.0 || logged["node"] != "n1" {
		t.Errorf("fencing-token-rejected log: %v\nall logs:\n%s", logged, logs1.String())
	}
	if n := rec.count(OpCommit, OutcomeStaleToken); n != 1 {
		t.Errorf("recorded %d stale-token commits, want 1", n)
	}
}

// TestRunWithFlakySource: fetch errors are logged and retried; they do not end the term.
func TestRunWithFlakySource(t *testing.T) {
	src := &flakySource{}
	src.avail.Store(500)
	st := newMemStore()
	var logs syncBuffer
	l, err := New(Config[source.Event]{Store: st, Source: src, BatchSize: 50, PollInterval: time.Millisecond,
		Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := runUntil(t, l, 20*time.Second, "cursor 500", func() bool { c, _, _ := st.Load(context.Background()); return c == 500 }); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), `"msg":"fetch-failed"`) {
		t.Errorf("no fetch-failed log:\n%s", logs.String())
	}
}

type flakySource struct {
	memSource
	n atomic.Int64
}

func (f *flakySource) Fetch(ctx context.Context, cursor int64, limit int) ([]source.Event, error) {
	if f.n.Add(1)%2 == 0 {
		return nil, errors.New("source down")
	}
	return f.memSource.Fetch(ctx, cursor, limit)
}

// recording counts recorded results by kind and outcome.
type recording struct {
	mu sync.Mutex
	n  map[OpKind]map[Outcome]int
}

func (r *recording) Invoke(op Op) func(Result) {
	return func(res Result) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.n == nil {
			r.n = map[OpKind]map[Outcome]int{}
		}
		if r.n[op.Kind] == nil {
			r.n[op.Kind] = map[Outcome]int{}
		}
		r.n[op.Kind][res.Outcome]++
	}
}

func (r *recording) count(k OpKind, o Outcome) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[k][o]
}
