package listener

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/source"
)

// runCommitScript sends the commit script raw arguments, as a client other than
// RedisStore could, with the keys cursor, audit, balances and sink, and returns its reply.
func runCommitScript(tb testing.TB, c redis.UniversalClient, name string, args ...string) []any {
	tb.Helper()
	a := make([]any, len(args))
	for i, s := range args {
		a[i] = s
	}
	k := KeysFor(name)
	reply, err := redis.NewScript(commitScript).Run(context.Background(), c,
		[]string{k.Cursor, k.Audit, k.Key("balances"), k.Key("sink")}, a...).Slice()
	if err != nil {
		tb.Fatalf("commit script %q: %v", args, err)
	}
	return reply
}

// storeSnapshot is everything a commit may change, the audit stream aside.
type storeSnapshot struct {
	Cursor, Token int64
	Balances      map[string]int64
	Sink          []int64
}

func snapshot(tb testing.TB, c redis.UniversalClient, name string) (storeSnapshot, []history.AuditEntry) {
	tb.Helper()
	st := readState(tb, c, name)
	return storeSnapshot{st.Cursor, st.MaxToken, st.Balances, st.Sink}, st.Audit
}

// TestCommitScriptRejectsMalformedNumbers: every number the script is sent must be a
// canonical decimal integer within ±(2^53-1). tonumber() takes "nan", "inf", "2.0e0",
// "0x10" and " 1"; a script that stored them as sent once accepted a stale token after a
// commit with token "nan". Each malformed commit must change nothing and be audited as
// bad-argument with the arguments as sent and an error naming the bad one.
func TestCommitScriptRejectsMalformedNumbers(t *testing.T) {
	_, c := newRedis(t)
	ctx := context.Background()
	const name = "malformed"
	s := newStore(t, c, RedisConfig[source.Event]{Name: name})
	if err := s.Commit(ctx, 2, 0, source.Range(0, 5)); err != nil {
		t.Fatal(err)
	}
	before, audit := snapshot(t, c, name)
	if before.Cursor != 5 || before.Token != 2 || len(audit) != 1 {
		t.Fatalf("set-up: %+v, %d audit entries", before, len(audit))
	}
	// A valid commit from cursor 5 with token 3: HINCRBY balances a 10, RPUSH sink 6.
	valid := []string{"op", "n9", "3", "5", "6", "0", "HINCRBY", "3", "2", "a", "10", "RPUSH", "4", "1", "6"}
	positions := map[int]string{2: "token", 3: "from", 4: "to", 5: "audit max length", 7: "key index",
		8: "argument count", 10: "increment"}
	bad := []string{"nan", "NaN", "inf", "-inf", "2.0e0", "0x10", "", " 1", "1 ", "+1", "01", "-0",
		"1e3", "1.5", "6\n", "99999999999999999999", "18446744073709551616",
		"9223372036854775808", "-9223372036854775808"}
	// Tokens and cursors may be any int64; counts, indexes and increments stay within
	// ±(2^53-1).
	small := []string{"9007199254740992", "-9007199254740992"}
	n := 0
	for pos, what := range positions {
		vs := bad
		if pos >= 5 {
			vs = append(slices.Clone(bad), small...)
		}
		for _, v := range vs {
			args := append([]string(nil), valid...)
			args[pos] = v
			args[0] = fmt.Sprintf("op-%d", n)
			reply := runCommitScript(t, c, name, args...)
			if len(reply) != 3 || reply[0] != ResultBadArgument {
				t.Errorf("%s = %q: reply %v, want %s", what, v, reply, ResultBadArgument)
				continue
			}
			n++
			after, audit := snapshot(t, c, name)
			if !reflect.DeepEqual(after, before) {
				t.Fatalf("%s = %q changed the store: %+v, was %+v", what, v, after, before)
			}
			last := audit[len(audit)-1]
			if len(audit) != 1+n || last.Op != args[0] || last.Result != ResultBadArgument {
				t.Fatalf("%s = %q: audit has %d entries, last %+v; want %d, the last bad-argument", what, v, len(audit), last, 1+n)
			}
		}
	}
	msgs, err := c.XRange(ctx, KeysFor(name).Audit, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs[1:] {
		if m.Values["error"] == nil || m.Values["error"] == "" {
			t.Errorf("audit %v has no error field", m.Values)
		}
	}
	// Ill-formed commits and writes are audited as well.
	for _, args := range [][]string{
		{"op-arity", "n9", "3", "5", "6"},
		{"op-behind", "n9", "3", "5", "5", "0"},
		{"op-cmd", "n9", "3", "5", "6", "0", "EVAL", "3", "0"},
		{"op-key", "n9", "3", "5", "6", "0", "DEL", "1", "0"}, // the cursor record
		{"op-key2", "n9", "3", "5", "6", "0", "DEL", "5", "0"},
		{"op-short", "n9", "3", "5", "6", "0", "RPUSH", "4", "3", "1"},
		{"op-hset", "n9", "3", "5", "6", "0", "HSET", "3", "1", "a"},
		{"op-xadd", "n9", "3", "5", "6", "0", "XADD", "3", "3", "a", "b", "c"},
		{"op-rpush0", "n9", "3", "5", "6", "0", "RPUSH", "4", "0"},
	} {
		if reply := runCommitScript(t, c, name, args...); reply[0] != ResultBadArgument {
			t.Errorf("%q: reply %v", args, reply)
		}
	}
	if after, _ := snapshot(t, c, name); !reflect.DeepEqual(after, before) {
		t.Fatalf("store changed: %+v, was %+v", after, before)
	}

	// The fence still holds: a stale token is refused, the next one is accepted.
	stale := append([]string{"op-stale", "n9", "1"}, valid[3:]...)
	if reply := runCommitScript(t, c, name, stale...); reply[0] != history.ErrStaleToken {
		t.Errorf("stale token 1 after the malformed commits: reply %v", reply)
	}
	if reply := runCommitScript(t, c, name, valid...); reply[0] != "ok" {
		t.Errorf("valid commit: reply %v", reply)
	}
	if cur, tok, err := s.Load(ctx); err != nil || cur != 6 || tok != 3 {
		t.Errorf("Load = %d, %d, %v", cur, tok, err)
	}
}

// TestCommitScriptExactLimits: the largest magnitudes are accepted exactly.
func TestCommitScriptExactLimits(t *testing.T) {
	_, c := newRedis(t)
	const name = "limits"
	maxs := strconv.FormatInt(MaxExactInt, 10)
	if reply := runCommitScript(t, c, name, "op1", "n1", maxs, "0", maxs, maxs, "HINCRBY", "3", "2", "a", maxs); reply[0] != "ok" {
		t.Fatalf("largest token, cursor and increment: %v", reply)
	}
	if reply := runCommitScript(t, c, name, "op2", "n1", maxs, "1", "2", "0"); reply[0] != history.ErrCursorConflict {
		t.Fatalf("from 1 after cursor 2^53-1: %v", reply)
	}
	bal, _ := c.HGet(context.Background(), KeysFor(name).Key("balances"), "a").Result()
	if bal != maxs {
		t.Errorf("balance %q, want %s", bal, maxs)
	}
}

// TestCommitScriptBeyondDoubles: tokens and cursors above 2^53, where neighbouring
// integers are one double, and up to 2^63-1 are compared exactly.
func TestCommitScriptBeyondDoubles(t *testing.T) {
	_, c := newRedis(t)
	const name = "int64"
	// A store that has lived: the record is seeded as a run's boundary start would.
	c.HSet(context.Background(), KeysFor(name).Cursor, "cursor", "9007199254740990", "token", "9007199254740991")
	for _, step := range []struct {
		token, from, to, want string
	}{
		{"9007199254740993", "9007199254740990", "9007199254740993", "ok"},
		{"9007199254740992", "9007199254740993", "9007199254740994", history.ErrStaleToken},
		{"9007199254740993", "9007199254740992", "9007199254740994", history.ErrCursorConflict},
		{"9007199254740994", "9007199254740993", "9007199254740995", "ok"},
		{"9007199254740995", "9007199254740995", "9007199254740994", ResultBadArgument}, // to not above from
		{"9223372036854775807", "9007199254740995", "9223372036854775807", "ok"},
		{"9223372036854775806", "9223372036854775807", "9223372036854775807", ResultBadArgument},
		{"9223372036854775806", "9223372036854775806", "9223372036854775807", history.ErrStaleToken},
	} {
		reply := runCommitScript(t, c, name, "op-"+step.token+"-"+step.from, "n1", step.token, step.from, step.to, "0")
		if reply[0] != step.want {
			t.Errorf("token %s from %s to %s: %v, want %s", step.token, step.from, step.to, reply, step.want)
		}
	}
	st := readState(t, c, name)
	if st.Cursor != 1<<63-1 || st.MaxToken != 1<<63-1 {
		t.Errorf("record %d, %d; want 2^63-1 twice", st.Cursor, st.MaxToken)
	}
}

// TestCommitScriptRefusesCorruptRecord: a cursor record that something else wrote with
// a non-integer cursor or token is an error reply, and nothing is written.
func TestCommitScriptRefusesCorruptRecord(t *testing.T) {
	_, c := newRedis(t)
	ctx := context.Background()
	for _, rec := range [][2]string{{"1.5", "1"}, {"0", "1e3"}} {
		name := "corrupt-" + rec[0] + "-" + rec[1]
		k := KeysFor(name)
		c.HSet(ctx, k.Cursor, "cursor", rec[0], "token", rec[1])
		_, err := redis.NewScript(commitScript).Run(ctx, c, []string{k.Cursor, k.Audit, k.Key("sink")},
			"op", "n1", "2", "0", "1", "0", "RPUSH", "3", "1", "1").Result()
		if err == nil {
			t.Fatalf("cursor %s, token %s: the script accepted a corrupt cursor record", rec[0], rec[1])
		}
		if n, _ := c.Exists(ctx, k.Audit, k.Key("sink")).Result(); n != 0 {
			t.Errorf("cursor %s, token %s: %d keys written after the error", rec[0], rec[1], n)
		}
	}
}
