package listener

import (
	"context"
	"errors"
	"maps"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/source"
)

func newFence(tb testing.TB, c redis.UniversalClient, name, node string) *RedisFence {
	tb.Helper()
	f, err := NewRedisFence(c, FenceConfig{Name: name, Node: node})
	if err != nil {
		tb.Fatal(err)
	}
	return f
}

// auditResults lists the audit of election name as "token:result[:error]" and fails if
// an entry of a write that moves no cursor has from or to.
func auditResults(t *testing.T, c redis.UniversalClient, name string) []string {
	t.Helper()
	msgs, err := c.XRange(context.Background(), KeysFor(name).Audit, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range msgs {
		s := m.Values["token"].(string) + ":" + m.Values["result"].(string)
		if e, ok := m.Values["error"].(string); ok {
			s += ":" + e
		}
		out = append(out, s)
	}
	return out
}

// Write applies a closed set of writes under the token check of the one fence record of
// the election, which a feed's commits share: a stale write applies nothing, and a
// commit below a write's token is stale too.
func TestFenceWrite(t *testing.T) {
	_, c := newRedis(t)
	ctx := context.Background()
	f := newFence(t, c, "fw", "n1")
	if err := f.Write(ctx, 3, HIncrBy("credits", "a", 5), Set("status", "done")); err != nil {
		t.Fatal(err)
	}
	if cur, tok, err := f.Load(ctx); err != nil || cur != 0 || tok != 3 {
		t.Fatalf("Load = %d, %d, %v; want cursor 0, token 3", cur, tok, err)
	}
	err := f.Write(ctx, 2, HIncrBy("credits", "a", 100))
	var rej *RejectedError
	if !errors.Is(err, ErrStaleToken) || !errors.As(err, &rej) || rej.StoredToken != 3 || rej.From != 0 || rej.To != 0 {
		t.Fatalf("stale write: %v, want a RejectedError with ErrStaleToken and stored token 3", err)
	}
	if v, _ := c.HGet(ctx, f.Keys().Key("credits"), "a").Int64(); v != 5 {
		t.Errorf("credits a = %d after a stale write, want 5", v)
	}
	s := newStore(t, c, RedisConfig[source.Event]{Name: "fw", Node: "n2"})
	if err := s.Commit(ctx, 2, 0, source.Range(0, 2)); !errors.Is(err, ErrStaleToken) {
		t.Errorf("a commit with token 2 after a write with token 3: %v, want ErrStaleToken", err)
	}
	if err := s.Commit(ctx, 3, 0, source.Range(0, 2)); err != nil {
		t.Fatal(err)
	}
	if err := f.Write(ctx, 4); err != nil { // no writes: the token alone
		t.Fatal(err)
	}
	if cur, tok, _ := f.Load(ctx); cur != 2 || tok != 4 {
		t.Errorf("after a commit and an empty write: cursor %d, token %d; want 2, 4", cur, tok)
	}
	if err := f.Write(ctx, 5, Set("lock", "mine")); !errors.Is(err, ErrInvalidBatch) {
		t.Errorf("a write to the election's lock: %v, want ErrInvalidBatch", err)
	}
	got := strings.Join(auditResults(t, c, "fw"), " ")
	if want := "3:ok 2:stale-token 2:stale-token 3:ok 4:ok"; got != want {
		t.Errorf("audit %s, want %s", got, want)
	}
	// Only commits that move the cursor have from and to in the audit.
	msgs, _ := c.XRange(ctx, f.Keys().Audit, "-", "+").Result()
	for i, m := range msgs {
		_, hasFrom := m.Values["from"]
		if wantFrom := i == 2 || i == 3; hasFrom != wantFrom {
			t.Errorf("audit entry %d %v: from present %v, want %v", i, m.Values, hasFrom, wantFrom)
		}
	}
}

// Eval runs a body after the token check, returns its value, and records the token.
func TestFenceEval(t *testing.T) {
	_, c := newRedis(t)
	ctx := context.Background()
	f := newFence(t, c, "fe", "n1")
	const body = `local n = redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('RPUSH', KEYS[2], ARGV[1])
return {n, cjson.encode({ok = true}), string.upper('x')}`
	v, err := f.Eval(ctx, 7, body, []string{"counter", "log"}, 5)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := v.([]any); !ok || len(r) != 3 || r[0] != int64(5) || r[1] != `{"ok":true}` || r[2] != "X" {
		t.Fatalf("value %#v", v)
	}
	if _, tok, _ := f.Load(ctx); tok != 7 {
		t.Errorf("token %d, want 7", tok)
	}
	// Stale: the body does not run.
	if _, err := f.Eval(ctx, 6, body, []string{"counter", "log"}, 100); !errors.Is(err, ErrStaleToken) {
		t.Fatalf("stale body: %v, want ErrStaleToken", err)
	}
	if n, _ := c.Get(ctx, f.Keys().Key("counter")).Int64(); n != 5 {
		t.Errorf("counter %d after a stale body, want 5", n)
	}
	// An error reply returned is a value, not a failure.
	v, err = f.Eval(ctx, 7, `return redis.error_reply('nope')`, nil)
	if rerr, ok := v.(redis.Error); err != nil || !ok || rerr.Error() != "ERR nope" {
		t.Errorf("a returned error reply: %#v, %v; want it as the value", v, err)
	}
	// An error after a write: the write stays (Redis does not roll back), and the audit
	// says "error" under the token.
	_, err = f.Eval(ctx, 8, `redis.call('SET', KEYS[1], 'half'); error('boom')`, []string{"state"})
	if !errors.Is(err, ErrBodyFailed) || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("failing body: %v, want ErrBodyFailed with its message", err)
	}
	if v, _ := c.Get(ctx, f.Keys().Key("state")).Result(); v != "half" {
		t.Errorf("state %q, want what the body wrote before its error", v)
	}
	got := auditResults(t, c, "fe")
	if len(got) != 4 || got[0] != "7:ok" || got[1] != "6:stale-token" || got[2] != "7:ok" || got[3] != "8:error:body:1: boom" {
		t.Errorf("audit %q", got)
	}
}

