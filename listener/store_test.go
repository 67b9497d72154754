package listener

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/source"
)

func TestKeysFor(t *testing.T) {
	k := KeysFor("")
	if k.Cursor != "{fenceline}:cursor" || k.Audit != "{fenceline}:audit" || k.Key("sink") != "{fenceline}:sink" {
		t.Errorf("KeysFor(\"\") = %+v", k)
	}
	if KeysFor("x").Audit != "{x}:audit" {
		t.Errorf("KeysFor(x) = %+v", KeysFor("x"))
	}
}

func TestNewRedisStoreValidates(t *testing.T) {
	retrying := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // MaxRetries defaults to 3
	defer retrying.Close()
	type cfg = RedisConfig[source.Event]
	if _, err := NewRedisStore(retrying, cfg{Node: "n1"}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("a retrying client: err %v, want ErrInvalidConfig", err)
	}
	c := NewRedisClient("127.0.0.1:1")
	defer c.Close()
	for name, bad := range map[string]cfg{
		"no node":          {},
		"negative timeout": {Node: "n1", Timeout: -1},
		"audit max -2":     {Node: "n1", AuditMaxLen: -2},
	} {
		if _, err := NewRedisStore(c, bad); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: err %v, want ErrInvalidConfig", name, err)
		}
	}
	if _, err := NewRedisStore(nil, cfg{Node: "n1"}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("nil client: err %v, want ErrInvalidConfig", err)
	}
	s, err := NewRedisStore(c, cfg{Node: "n1"})
	if err != nil || s.fence.maxLen != DefaultAuditMaxLen || s.fence.timeout != DefaultStoreTimeout {
		t.Errorf("valid config: %v; defaults max len %d, timeout %v", err, s.fence.maxLen, s.fence.timeout)
	}
	if s, err := NewRedisStore(c, cfg{Node: "n1", AuditMaxLen: AuditUnbounded}); err != nil || s.fence.maxLen != 0 {
		t.Errorf("unbounded audit: %v, max len %d", err, s.fence.maxLen)
	}
}

// effectsStore is a store whose effects are whatever the test sets in writes.
func effectsStore(t *testing.T, c redis.UniversalClient, name string, writes *[]Write, effErr *error) *RedisStore[source.Event] {
	t.Helper()
	return newStore(t, c, RedisConfig[source.Event]{Name: name, Effects: func([]source.Event) ([]Write, error) {
		return *writes, *effErr
	}})
}

// TestEffectsCheckedBeforeSending: writes that cannot be sent, and an Effects error, fail
// the commit with ErrInvalidBatch and send nothing.
func TestEffectsCheckedBeforeSending(t *testing.T) {
	_, c := newRedis(t)
	ctx := context.Background()
	var writes []Write
	var effErr error
	s := effectsStore(t, c, "pre", &writes, &effErr)
	for name, ws := range map[string][]Write{
		"cursor key":       {Set("cursor", "9")},
		"audit key":        {Del("audit")},
		"lease key":        {Set("lock", "me:99")},
		"token key":        {Set("token", "99")},
		"empty key":        {Set("", "x")},
		"hash tag":         {Set("{other}x", "x")},
		"empty rpush":      {RPush("l")},
		"odd xadd":         {XAdd("s", "f")},
		"huge increment":   {HIncrBy("h", "f", MaxExactInt+1)},
		"zero-value write": {{}},
	} {
		writes = ws
		if err := s.Commit(ctx, 1, 0, source.Range(0, 1)); !errors.Is(err, ErrInvalidBatch) {
			t.Errorf("%s: %v, want ErrInvalidBatch", name, err)
		}
	}
	writes, effErr = nil, errors.New("cannot")
	if err := s.Commit(ctx, 1, 0, source.Range(0, 1)); !errors.Is(err, ErrInvalidBatch) || !strings.Contains(err.Error(), "cannot") {
		t.Errorf("Effects error: %v", err)
	}
	if n, _ := c.XLen(ctx, KeysFor("pre").Audit).Result(); n != 0 {
		t.Errorf("audit has %d entries, want 0: nothing was to be sent", n)
	}
}

