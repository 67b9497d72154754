package listener

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/internal/redisretries"

	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/source"
)

// CursorStore is where a Listener keeps its cursor and commits its batches. RedisStore is
// the reference implementation; deliberately broken variants (no fence, a client-side
// check, a wrong comparison) implement it elsewhere to prove that the checker catches them.
//
// Implementations must be safe for concurrent use, and every method must return promptly
// once ctx is done.
type CursorStore interface {
	// Load returns the cursor (the id of the last applied event, 0 before the first) and
	// the highest fencing token the store has accepted (0 if none).
	Load(ctx context.Context) (cursor, token int64, err error)
	// Commit applies events, whose ids are strictly increasing and above from, and moves
	// the cursor from from to the last event's id, all at once and only if token is not
	// below the highest accepted token and the cursor is still from. A rejection returns
	// an error wrapping ErrStaleToken or ErrCursorConflict and changes nothing. Any other
	// error leaves the outcome unknown.
	Commit(ctx context.Context, token, from int64, events []source.Event) error
}

// StoreConfig configures a RedisStore.
type StoreConfig struct {
	// Name is the election name: the hash tag of every key (see KeysFor). Default
	// DefaultName.
	Name string
	// Node is this instance's id, written into the audit stream and the history and used
	// in operation ids. Required.
	Node string
	// Recorder receives the history of every Load and Commit. Default nil: none.
	Recorder *history.Recorder
	// Timeout bounds each Load and Commit request (on top of the caller's context).
	// Default 2s. A commit that times out has an unknown outcome.
	Timeout time.Duration
	// Script is the Lua source of the commit. Default CommitScript. Only deliberately
	// broken variants and benchmarks set it; it must follow CommitScript's contract.
	Script string
}

// DefaultStoreTimeout is StoreConfig.Timeout's default.
const DefaultStoreTimeout = 2 * time.Second

// MaxExactInt is the largest magnitude a token, cursor, event id or amount may have: the
// commit script compares numbers as Lua doubles, exact up to 2^53, and rejects anything
// beyond (see CommitScript).
const MaxExactInt = 1<<53 - 1

// ResultBadArgument is the result, in the commit script's reply and in the audit stream,
// of a commit whose arguments are malformed (see CommitScript). Nothing was applied.
const ResultBadArgument = "bad-argument"

// RedisStore is the reference CursorStore: a fenced cursor record in Redis, committed by
// one Lua script (CommitScript). It is safe for concurrent use.
type RedisStore struct {
	client  redis.UniversalClient
	keys    Keys
	keyList []string
	node    string
	rec     *history.Recorder
	timeout time.Duration
	script  *redis.Script
	boot    string
	seq     atomic.Int64
}

var _ CursorStore = (*RedisStore)(nil)

// NewRedisClient returns a go-redis client for addr configured as the store needs it:
//   - MaxRetries -1: go-redis otherwise re-sends a command that failed or timed out (3
//     times by default). A re-sent commit is a write attempt the history never recorded;
//     with retries off, a failed request is reported as unknown and the caller reloads.
//   - ContextTimeoutEnabled: a request's context deadline bounds the socket read, so
//     StoreConfig.Timeout and a cancelled term context are honoured.
//
// The caller closes the client.
func NewRedisClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:                  addr,
		MaxRetries:            -1,
		ContextTimeoutEnabled: true,
		DialTimeout:           2 * time.Second,
		ReadTimeout:           5 * time.Second,
		WriteTimeout:          5 * time.Second,
	})
}

