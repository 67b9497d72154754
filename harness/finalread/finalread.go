// Package finalread is the judge's own reader of a store's final state: raw Redis
// commands, and parsing written here from the documented key layout (README, "Redis key
// layout"; docs/history.md), sharing no code with the listener it judges, so that a bug
// in the listener's parsing cannot hide itself by reading the evidence the same wrong
// way. Parsing is strict: a field that is missing, duplicated, unexpected or not a
// canonical decimal integer is an error, never a 0.
//
// ReadPostgres does the same for a store in PostgreSQL, from the tables documented in
// listener/pgstore and workloads/ledger.
//
// It is a leaf (go-redis, pgx and history only), so that `fenceline status` can use it
// without the harness.
package finalread

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/history"
)

// ErrBadStore is returned (wrapped) when the store holds something the documented layout
// does not allow: the final state cannot be judged.
var ErrBadStore = errors.New("final read: the store does not match its documented layout")

// defaultElection is the election name when none is given (`--election` default).
const defaultElection = "fenceline"

// storeKeys are the keys of one election, all sharing its hash tag.
type storeKeys struct {
	token, cursor, balances, sink, audit string
}

func keysOf(name string) storeKeys {
	if name == "" {
		name = defaultElection
	}
	p := "{" + name + "}:"
	return storeKeys{token: p + "token", cursor: p + "cursor", balances: p + "balances", sink: p + "sink", audit: p + "audit"}
}

// Audit results the commit script writes, from the README and docs/history.md.
var auditResults = map[string]bool{
	"ok": true, history.ErrStaleToken: true, history.ErrCursorConflict: true, auditBadArgument: true, auditBodyError: true,
}

const (
	auditBadArgument = "bad-argument"
	auditBodyError   = history.AuditBodyFailed
)

// ReadStore reads the store's final state and the token counter of election name from
// Redis at addr, bypassing every proxy (see Read). It blocks until Redis
// answers, ctx ends, or 10s pass.
func ReadStore(ctx context.Context, addr, name string) (*history.Store, error) {
	c := redis.NewClient(&redis.Options{
		Addr: addr, Protocol: 2, MaxRetries: -1, DialTimeout: time.Second,
		ReadTimeout: 10 * time.Second, ContextTimeoutEnabled: true,
	})
	defer c.Close()
	return Read(ctx, c, name)
}

// Read reads the whole store of election name — the cursor record, the token
// counter, the balances, the sink and the audit stream — in one MULTI/EXEC, so the parts
// are one snapshot. A key that does not exist reads as empty (no commit yet: cursor and
// token 0); a key that exists must hold exactly what the layout says, or the read fails
// with ErrBadStore. It blocks until Redis answers or ctx ends; the sink and the audit
// stream are read whole.
func Read(ctx context.Context, c redis.UniversalClient, name string) (*history.Store, error) {
	k := keysOf(name)
	var rec, counter, bal, sink, audit *redis.Cmd
	_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		rec = p.Do(ctx, "HGETALL", k.cursor)
		counter = p.Do(ctx, "GET", k.token)
		bal = p.Do(ctx, "HGETALL", k.balances)
		sink = p.Do(ctx, "LRANGE", k.sink, 0, -1)
		audit = p.Do(ctx, "XRANGE", k.audit, "-", "+")
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("final read: %w", err)
	}
	st := &history.Store{Balances: map[string]int64{}, Sink: []int64{}, Audit: []history.AuditEntry{}}

	fields, err := hashReply(rec, k.cursor)
	if err != nil {
		return nil, err
	}
	if len(fields) > 0 {
		if st.Cursor, st.MaxToken, err = cursorRecord(k.cursor, fields); err != nil {
			return nil, err
		}
	}
	switch v, err := counter.Result(); {
	case errors.Is(err, redis.Nil):
		// No token was ever issued (or Redis lost the counter): TokenCounter 0.
	case err != nil:
		return nil, fmt.Errorf("final read: %s: %w", k.token, err)
	default:
		if st.TokenCounter, err = canonicalInt(v); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrBadStore, k.token, err)
		}
	}

	balances, err := hashReply(bal, k.balances)
	if err != nil {
		return nil, err
	}
	for acct, v := range balances {
		n, err := canonicalInt(v)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: account %q: %v", ErrBadStore, k.balances, acct, err)
		}
		st.Balances[acct] = n
	}

	items, err := arrayReply(sink, k.sink)
	if err != nil {
		return nil, err
	}
	st.Sink = make([]int64, len(items))
	for i, it := range items {
		if st.Sink[i], err = canonicalInt(it); err != nil {
			return nil, fmt.Errorf("%w: %s[%d]: %v", ErrBadStore, k.sink, i, err)
		}
	}

	entries, err := arrayReply(audit, k.audit)
	if err != nil {
		return nil, err
	}
	st.Audit = make([]history.AuditEntry, len(entries))
	for i, it := range entries {
		if st.Audit[i], err = auditEntry(it); err != nil {
			return nil, fmt.Errorf("%w: %s entry %d: %v", ErrBadStore, k.audit, i, err)
		}
	}
	return st, nil
}

