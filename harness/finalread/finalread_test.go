package finalread_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/harness/finalread"
	"github.com/fenceline/fenceline/internal/redisserver"
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
		{"audit with from and no to", [][]any{{"XADD", kAudit, "*", "op", "x", "node", "n1", "token", "1", "from", "0", "result", "ok", "time", "1"}}},
		{"audit error in a commit", [][]any{{"XADD", kAudit, "*", "op", "x", "node", "n1", "token", "1", "from", "0", "to", "1", "result", "error", "time", "1", "error", "e"}}},
		{"audit write error without error", [][]any{{"XADD", kAudit, "*", "op", "x", "node", "n1", "token", "1", "result", "error", "time", "1"}}},
		{"audit write ok with an error field", [][]any{{"XADD", kAudit, "*", "op", "x", "node", "n1", "token", "1", "result", "ok", "time", "1", "error", "e"}}},
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