// NewRedisStore returns a store on client. It refuses a client that retries commands (see
// NewRedisClient): create it with MaxRetries: -1. It does not contact Redis.
func NewRedisStore(client redis.UniversalClient, cfg StoreConfig) (*RedisStore, error) {
	if client == nil {
		return nil, configErr("nil redis client")
	}
	if n := redisretries.Of(client); n > 0 {
		return nil, configErr("redis client retries commands (MaxRetries %d after defaults); create it with MaxRetries: -1", n)
	}
	if cfg.Node == "" {
		return nil, configErr("StoreConfig.Node is required")
	}
	if cfg.Timeout < 0 {
		return nil, configErr("StoreConfig.Timeout %v must be >= 0", cfg.Timeout)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultStoreTimeout
	}
	if cfg.Script == "" {
		cfg.Script = CommitScript
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("listener: boot id: %w", err)
	}
	k := KeysFor(cfg.Name)
	return &RedisStore{
		client:  client,
		keys:    k,
		keyList: k.list(),
		node:    cfg.Node,
		rec:     cfg.Recorder,
		timeout: cfg.Timeout,
		script:  redis.NewScript(cfg.Script),
		boot:    hex.EncodeToString(b[:]),
	}, nil
}

// Keys returns the store's keys.
func (s *RedisStore) Keys() Keys { return s.keys }

// nextOp returns a new operation id, "<node>/<boot>/<seq>": the boot part is random per
// store, so ids stay unique across restarts of a node.
func (s *RedisStore) nextOp() string {
	return s.node + "/" + s.boot + "/" + strconv.FormatInt(s.seq.Add(1), 10)
}

// Load reads the cursor record with one HMGET. It records an invoke before the request
// and ok (with Cursor and Token) or info after. It returns ctx's error, recording nothing,
// if ctx is already done.
func (s *RedisStore) Load(ctx context.Context) (cursor, token int64, err error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	ev := history.Event{ID: s.nextOp(), Kind: history.KindLoad, Node: s.node}
	s.record(ev, history.Invoke)
	rctx, cancel := context.WithTimeout(ctx, s.timeout)
	vals, err := s.client.HMGet(rctx, s.keys.Cursor, "cursor", "token").Result()
	cancel()
	if err == nil {
		if len(vals) != 2 {
			err = fmt.Errorf("HMGET returned %d values", len(vals))
		} else if cursor, err = parseOptInt(vals[0]); err == nil {
			token, err = parseOptInt(vals[1])
		}
	}
	if err != nil {
		ev.Error = err.Error()
		s.record(ev, history.Info)
		return 0, 0, fmt.Errorf("listener: load %s: %w", ev.ID, err)
	}
	ev.Cursor, ev.Token = cursor, token
	s.record(ev, history.OK)
	return cursor, token, nil
}

// Commit runs the fenced commit script once (never retried). It records an invoke before
// sending and, after, ok, fail (Error stale-token or cursor-conflict: certainly not
// applied) or info (unknown: it may have been applied). A rejection returns a
// *RejectedError wrapping ErrStaleToken or ErrCursorConflict; an unknown outcome an error
// wrapping ErrOutcomeUnknown and the cause. An invalid batch (see checkBatch and
// checkExact) returns ErrInvalidBatch and a done ctx its error, both without sending or
// recording anything. A commit the script rejects as malformed (ResultBadArgument: only
// possible if the script and these checks disagree, or with a substituted script) is
// recorded as fail with that error and returns a *RejectedError wrapping ErrInvalidBatch.
func (s *RedisStore) Commit(ctx context.Context, token, from int64, events []source.Event) error {
	if err := checkBatch(from, events); err != nil {
		return err
	}
	if err := checkExact(token, from, events); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	to := events[len(events)-1].ID
	ev := history.Event{ID: s.nextOp(), Kind: history.KindCommit, Node: s.node,
		Token: token, From: from, To: to, Events: len(events)}
	args := make([]any, 0, 5+4*len(events))
	args = append(args, ev.ID, s.node, token, from, to)
	for _, e := range events {
		args = append(args, e.ID, e.From, e.To, e.Amount)
	}

	s.record(ev, history.Invoke)
	rctx, cancel := context.WithTimeout(ctx, s.timeout)
	reply, err := s.script.Run(rctx, s.client, s.keyList, args...).Slice()
	cancel()
	var result string
	var storedCursor, storedToken int64
	if err == nil {
		result, storedCursor, storedToken, err = parseCommitReply(reply)
	}
	if err != nil {
		ev.Error = err.Error()
		s.record(ev, history.Info)
		return fmt.Errorf("listener: commit %s: %w: %w", ev.ID, ErrOutcomeUnknown, err)
	}
	rej := &RejectedError{Op: ev.ID, Token: token, From: from, To: to,
		StoredToken: storedToken, StoredCursor: storedCursor}
	switch result {
	case history.ErrStaleToken:
		rej.Reason = ErrStaleToken
	case history.ErrCursorConflict:
		rej.Reason = ErrCursorConflict
	case ResultBadArgument:
		rej.Reason = ErrInvalidBatch
	default: // "ok", checked by parseCommitReply
		s.record(ev, history.OK)
		return nil
	}
	ev.Error = result
	s.record(ev, history.Fail)
	return rej
}