// A body cannot escape the fence: every way out is refused before it writes, and the
// fence record, the audit, the election's keys and keys outside the hash tag stay as
// they were.
func TestFenceEvalCannotEscape(t *testing.T) {
	_, c := newRedis(t)
	ctx := context.Background()
	f := newFence(t, c, "esc", "n1")
	if err := f.Write(ctx, 5, Set("mine", "0")); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "elsewhere", "untouched", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, body string
		keys       []string
		want       error
	}{
		{"undeclared key under the tag", `redis.call('SET', '{esc}:other', 1)`, []string{"mine"}, ErrBodyFailed},
		{"key outside the tag", `redis.call('SET', 'elsewhere', 'x')`, []string{"mine"}, ErrBodyFailed},
		{"the fence record", `redis.call('HSET', '{esc}:cursor', 'token', '0')`, []string{"mine"}, ErrBodyFailed},
		{"the fence record as a second key", `redis.call('DEL', KEYS[1], '{esc}:cursor')`, []string{"mine"}, ErrBodyFailed},
		{"a command with a second key", `redis.call('RENAME', KEYS[1], '{esc}:cursor')`, []string{"mine"}, ErrBodyFailed},
		{"a script in the body", `redis.call('EVAL', "redis.call('DEL', KEYS[1])", 1, '{esc}:cursor')`, []string{"mine"}, ErrBodyFailed},
		{"the real redis through _G", `_G.redis.call('DEL', '{esc}:cursor')`, []string{"mine"}, ErrBodyFailed},
		{"the real redis through loadstring", `loadstring("redis.call('DEL', '{esc}:cursor')")()`, []string{"mine"}, ErrBodyFailed},
		{"the real redis through rawget", `rawget(_G, 'redis').call('DEL', '{esc}:cursor')`, []string{"mine"}, ErrBodyFailed},
		{"code before the check", "end redis.call('SET', 'elsewhere', 'x') local function f()", []string{"mine"}, ErrInvalidBatch},
		{"an unclosed long string", "return [[", []string{"mine"}, ErrInvalidBatch},
		{"the election's lock as a key", `return 1`, []string{"lock"}, ErrInvalidBatch},
		{"a key with a hash tag of its own", `return 1`, []string{"{other}x"}, ErrInvalidBatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := snapshotFence(t, c, f)
			_, err := f.Eval(ctx, 6, tc.body, tc.keys)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Eval: %v, want %v", err, tc.want)
			}
			after := snapshotFence(t, c, f)
			// A body that failed after the check has its token, 6, recorded; nothing else
			// may change the record.
			if after.cursor != before.cursor || after.token < before.token || after.token > 6 || after.elsewhere != "untouched" || after.mine != "0" || after.others != 0 {
				t.Errorf("the body escaped: %+v -> %+v", before, after)
			}
		})
	}
	// redis.pcall refuses the same, as an error reply the body can inspect.
	v, err := f.Eval(ctx, 6, `local r = redis.pcall('SET', 'elsewhere', 'x')
if type(r) == 'table' and r.err then return 'refused' end
return 'ran'`, []string{"mine"})
	if err != nil || v != "refused" {
		t.Errorf("pcall outside the keys: %v, %v; want refused", v, err)
	}
	// The script itself, sent raw, refuses a body's key outside the hash tag.
	k := f.Keys()
	reply, err := redis.NewScript(commitScript).Run(ctx, c, []string{k.Cursor, k.Audit, "elsewhere"},
		"raw/1", "raw", "9", "", "", "0", "BODY", "redis.call('SET', KEYS[1], 'x')").Slice()
	if err != nil || reply[0] != ResultBadArgument {
		t.Errorf("raw body on a key outside the tag: %v, %v; want bad-argument", reply, err)
	}
	reply, err = redis.NewScript(commitScript).Run(ctx, c, []string{k.Cursor, k.Audit, k.Key("mine")},
		"raw/2", "raw", "9", "0", "1", "0", "BODY", "return 1").Slice()
	if err != nil || reply[0] != ResultBadArgument {
		t.Errorf("raw body that moves the cursor: %v, %v; want bad-argument", reply, err)
	}
	if v, _ := c.Get(ctx, "elsewhere").Result(); v != "untouched" {
		t.Errorf("elsewhere = %q", v)
	}
}

