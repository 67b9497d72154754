//go:build chaos

package finalread_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/harness/finalread"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/listener"
)

// This file needs a chaos build: it drives the store's commit script directly, through
// the listener's chaos seam.

// commit runs the store's own commit script, as a node's store does, with raw arguments
// (so that a malformed one can be sent): the demo ledger's effects as HINCRBYs of the
// balances and an RPUSH of the ids.
func commit(t *testing.T, c *redis.Client, args ...any) []any {
	t.Helper()
	r, err := c.Eval(context.Background(), listener.CommitScriptForChaos, []string{kCursor, kAudit, kBalances, kSink}, args...).Slice()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestFinalReadAgreesWithTheStore: what the real commit script wrote — two accepted
// commits, a stale one, a conflict, a malformed one, and two writes that move no
// cursor, one of whose body failed — reads back field by field.
func TestFinalReadAgreesWithTheStore(t *testing.T) {
	s, c := newRedis(t)
	ctx := context.Background()
	if err := c.Set(ctx, kToken, "7", 0).Err(); err != nil {
		t.Fatal(err)
	}
	pay := func(from, to, amount string) []any {
		return []any{"HINCRBY", "3", "2", from, "-" + amount, "HINCRBY", "3", "2", to, amount}
	}
	sink := func(ids ...any) []any { return append([]any{"RPUSH", "4", len(ids)}, ids...) }
	args := func(head []any, writes ...[]any) []any {
		for _, w := range writes {
			head = append(head, w...)
		}
		return head
	}
	commit(t, c, args([]any{"n1/a/1", "n1", "5", "0", "2", "0"}, pay("acct-00", "acct-01", "10"), pay("acct-01", "acct-02", "3"), sink("1", "2"))...)
	commit(t, c, args([]any{"n2/b/1", "n2", "7", "2", "3", "0"}, pay("acct-02", "acct-00", "1"), sink("3"))...)
	commit(t, c, args([]any{"n1/a/2", "n1", "5", "3", "4", "0"}, pay("acct-00", "acct-01", "1"), sink("4"))...)   // stale
	commit(t, c, args([]any{"n2/b/2", "n2", "7", "2", "3", "0"}, pay("acct-02", "acct-00", "1"), sink("3"))...)   // conflict
	commit(t, c, args([]any{"n3/c/1", "n3", "2.0", "3", "4", "0"}, pay("acct-00", "acct-01", "1"), sink("4"))...) // bad token
	// Writes that move no cursor: one with no work, one whose body fails after the check.
	commit(t, c, "n3/c/2", "n3", "7", "", "", "0")
	commit(t, c, "n3/c/3", "n3", "8", "", "", "0", "BODY", "error('fails')")
	st, err := finalread.ReadStore(ctx, s.Addr(), "")
	if err != nil {
		t.Fatal(err)
	}
	if st.Cursor != 3 || st.MaxToken != 8 || st.TokenCounter != 7 {
		t.Errorf("cursor %d max token %d counter %d, want 3 8 7", st.Cursor, st.MaxToken, st.TokenCounter)
	}
	if want := []int64{1, 2, 3}; !reflect.DeepEqual(st.Sink, want) {
		t.Errorf("sink %v, want %v", st.Sink, want)
	}
	if want := map[string]int64{"acct-00": -9, "acct-01": 7, "acct-02": 2}; !reflect.DeepEqual(st.Balances, want) {
		t.Errorf("balances %v, want %v", st.Balances, want)
	}
	want := []struct {
		op, node, result string
		token, from, to  int64
		kind             history.Kind
	}{
		{"n1/a/1", "n1", "ok", 5, 0, 2, ""},
		{"n2/b/1", "n2", "ok", 7, 2, 3, ""},
		{"n1/a/2", "n1", history.ErrStaleToken, 5, 3, 4, ""},
		{"n2/b/2", "n2", history.ErrCursorConflict, 7, 2, 3, ""},
		{"n3/c/1", "n3", "bad-argument", 0, 3, 4, ""}, // "2.0" as sent; documented to read as 0
		{"n3/c/2", "n3", "ok", 7, 0, 0, history.KindWrite},
		{"n3/c/3", "n3", "error", 8, 0, 0, history.KindWrite},
	}
	if len(st.Audit) != len(want) {
		t.Fatalf("%d audit entries, want %d: %+v", len(st.Audit), len(want), st.Audit)
	}
	for i, w := range want {
		a := st.Audit[i]
		if a.Op != w.op || a.Node != w.node || a.Result != w.result || a.Token != w.token || a.From != w.from || a.To != w.to || a.Kind != w.kind ||
			a.StreamID == "" || a.ServerTime < time.Now().Add(-time.Hour).UnixMicro() {
			t.Errorf("audit[%d] = %+v, want %+v", i, a, w)
		}
	}
	// A pristine store: nothing committed yet reads as zeros, not as an error.
	_, c2 := newRedis(t)
	st, err = finalread.Read(ctx, c2, "")
	if err != nil || st.Cursor != 0 || st.MaxToken != 0 || st.TokenCounter != 0 || len(st.Sink)+len(st.Audit)+len(st.Balances) != 0 {
		t.Fatalf("empty store: %+v, %v", st, err)
	}
}
