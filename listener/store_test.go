package listener

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/source"
)

func readState(tb testing.TB, c redis.UniversalClient, name string) *history.Store {
	tb.Helper()
	st, err := ReadState(context.Background(), c, name, "{"+name+"}:token")
	if err != nil {
		tb.Fatal(err)
	}
	return st
}

func TestKeysFor(t *testing.T) {
	k := KeysFor("")
	want := Keys{Cursor: "{fenceline}:cursor", Balances: "{fenceline}:balances", Sink: "{fenceline}:sink", Audit: "{fenceline}:audit"}
	if k != want {
		t.Errorf("KeysFor(\"\") = %+v, want %+v", k, want)
	}
	if KeysFor("x").Audit != "{x}:audit" {
		t.Errorf("KeysFor(x) = %+v", KeysFor("x"))
	}
}

func TestNewRedisStoreValidates(t *testing.T) {
	retrying := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // MaxRetries defaults to 3
	defer retrying.Close()
	if _, err := NewRedisStore(retrying, StoreConfig{Node: "n1"}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("a retrying client: err %v, want ErrInvalidConfig", err)
	}
	c := NewRedisClient("127.0.0.1:1")
	defer c.Close()
	if _, err := NewRedisStore(c, StoreConfig{}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("no node: err %v, want ErrInvalidConfig", err)
	}
	if _, err := NewRedisStore(c, StoreConfig{Node: "n1", Timeout: -1}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("negative timeout: err %v, want ErrInvalidConfig", err)
	}
	if _, err := NewRedisStore(nil, StoreConfig{Node: "n1"}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("nil client: err %v, want ErrInvalidConfig", err)
	}
	if _, err := NewRedisStore(c, StoreConfig{Node: "n1"}); err != nil {
		t.Errorf("valid config: %v", err)
	}
}

func TestCommitLoadRoundTrip(t *testing.T) {
	_, c := newRedis(t)
	ctx := context.Background()
	s := newStore(t, c, StoreConfig{Name: "rt"})
	if cur, tok, err := s.Load(ctx); err != nil || cur != 0 || tok != 0 {
		t.Fatalf("empty store: Load = %d, %d, %v; want 0, 0, nil", cur, tok, err)
	}
	if err := s.Commit(ctx, 1, 0, source.Range(0, 5)); err != nil {
		t.Fatal(err)
	}
	if cur, tok, err := s.Load(ctx); err != nil || cur != 5 || tok != 1 {
		t.Fatalf("Load = %d, %d, %v; want 5, 1, nil", cur, tok, err)
	}
	if err := s.Commit(ctx, 1, 5, source.Range(5, 12)); err != nil {
		t.Fatal(err)
	}
	// A newer token is accepted and becomes the highest; tokens need not be contiguous.
	big := int64(1) << 52
	if err := s.Commit(ctx, big, 12, source.Range(12, 13)); err != nil {
		t.Fatal(err)
	}
	if cur, tok, err := s.Load(ctx); err != nil || cur != 13 || tok != big {
		t.Fatalf("Load = %d, %d, %v; want 13, %d, nil", cur, tok, err, big)
	}
	c.Set(ctx, "{rt}:token", 9, 0)
	st := readState(t, c, "rt")
	checkStore(t, st)
	if st.Cursor != 13 || st.MaxToken != big || st.TokenCounter != 9 {
		t.Errorf("state cursor %d, max token %d, counter %d; want 13, %d, 9", st.Cursor, st.MaxToken, st.TokenCounter, big)
	}
	if len(st.Audit) != 3 {
		t.Fatalf("audit has %d entries, want 3: %+v", len(st.Audit), st.Audit)
	}
	a := st.Audit[2]
	if a.Result != "ok" || a.Node != "n1" || a.Token != big || a.From != 12 || a.To != 13 || a.Op == "" || a.StreamID == "" {
		t.Errorf("audit entry %+v", a)
	}
	if now := time.Now().UnixMicro(); a.ServerTime < now-60e6 || a.ServerTime > now+60e6 {
		t.Errorf("audit server time %d µs is not near now (%d)", a.ServerTime, now)
	}
	if st.Audit[0].Op == st.Audit[1].Op {
		t.Errorf("two commits share op id %s", st.Audit[0].Op)
	}
}