// Doer sends one raw command: *redis.Client, *redis.ClusterClient and a pipeline are.
type Doer interface {
	Do(ctx context.Context, args ...any) *redis.Cmd
}

// ReadCursorRecord reads the cursor record of election name with one HMGET: the last
// applied event id and the highest token the store accepted. A record that does not
// exist reads as 0, 0; a record with one field and not the other, or a field that is not
// a canonical decimal integer, is ErrBadStore. It needs no more than the HMGET a node's
// least-privilege ACL allows, and blocks until Redis answers or ctx ends.
func ReadCursorRecord(ctx context.Context, c Doer, name string) (cursor, maxToken int64, err error) {
	key := keysOf(name).cursor
	v, err := c.Do(ctx, "HMGET", key, "cursor", "token").Result()
	if err != nil {
		return 0, 0, fmt.Errorf("final read: %s: %w", key, err)
	}
	vals, ok := v.([]any)
	if !ok || len(vals) != 2 {
		return 0, 0, fmt.Errorf("%w: %s: HMGET answered %T %v", ErrBadStore, key, v, v)
	}
	if vals[0] == nil && vals[1] == nil {
		return 0, 0, nil
	}
	fields := map[string]any{}
	for i, f := range []string{"cursor", "token"} {
		if vals[i] != nil {
			fields[f] = vals[i]
		}
	}
	return cursorRecord(key, fields)
}

// cursorRecord reads the fields of an existing cursor hash: exactly cursor and token.
func cursorRecord(key string, fields map[string]any) (cursor, token int64, err error) {
	for f := range fields {
		if f != "cursor" && f != "token" {
			return 0, 0, fmt.Errorf("%w: %s: unexpected field %q", ErrBadStore, key, f)
		}
	}
	get := func(f string) (int64, error) {
		v, ok := fields[f]
		if !ok {
			return 0, fmt.Errorf("%w: %s: field %q missing", ErrBadStore, key, f)
		}
		n, err := canonicalInt(v)
		if err != nil {
			return 0, fmt.Errorf("%w: %s: field %q: %v", ErrBadStore, key, f, err)
		}
		return n, nil
	}
	if cursor, err = get("cursor"); err != nil {
		return 0, 0, err
	}
	if token, err = get("token"); err != nil {
		return 0, 0, err
	}
	return cursor, token, nil
}

