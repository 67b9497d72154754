package finalread_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/harness/finalread"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/internal/redisserver"
	"github.com/fenceline/fenceline/listener"
)

// Keys of the default election, as the README's "Redis key layout" documents them.
const (
	kCursor   = "{fenceline}:cursor"
	kToken    = "{fenceline}:token"
	kBalances = "{fenceline}:balances"
	kSink     = "{fenceline}:sink"
	kAudit    = "{fenceline}:audit"
)

func newRedis(t *testing.T) (*redisserver.Server, *redis.Client) {
	t.Helper()
	s := redisserver.New(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2})
	t.Cleanup(func() { c.Close() })
	return s, c
}

// commit runs the store's own commit script, as a node does.
func commit(t *testing.T, c *redis.Client, args ...any) []any {
	t.Helper()
	r, err := c.Eval(context.Background(), listener.CommitScript, []string{kCursor, kBalances, kSink, kAudit}, args...).Slice()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestFinalReadAgreesWithTheStore: what the real commit script wrote — two accepted
// commits, a stale one, a conflict, a malformed one — reads back field by field.
func TestFinalReadAgreesWithTheStore(t *testing.T) {
	s, c := newRedis(t)
	ctx := context.Background()
	if err := c.Set(ctx, kToken, "7", 0).Err(); err != nil {
		t.Fatal(err)
	}
	commit(t, c, "n1/a/1", "n1", "5", "0", "2", "1", "acct-00", "acct-01", "10", "2", "acct-01", "acct-02", "3")
	commit(t, c, "n2/b/1", "n2", "7", "2", "3", "3", "acct-02", "acct-00", "1")
	commit(t, c, "n1/a/2", "n1", "5", "3", "4", "4", "acct-00", "acct-01", "1")   // stale
	commit(t, c, "n2/b/2", "n2", "7", "2", "3", "3", "acct-02", "acct-00", "1")   // conflict
	commit(t, c, "n3/c/1", "n3", "2.0", "3", "4", "4", "acct-00", "acct-01", "1") // bad token
	st, err := finalread.ReadStore(ctx, s.Addr(), "")
	if err != nil {
		t.Fatal(err)
	}
	if st.Cursor != 3 || st.MaxToken != 7 || st.TokenCounter != 7 {
		t.Errorf("cursor %d max token %d counter %d, want 3 7 7", st.Cursor, st.MaxToken, st.TokenCounter)
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
	}{
		{"n1/a/1", "n1", "ok", 5, 0, 2},
		{"n2/b/1", "n2", "ok", 7, 2, 3},
		{"n1/a/2", "n1", history.ErrStaleToken, 5, 3, 4},
		{"n2/b/2", "n2", history.ErrCursorConflict, 7, 2, 3},
		{"n3/c/1", "n3", "bad-argument", 0, 3, 4}, // "2.0" as sent; documented to read as 0
	}
	if len(st.Audit) != len(want) {
		t.Fatalf("%d audit entries, want %d: %+v", len(st.Audit), len(want), st.Audit)
	}
	for i, w := range want {
		a := st.Audit[i]
		if a.Op != w.op || a.Node != w.node || a.Result != w.result || a.Token != w.token || a.From != w.from || a.To != w.to ||
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

// TestFinalReadRefusesWhatTheLayoutForbids: a store that disagrees with the documented
// layout is refused with ErrBadStore, never read as zeros. The listener's own reader
// took a missing token field as 0 and "2.0" as 2.
func TestFinalReadRefusesWhatTheLayoutForbids(t *testing.T) {
	cases := []struct {
		name  string
		setup [][]any
	}{
		{"cursor record without token", [][]any{{"HSET", kCursor, "cursor", "3"}}},
		{"cursor record without cursor", [][]any{{"HSET", kCursor, "token", "3"}}},
		{"token 2.0", [][]any{{"HSET", kCursor, "cursor", "3", "token", "2.0"}}},
		{"cursor +3", [][]any{{"HSET", kCursor, "cursor", "+3", "token", "2"}}},
		{"cursor 03", [][]any{{"HSET", kCursor, "cursor", "03", "token", "2"}}},
		{"token empty", [][]any{{"HSET", kCursor, "cursor", "3", "token", ""}}},
		{"extra field in the cursor record", [][]any{{"HSET", kCursor, "cursor", "3", "token", "2", "leader", "n1"}}},
		{"token counter nan", [][]any{{"SET", kToken, "nan"}}},
		{"token counter 1e3", [][]any{{"SET", kToken, "1e3"}}},
		{"balance 0x10", [][]any{{"HSET", kBalances, "acct-00", "0x10"}}},
		{"sink id -0", [][]any{{"RPUSH", kSink, "1", "-0"}}},
		{"audit without node", [][]any{{"XADD", kAudit, "*", "op", "x", "token", "1", "from", "0", "to", "1", "result", "ok", "time", "1"}}},
		{"audit unknown result", [][]any{{"XADD", kAudit, "*", "op", "x", "node", "n1", "token", "1", "from", "0", "to", "1", "result", "maybe", "time", "1"}}},
		{"audit ok with token 2.0", [][]any{{"XADD", kAudit, "*", "op", "x", "node", "n1", "token", "2.0", "from", "0", "to", "1", "result", "ok", "time", "1"}}},
		{"audit ok with an error field", [][]any{{"XADD", kAudit, "*", "op", "x", "node", "n1", "token", "1", "from", "0", "to", "1", "result", "ok", "time", "1", "error", "e"}}},
		{"audit bad-argument without error", [][]any{{"XADD", kAudit, "*", "op", "x", "node", "n1", "token", "x", "from", "0", "to", "1", "result", "bad-argument", "time", "1"}}},
		{"audit bad time", [][]any{{"XADD", kAudit, "*", "op", "x", "node", "n1", "token", "1", "from", "0", "to", "1", "result", "ok", "time", "soon"}}},
		{"audit extra field", [][]any{{"XADD", kAudit, "*", "op", "x", "node", "n1", "token", "1", "from", "0", "to", "1", "result", "ok", "time", "1", "who", "me"}}},
		{"audit field twice", [][]any{{"XADD", kAudit, "*", "op", "x", "node", "n1", "token", "1", "from", "0", "to", "1", "result", "ok", "time", "1", "op", "y"}}},
	}
	s, c := newRedis(t)
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := c.FlushAll(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			for _, cmd := range tc.setup {
				if err := c.Do(ctx, cmd...).Err(); err != nil {
					t.Fatal(err)
				}
			}
			st, err := finalread.ReadStore(ctx, s.Addr(), "")
			if !errors.Is(err, finalread.ErrBadStore) {
				t.Fatalf("read %+v, err %v; want ErrBadStore", st, err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
		})
	}
	t.Run("cursor record of the wrong type", func(t *testing.T) {
		c.FlushAll(ctx)
		c.Set(ctx, kCursor, "3", 0)
		if _, err := finalread.ReadStore(ctx, s.Addr(), ""); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
			t.Fatalf("err = %v, want WRONGTYPE", err)
		}
	})
}

// TestReadCursorRecord is the status command's read: one HMGET, as strict.
func TestReadCursorRecord(t *testing.T) {
	_, c := newRedis(t)
	ctx := context.Background()
	if cur, tok, err := finalread.ReadCursorRecord(ctx, c, "x"); err != nil || cur != 0 || tok != 0 {
		t.Fatalf("missing record: %d %d %v", cur, tok, err)
	}
	c.HSet(ctx, "{x}:cursor", "cursor", "12", "token", "4")
	if cur, tok, err := finalread.ReadCursorRecord(ctx, c, "x"); err != nil || cur != 12 || tok != 4 {
		t.Fatalf("record: %d %d %v", cur, tok, err)
	}
	for _, bad := range [][]any{{"token", "2.0"}, {"cursor", "1e2"}} {
		c.HSet(ctx, "{x}:cursor", "cursor", "12", "token", "4")
		c.HSet(ctx, "{x}:cursor", bad...)
		if _, _, err := finalread.ReadCursorRecord(ctx, c, "x"); !errors.Is(err, finalread.ErrBadStore) {
			t.Errorf("%v: err %v, want ErrBadStore", bad, err)
		}
	}
	c.HDel(ctx, "{x}:cursor", "token")
	c.HSet(ctx, "{x}:cursor", "cursor", "12")
	if _, _, err := finalread.ReadCursorRecord(ctx, c, "x"); !errors.Is(err, finalread.ErrBadStore) {
		t.Errorf("missing token: err %v, want ErrBadStore", err)
	}
}