type fenceSnapshot struct {
	cursor          string
	token           int64
	mine, elsewhere string
	others          int64
}

func snapshotFence(t *testing.T, c redis.UniversalClient, f *RedisFence) fenceSnapshot {
	t.Helper()
	ctx := context.Background()
	rec, err := c.HGetAll(ctx, f.Keys().Cursor).Result()
	if err != nil {
		t.Fatal(err)
	}
	mine, _ := c.Get(ctx, f.Keys().Key("mine")).Result()
	elsewhere, _ := c.Get(ctx, "elsewhere").Result()
	others, _ := c.Exists(ctx, f.Keys().Key("other"), f.Keys().Key("x")).Result()
	tok, _ := strconv.ParseInt(rec["token"], 10, 64)
	return fenceSnapshot{cursor: rec["cursor"], token: tok, mine: mine, elsewhere: elsewhere, others: others}
}

// fenceCounts records what a store tells its FenceMetrics.
type fenceCounts struct {
	mu sync.Mutex
	n  map[Outcome]int
}

func (m *fenceCounts) ObserveFenced(o Outcome) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n[o]++
}

// The store counts what its fence rejects, commits and writes alike: one count per
// rejection, with no help from the caller.
func TestFenceCountsRejections(t *testing.T) {
	_, c := newRedis(t)
	ctx := context.Background()
	m := &fenceCounts{n: map[Outcome]int{}}
	s := newStore(t, c, RedisConfig[source.Event]{Name: "fm", Metrics: m})
	if err := s.Commit(ctx, 5, 0, source.Range(0, 2)); err != nil {
		t.Fatal(err)
	}
	_ = s.Commit(ctx, 4, 2, source.Range(2, 3))
	_ = s.Fence().Write(ctx, 3)
	_ = s.Commit(ctx, 5, 0, source.Range(0, 1))
	want := map[Outcome]int{OutcomeOK: 1, OutcomeStaleToken: 2, OutcomeCursorConflict: 1}
	if !maps.Equal(m.n, want) {
		t.Errorf("observed %v, want %v", m.n, want)
	}
}