func (s *RedisStore) record(ev history.Event, typ history.Type) {
	if s.rec == nil {
		return
	}
	ev.Type = typ
	s.rec.Record(ev)
}

// checkBatch checks that a batch is not empty and its ids strictly increase after from.
func checkBatch(from int64, events []source.Event) error {
	if len(events) == 0 {
		return fmt.Errorf("%w: empty", ErrInvalidBatch)
	}
	prev := from
	for _, e := range events {
		if e.ID <= prev {
			return fmt.Errorf("%w: event %d after %d (from %d)", ErrInvalidBatch, e.ID, prev, from)
		}
		prev = e.ID
	}
	return nil
}

// checkExact checks the rest of what the commit script would reject as
// ResultBadArgument, so that a batch it cannot apply is never sent: every number within
// ±MaxExactInt (the per-account sums are left to the script).
func checkExact(token, from int64, events []source.Event) error {
	if !exact(token) || !exact(from) {
		return fmt.Errorf("%w: token %d or from %d beyond ±%d", ErrInvalidBatch, token, from, int64(MaxExactInt))
	}
	for _, e := range events {
		if !exact(e.ID) || !exact(e.Amount) {
			return fmt.Errorf("%w: event %d: id or amount %d beyond ±%d", ErrInvalidBatch, e.ID, e.Amount, int64(MaxExactInt))
		}
	}
	return nil
}

func exact(n int64) bool { return n >= -MaxExactInt && n <= MaxExactInt }

var errUnexpectedReply = errors.New("unexpected reply from commit script")

// parseCommitReply reads the script's {result, cursor, token}.
func parseCommitReply(reply []any) (result string, cursor, token int64, err error) {
	if len(reply) != 3 {
		return "", 0, 0, fmt.Errorf("%w: %v", errUnexpectedReply, reply)
	}
	result, ok := reply[0].(string)
	switch {
	case !ok:
		return "", 0, 0, fmt.Errorf("%w: %v", errUnexpectedReply, reply)
	case result != "ok" && result != history.ErrStaleToken && result != history.ErrCursorConflict && result != ResultBadArgument:
		return "", 0, 0, fmt.Errorf("%w: result %q", errUnexpectedReply, result)
	}
	if cursor, err = parseOptInt(reply[1]); err != nil {
		return "", 0, 0, fmt.Errorf("%w: cursor: %w", errUnexpectedReply, err)
	}
	if token, err = parseOptInt(reply[2]); err != nil {
		return "", 0, 0, fmt.Errorf("%w: token: %w", errUnexpectedReply, err)
	}
	return result, cursor, token, nil
}

// parseOptInt parses a Redis reply value that is an integer, its decimal string, or nil
// (a missing field: 0).
func parseOptInt(v any) (int64, error) {
	switch v := v.(type) {
	case nil:
		return 0, nil
	case int64:
		return v, nil
	case string:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("not an integer: %q", v)
		}
		return n, nil
	}
	return 0, fmt.Errorf("not an integer: %T %v", v, v)
}