func TestReadStateEmpty(t *testing.T) {
	_, c := newRedis(t)
	st, err := ReadState(context.Background(), c, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if st.Cursor != 0 || st.MaxToken != 0 || st.TokenCounter != 0 || len(st.Sink) != 0 || len(st.Balances) != 0 || len(st.Audit) != 0 {
		t.Errorf("empty state %+v", st)
	}
}

// TestStaleTokenRejected: a commit below the highest accepted token changes nothing but
// the audit stream — even when its cursor would be right — and says so.
func TestStaleTokenRejected(t *testing.T) {
	_, c := newRedis(t)
	ctx := context.Background()
	s := newStore(t, c, StoreConfig{Name: "stale"})
	if err := s.Commit(ctx, 5, 0, source.Range(0, 3)); err != nil {
		t.Fatal(err)
	}
	before := readState(t, c, "stale")

	old := newStore(t, c, StoreConfig{Name: "stale", Node: "old"})
	err := old.Commit(ctx, 4, 3, source.Range(3, 6))
	if !errors.Is(err, ErrStaleToken) || errors.Is(err, ErrCursorConflict) {
		t.Fatalf("stale commit: err %v, want ErrStaleToken", err)
	}
	var rej *RejectedError
	if !errors.As(err, &rej) || rej.StoredToken != 5 || rej.StoredCursor != 3 || rej.Token != 4 {
		t.Errorf("rejection %+v", rej)
	}
	// Stale and with a wrong cursor: still reported as stale (token is checked first).
	if err := old.Commit(ctx, 4, 0, source.Range(0, 2)); !errors.Is(err, ErrStaleToken) {
		t.Errorf("stale commit with a wrong cursor: err %v, want ErrStaleToken", err)
	}
	// Tokens compare as numbers, not strings ("10" < "5" as strings).
	if err := s.Commit(ctx, 10, 3, source.Range(3, 4)); err != nil {
		t.Fatalf("token 10 after 5: %v", err)
	}
	if err := old.Commit(ctx, 9, 4, source.Range(4, 5)); !errors.Is(err, ErrStaleToken) {
		t.Fatalf("token 9 after 10: err %v, want ErrStaleToken", err)
	}

	after := readState(t, c, "stale")
	checkStore(t, after)
	if after.Cursor != 4 || after.MaxToken != 10 || !slices.Equal(after.Sink, []int64{1, 2, 3, 4}) {
		t.Errorf("after rejections: cursor %d, token %d, sink %v", after.Cursor, after.MaxToken, after.Sink)
	}
	if before.Cursor != 3 || len(before.Audit) != 1 {
		t.Fatalf("before: %+v", before)
	}
	var results []string
	for _, a := range after.Audit {
		results = append(results, a.Node+":"+strconv.FormatInt(a.Token, 10)+":"+a.Result)
	}
	want := []string{"n1:5:ok", "old:4:stale-token", "old:4:stale-token", "n1:10:ok", "old:9:stale-token"}
	if !slices.Equal(results, want) {
		t.Errorf("audit %v, want %v", results, want)
	}
}

// TestCursorConflictRejected: a commit that does not start at the stored cursor changes
// nothing, and a rejected commit does not raise the stored token.
func TestCursorConflictRejected(t *testing.T) {
	_, c := newRedis(t)
	ctx := context.Background()
	s := newStore(t, c, StoreConfig{Name: "conflict"})
	if err := s.Commit(ctx, 1, 0, source.Range(0, 3)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		token, from int64
	}{{1, 0}, {1, 2}, {7, 5}} { // a replay, a cursor behind, a higher token ahead
		err := s.Commit(ctx, tc.token, tc.from, source.Range(tc.from, tc.from+2))
		if !errors.Is(err, ErrCursorConflict) || errors.Is(err, ErrStaleToken) {
			t.Fatalf("commit token %d from %d: err %v, want ErrCursorConflict", tc.token, tc.from, err)
		}
		var rej *RejectedError
		if !errors.As(err, &rej) || rej.StoredCursor != 3 || rej.StoredToken != 1 {
			t.Errorf("rejection %+v", rej)
		}
	}
	st := readState(t, c, "conflict")
	checkStore(t, st)
	if st.Cursor != 3 || st.MaxToken != 1 {
		t.Errorf("after conflicts: cursor %d, max token %d; want 3, 1", st.Cursor, st.MaxToken)
	}
	if len(st.Audit) != 4 || st.Audit[3].Result != "cursor-conflict" || st.Audit[3].Token != 7 || st.Audit[3].From != 5 {
		t.Errorf("audit %+v", st.Audit)
	}
}

func TestCommitInvalidBatchSendsNothing(t *testing.T) {
	_, c := newRedis(t)
	var buf syncBuffer
	s := newStore(t, c, StoreConfig{Name: "inv", Recorder: history.NewRecorder(&buf)})
	ctx := context.Background()
	for name, evs := range map[string][]source.Event{
		"empty":     nil,
		"behind":    source.Range(0, 3),
		"unordered": {source.At(6), source.At(5)},
		"duplicate": {source.At(6), source.At(6)},
	} {
		if err := s.Commit(ctx, 1, 3, evs); !errors.Is(err, ErrInvalidBatch) {
			t.Errorf("%s: err %v, want ErrInvalidBatch", name, err)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Commit(cancelled, 1, 0, source.Range(0, 1)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled ctx: err %v", err)
	}
	if _, _, err := s.Load(cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled ctx: Load err %v", err)
	}
	if st := readState(t, c, "inv"); len(st.Audit) != 0 {
		t.Errorf("audit %+v, want empty", st.Audit)
	}
	if buf.String() != "" {
		t.Errorf("history %q, want empty", buf.String())
	}
}

// TestStoreHistory: every Load and Commit is an invoke followed by its completion, with
// the fields the checker needs.
func TestStoreHistory(t *testing.T) {
	_, c := newRedis(t)
	var buf syncBuffer
	rec := history.NewRecorder(&buf)
	ctx := context.Background()
	s := newStore(t, c, StoreConfig{Name: "hist", Node: "n1", Recorder: rec})
	s2 := newStore(t, c, StoreConfig{Name: "hist", Node: "n1", Recorder: rec}) // the same node, restarted
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := s.Load(ctx)
	must(err)
	must(s.Commit(ctx, 2, 0, source.Range(0, 4)))
	_, _, err = s2.Load(ctx)
	must(err)
	if err := s2.Commit(ctx, 1, 4, source.Range(4, 5)); !errors.Is(err, ErrStaleToken) {
		t.Fatal(err)
	}
	if err := s2.Commit(ctx, 2, 1, source.Range(1, 5)); !errors.Is(err, ErrCursorConflict) {
		t.Fatal(err)
	}
	must(rec.Err())
	evs := readHistory(t, &buf)
	if len(evs) != 10 {
		t.Fatalf("%d events, want 10: %+v", len(evs), evs)
	}
	for i := 0; i < len(evs); i += 2 { // sequential ops: each invoke directly before its completion
		if evs[i].Type != history.Invoke || evs[i+1].ID != evs[i].ID {
			t.Fatalf("events %d, %d are not an invoke and its completion: %+v %+v", i, i+1, evs[i], evs[i+1])
		}
	}
	done := checkPairs(t, evs)
	want := []history.Event{
		{Type: history.OK, Kind: history.KindLoad, Node: "n1"},
		{Type: history.OK, Kind: history.KindCommit, Node: "n1", Token: 2, From: 0, To: 4, Events: 4},
		{Type: history.OK, Kind: history.KindLoad, Node: "n1", Cursor: 4, Token: 2},
		{Type: history.Fail, Kind: history.KindCommit, Node: "n1", Token: 1, From: 4, To: 5, Events: 1, Error: history.ErrStaleToken},
		{Type: history.Fail, Kind: history.KindCommit, Node: "n1", Token: 2, From: 1, To: 5, Events: 4, Error: history.ErrCursorConflict},
	}
	for i, w := range want {
		got := done[evs[2*i].ID]
		w.ID, w.Time = got.ID, got.Time
		if got != w {
			t.Errorf("completion %d = %+v, want %+v", i, got, w)
		}
	}
	// Op ids stay unique across the two store instances of one node.
	ids := map[string]bool{}
	for _, e := range evs {
		ids[e.ID] = true
	}
	if len(ids) != 5 {
		t.Errorf("%d distinct op ids, want 5", len(ids))
	}
	// The audit stream names the ops of the history.
	st := readState(t, c, "hist")
	for _, a := range st.Audit {
		if _, ok := done[a.Op]; !ok {
			t.Errorf("audit op %s is not in the history", a.Op)
		}
	}
}

// TestUnknownOutcome: a commit that times out is recorded as info, is sent exactly once
// (no retry), and may well have been applied — here it is, once Redis resumes.
func TestUnknownOutcome(t *testing.T) {
	srv, c := newRedis(t)
	var buf syncBuffer
	ctx := context.Background()
	s := newStore(t, c, StoreConfig{Name: "unk", Recorder: history.NewRecorder(&buf)})
	if err := s.Commit(ctx, 1, 0, source.Range(0, 2)); err != nil {
		t.Fatal(err)
	}
	hasty := newStore(t, c, StoreConfig{Name: "unk", Recorder: history.NewRecorder(&buf), Timeout: 300 * time.Millisecond})
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	err := hasty.Commit(ctx, 1, 2, source.Range(2, 5))
	if rerr := srv.Resume(); rerr != nil {
		t.Fatal(rerr)
	}
	if !errors.Is(err, ErrOutcomeUnknown) || errors.Is(err, ErrStaleToken) || errors.Is(err, ErrCursorConflict) {
		t.Fatalf("commit to a paused redis: err %v, want ErrOutcomeUnknown", err)
	}
	done := checkPairs(t, readHistory(t, &buf))
	var info history.Event
	for _, e := range done {
		if e.Type == history.Info {
			info = e
		}
	}
	if info.Kind != history.KindCommit || info.From != 2 || info.To != 5 || info.Error == "" {
		t.Fatalf("info completion %+v", info)
	}
	// Redis reads the request once it resumes: the commit lands, exactly once.
	waitFor(t, 10*time.Second, "the timed-out commit to land", func() bool { return loadCursor(t, s) == 5 })
	st := readState(t, c, "unk")
	checkStore(t, st)
	n := 0
	for _, a := range st.Audit {
		if a.Op == info.ID {
			n++
		}
	}
	if n != 1 {
		t.Errorf("op %s is %d times in the audit stream, want exactly 1", info.ID, n)
	}
}