// TestEffectsWholeOrNotAtAll: the script checks every write against what the keys hold
// (and what the batch's earlier writes make of them) before it makes the first; a batch
// it cannot apply changes nothing but the audit.
func TestEffectsWholeOrNotAtAll(t *testing.T) {
	_, c := newRedis(t)
	ctx := context.Background()
	var writes []Write
	var effErr error
	const name = "whole"
	s := effectsStore(t, c, name, &writes, &effErr)
	k := KeysFor(name)
	c.Set(ctx, k.Key("str"), "x", 0)
	c.HSet(ctx, k.Key("h"), "word", "abc", "big", "1000000000000000000") // 19 digits
	cursor := int64(0)
	commit := func(ws ...Write) error {
		writes = ws
		err := s.Commit(ctx, 1, cursor, source.Range(cursor, cursor+1))
		if err == nil {
			cursor++
		}
		return err
	}
	for name, ws := range map[string][]Write{
		"rpush to a string":         {HIncrBy("h", "n", 5), RPush("str", "1")},
		"hincrby of a word":         {HIncrBy("h", "n", 5), HIncrBy("h", "word", 1)},
		"hincrby of 19 digits":      {HIncrBy("h", "big", 1)},
		"hset then hincrby":         {HSet("h", "n", "x"), HIncrBy("h", "n", 1)},
		"set then hincrby":          {Set("h2", "1"), HIncrBy("h2", "n", 1)},
		"xadd to a hash":            {XAdd("h", "f", "v")},
		"increments beyond 2^53-1":  {HIncrBy("h", "n", MaxExactInt), HIncrBy("h", "n", 1)},
		"rpush after set of a list": {RPush("l", "1"), Set("l", "x"), RPush("l", "2")},
	} {
		err := commit(ws...)
		var rej *RejectedError
		if !errors.As(err, &rej) || !errors.Is(err, ErrInvalidBatch) || rej.StoredCursor != cursor {
			t.Errorf("%s: %v, want a RejectedError with ErrInvalidBatch", name, err)
		}
	}
	if n, _ := c.HGet(ctx, k.Key("h"), "n").Result(); n != "" {
		t.Errorf("a refused batch's earlier write was applied: h.n = %q", n)
	}
	if n, _ := c.Exists(ctx, k.Key("l"), k.Key("h2")).Result(); n != 0 || cursor != 0 {
		t.Errorf("refused batches left keys (%d) or moved the cursor (%d)", n, cursor)
	}
	// What the batch itself makes of a key counts: a deleted or overwritten key starts
	// afresh, and every write kind applies, in order.
	if err := commit(Del("h"), HIncrBy("h", "word", 2), HIncrBy("h", "word", -5), HSet("h", "s", "v"),
		Set("str", "y"), RPush("l", "1", "2"), Del("l"), RPush("l", "3"), XAdd("x", "f", "v", "g", "w"),
		HIncrBy("h", "m", MaxExactInt), HIncrBy("h", "m", -MaxExactInt)); err != nil {
		t.Fatal(err)
	}
	h, _ := c.HGetAll(ctx, k.Key("h")).Result()
	l, _ := c.LRange(ctx, k.Key("l"), 0, -1).Result()
	x, _ := c.XRange(ctx, k.Key("x"), "-", "+").Result()
	str, _ := c.Get(ctx, k.Key("str")).Result()
	if len(h) != 3 || h["word"] != "-3" || h["s"] != "v" || h["m"] != "0" || len(l) != 1 || l[0] != "3" ||
		len(x) != 1 || x[0].Values["g"] != "w" || str != "y" {
		t.Errorf("after the batch: h %v, l %v, x %v, str %q", h, l, x, str)
	}
	audit, _ := c.XRange(ctx, k.Audit, "-", "+").Result()
	if len(audit) != 9 || audit[0].Values["result"] != ResultBadArgument || audit[0].Values["error"] == nil || audit[8].Values["result"] != "ok" {
		t.Errorf("audit %v", audit)
	}
}

// TestAuditMaxLen: the audit is capped by default and unbounded on request.
func TestAuditMaxLen(t *testing.T) {
	_, c := newRedis(t)
	ctx := context.Background()
	const commits = 600
	for _, tc := range []struct {
		maxLen   int64
		min, max int64
	}{{150, 150, 400}, {AuditUnbounded, commits, commits}} {
		name := uniqueName()
		s := newStore(t, c, RedisConfig[source.Event]{Name: name, AuditMaxLen: tc.maxLen})
		for i := range int64(commits) {
			if err := s.Commit(ctx, 1, i, source.Range(i, i+1)); err != nil {
				t.Fatal(err)
			}
		}
		if n, err := c.XLen(ctx, s.Keys().Audit).Result(); err != nil || n < tc.min || n > tc.max {
			t.Errorf("max len %d: %d entries after %d commits (%v), want %d..%d", tc.maxLen, n, commits, err, tc.min, tc.max)
		}
	}
}