// auditEntry reads one XRANGE entry: [id, [field, value, ...]] with exactly the fields
// op node token from to result time, and error when (and only when) the result is
// bad-argument or error. A write that moves no cursor has neither from nor to: its
// entry is of KindWrite, with From and To 0. A bad-argument entry keeps the commit's
// arguments as they were sent, which need not be integers: those read as 0, as
// docs/history.md says.
func auditEntry(v any) (history.AuditEntry, error) {
	var e history.AuditEntry
	pair, ok := v.([]any)
	if !ok || len(pair) != 2 {
		return e, fmt.Errorf("not an [id, fields] pair: %v", v)
	}
	if e.StreamID, ok = pair[0].(string); !ok || !validStreamID(e.StreamID) {
		return e, fmt.Errorf("bad stream id %v", pair[0])
	}
	fields, err := pairs(pair[1])
	if err != nil {
		return e, fmt.Errorf("%s: %v", e.StreamID, err)
	}
	str := func(f string) (string, error) {
		v, ok := fields[f]
		if !ok {
			return "", fmt.Errorf("%s: field %q missing", e.StreamID, f)
		}
		s, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("%s: field %q is %T, not a string", e.StreamID, f, v)
		}
		return s, nil
	}
	if e.Op, err = str("op"); err != nil {
		return e, err
	}
	if e.Node, err = str("node"); err != nil {
		return e, err
	}
	if e.Result, err = str("result"); err != nil {
		return e, err
	}
	if !auditResults[e.Result] {
		return e, fmt.Errorf("%s: unknown result %q", e.StreamID, e.Result)
	}
	bad := e.Result == auditBadArgument
	if bad || e.Result == auditBodyError {
		if _, err := str("error"); err != nil {
			return e, err
		}
	}
	_, hasFrom := fields["from"]
	_, hasTo := fields["to"]
	if hasFrom != hasTo {
		return e, fmt.Errorf("%s: one of from and to without the other", e.StreamID)
	}
	if !hasFrom {
		e.Kind = history.KindWrite
	} else if e.Result == auditBodyError {
		return e, fmt.Errorf("%s: result %s in a commit that moves the cursor (only a write's body can fail)", e.StreamID, e.Result)
	}
	for f := range fields {
		switch f {
		case "op", "node", "token", "from", "to", "result", "time":
		case "error":
			if !bad && e.Result != auditBodyError {
				return e, fmt.Errorf("%s: field %q in an entry whose result is %s", e.StreamID, f, e.Result)
			}
		default:
			return e, fmt.Errorf("%s: unexpected field %q", e.StreamID, f)
		}
	}
	for _, f := range []struct {
		name string
		dst  *int64
	}{{"token", &e.Token}, {"from", &e.From}, {"to", &e.To}, {"time", &e.ServerTime}} {
		if e.Kind == history.KindWrite && (f.name == "from" || f.name == "to") {
			continue
		}
		s, err := str(f.name)
		if err != nil {
			return e, err
		}
		n, err := canonicalInt(s)
		switch {
		case err == nil:
			*f.dst = n
		case bad && f.name != "time":
			// The malformed argument the script rejected, kept as sent.
		default:
			return e, fmt.Errorf("%s: field %q: %v", e.StreamID, f.name, err)
		}
	}
	return e, nil
}

// validStreamID is "<ms>-<seq>", both decimal.
func validStreamID(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '-' {
			_, e1 := strconv.ParseUint(s[:i], 10, 64)
			_, e2 := strconv.ParseUint(s[i+1:], 10, 64)
			return i > 0 && i < len(s)-1 && e1 == nil && e2 == nil
		}
	}
	return false
}

// hashReply reads an HGETALL reply: a flat [field, value, ...] array (RESP2) or a map
// (RESP3). A missing key is an empty hash.
func hashReply(c *redis.Cmd, key string) (map[string]any, error) {
	v, err := c.Result()
	if err != nil {
		return nil, fmt.Errorf("final read: %s: %w", key, err)
	}
	m, err := pairs(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadStore, key, err)
	}
	return m, nil
}

// pairs turns a field/value list into a map, refusing an odd length, a non-string field
// and a field given twice.
func pairs(v any) (map[string]any, error) {
	out := map[string]any{}
	switch t := v.(type) {
	case []any:
		if len(t)%2 != 0 {
			return nil, fmt.Errorf("odd field/value list of %d items", len(t))
		}
		for i := 0; i < len(t); i += 2 {
			f, ok := t[i].(string)
			if !ok {
				return nil, fmt.Errorf("field name %v is not a string", t[i])
			}
			if _, dup := out[f]; dup {
				return nil, fmt.Errorf("field %q given twice", f)
			}
			out[f] = t[i+1]
		}
	case map[any]any:
		for k, val := range t {
			f, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("field name %v is not a string", k)
			}
			out[f] = val
		}
	default:
		return nil, fmt.Errorf("not a field/value list: %T", v)
	}
	return out, nil
}

// arrayReply reads an array reply (LRANGE, XRANGE); a missing key is an empty array.
func arrayReply(c *redis.Cmd, key string) ([]any, error) {
	v, err := c.Result()
	if err != nil {
		return nil, fmt.Errorf("final read: %s: %w", key, err)
	}
	a, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%w: %s: not an array: %T", ErrBadStore, key, v)
	}
	return a, nil
}

// canonicalInt reads a canonical decimal integer: what strconv.FormatInt would write,
// so "2.0", "+2", "02", "-0", " 2" and "" are refused.
func canonicalInt(v any) (int64, error) {
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("%v (%T) is not a string", v, v)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || strconv.FormatInt(n, 10) != s {
		return 0, fmt.Errorf("%q is not a canonical decimal integer", s)
	}
	return n, nil
}
