package listener

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/source"
)

// runCommitScript sends the commit script raw arguments, as a client other than
// RedisStore could, and returns its reply.
func runCommitScript(tb testing.TB, c redis.UniversalClient, name string, args ...string) []any {
	tb.Helper()
	a := make([]any, len(args))
	for i, s := range args {
		a[i] = s
	}
	reply, err := redis.NewScript(CommitScript).Run(context.Background(), c, KeysFor(name).list(), a...).Slice()
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
// "0x10" and " 1"; before the check the script stored them as sent, and after a commit
// with token "nan" a stale token was accepted. Each malformed commit must change nothing
// and be audited as bad-argument with the arguments as sent.
func TestCommitScriptRejectsMalformedNumbers(t *testing.T) {
	_, c := newRedis(t)
	ctx := context.Background()
	const name = "malformed"
	s := newStore(t, c, StoreConfig{Name: name})
	if err := s.Commit(ctx, 2, 0, source.Range(0, 5)); err != nil {
		t.Fatal(err)
	}
	before, audit := snapshot(t, c, name)
	if before.Cursor != 5 || before.Token != 2 || len(audit) != 1 {
		t.Fatalf("set-up: %+v, %d audit entries", before, len(audit))
	}
	// A valid commit from cursor 5 with token 3, one event; position i is replaced.
	valid := []string{"op", "n9", "3", "5", "6", "6", "a", "b", "10"}
	positions := map[int]string{2: "token", 3: "from", 4: "to", 5: "event id", 8: "amount"}
	bad := []string{"nan", "NaN", "inf", "-inf", "2.0e0", "0x10", "", " 1", "1 ", "+1", "01", "-0",
		"1e3", "1.5", "6\n", "9007199254740992", "-9007199254740992", "99999999999999999999",
		"18446744073709551616"}
	n := 0
	for pos, what := range positions {
		for _, v := range bad {
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
	// The stream keeps the arguments as sent and names the bad one.
	msgs, err := c.XRange(ctx, KeysFor(name).Audit, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs[1:] {
		if m.Values["error"] == nil || m.Values["error"] == "" {
			t.Errorf("audit %v has no error field", m.Values)
		}
	}
	// Wrong arity is audited as well.
	if reply := runCommitScript(t, c, name, "op-arity", "n9", "3", "5", "6", "6", "a", "b"); reply[0] != ResultBadArgument {
		t.Errorf("8 arguments: reply %v", reply)
	}
	// Ill-formed batches: ids not increasing, to not the last id.
	for _, args := range [][]string{
		{"op-order", "n9", "3", "5", "7", "7", "a", "b", "1", "6", "a", "b", "1"},
		{"op-behind", "n9", "3", "5", "5", "5", "a", "b", "1"},
		{"op-to", "n9", "3", "5", "9", "6", "a", "b", "1"},
	} {
		if reply := runCommitScript(t, c, name, args...); reply[0] != ResultBadArgument {
			t.Errorf("%q: reply %v", args, reply)
		}
	}
	if after, _ := snapshot(t, c, name); !reflect.DeepEqual(after, before) {
		t.Fatalf("store changed: %+v, was %+v", after, before)
	}

	// The fence still holds: a stale token is refused, the next one is accepted.
	if reply := runCommitScript(t, c, name, "op-stale", "n9", "1", "5", "6", "6", "a", "b", "10"); reply[0] != history.ErrStaleToken {
		t.Errorf("stale token 1 after the malformed commits: reply %v", reply)
	}
	if reply := runCommitScript(t, c, name, valid...); reply[0] != "ok" {
		t.Errorf("valid commit: reply %v", reply)
	}
	// ReadState reads the bad-argument entries (non-integers as 0) and Load still works.
	st := readState(t, c, name)
	if st.Cursor != 6 || st.MaxToken != 3 {
		t.Errorf("after a valid commit: cursor %d token %d", st.Cursor, st.MaxToken)
	}
	if cur, tok, err := s.Load(ctx); err != nil || cur != 6 || tok != 3 {
		t.Errorf("Load = %d, %d, %v", cur, tok, err)
	}
}

// TestCommitScriptExactLimits: the largest magnitudes are accepted exactly, and a large
// net change reaches HINCRBY as an integer (Lua's tostring would send 9.007199254741e+15,
// which HINCRBY refuses after the audit entry was written).
func TestCommitScriptExactLimits(t *testing.T) {
	_, c := newRedis(t)
	const name = "limits"
	maxs := strconv.FormatInt(MaxExactInt, 10)
	if reply := runCommitScript(t, c, name, "op1", "n1", "1", "0", "1", "1", "a", "b", maxs); reply[0] != "ok" {
		t.Fatalf("amount 2^53-1: reply %v", reply)
	}
	if reply := runCommitScript(t, c, name, "op2", "n1", maxs, "1", "2", "2", "b", "a", "-"+maxs); reply[0] != "ok" {
		t.Fatalf("token 2^53-1, amount -(2^53-1): reply %v", reply)
	}
	st := readState(t, c, name)
	want := -2 * int64(MaxExactInt)
	if st.Balances["a"] != want || st.Balances["b"] != -want || st.MaxToken != MaxExactInt || st.Cursor != 2 {
		t.Errorf("store %+v; want a=%d b=%d token 2^53-1 cursor 2", st, want, -want)
	}
	// Two payments whose sum leaves the exact range are refused whole.
	if reply := runCommitScript(t, c, name, "op3", "n1", maxs, "2", "4", "3", "a", "c", maxs, "4", "a", "c", "1"); reply[0] != ResultBadArgument {
		t.Errorf("net change 2^53: reply %v", reply)
	}
	// A balance that could overflow int64 is refused before anything is written.
	if err := c.HSet(context.Background(), KeysFor(name).Balances, "c", "9000000000000000000").Err(); err != nil {
		t.Fatal(err)
	}
	before, _ := snapshot(t, c, name)
	if reply := runCommitScript(t, c, name, "op4", "n1", maxs, "2", "3", "3", "a", "c", maxs); reply[0] != ResultBadArgument {
		t.Errorf("balance near int64: reply %v", reply)
	}
	if after, _ := snapshot(t, c, name); !reflect.DeepEqual(after, before) {
		t.Errorf("store changed: %+v, was %+v", after, before)
	}
}

// TestCommitScriptRefusesCorruptRecord: a cursor record that something else wrote as a
// non-integer is an error, and nothing is written.
func TestCommitScriptRefusesCorruptRecord(t *testing.T) {
	_, c := newRedis(t)
	ctx := context.Background()
	const name = "corrupt"
	if err := c.HSet(ctx, KeysFor(name).Cursor, "cursor", "0", "token", "nan").Err(); err != nil {
		t.Fatal(err)
	}
	a := []any{"op", "n1", "1", "0", "1", "1", "a", "b", "1"}
	_, err := redis.NewScript(CommitScript).Run(ctx, c, KeysFor(name).list(), a...).Result()
	if err == nil {
		t.Fatal("commit on a corrupt record: no error")
	}
	if n, _ := c.XLen(ctx, KeysFor(name).Audit).Result(); n != 0 {
		t.Errorf("audit has %d entries", n)
	}
	if n, _ := c.LLen(ctx, KeysFor(name).Sink).Result(); n != 0 {
		t.Errorf("sink has %d entries", n)
	}
}

// TestCommitRefusesInexactNumbers: RedisStore never sends a number the script would
// refuse; it returns ErrInvalidBatch without sending or recording.
func TestCommitRefusesInexactNumbers(t *testing.T) {
	_, c := newRedis(t)
	var buf syncBuffer
	s := newStore(t, c, StoreConfig{Name: "inexact", Recorder: history.NewRecorder(&buf)})
	ctx := context.Background()
	big := source.At(1)
	big.Amount = MaxExactInt + 1
	for name, tc := range map[string]struct {
		token, from int64
		evs         []source.Event
	}{
		"token":  {MaxExactInt + 1, 0, source.Range(0, 1)},
		"from":   {1, -MaxExactInt - 1, source.Range(0, 1)},
		"amount": {1, 0, []source.Event{big}},
	} {
		if err := s.Commit(ctx, tc.token, tc.from, tc.evs); !errors.Is(err, ErrInvalidBatch) {
			t.Errorf("%s: err %v, want ErrInvalidBatch", name, err)
		}
	}
	if buf.String() != "" {
		t.Errorf("history %q, want empty", buf.String())
	}
	if n, _ := c.XLen(ctx, KeysFor("inexact").Audit).Result(); n != 0 {
		t.Errorf("audit has %d entries", n)
	}
}
