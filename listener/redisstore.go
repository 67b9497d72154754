package listener

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/internal/redisretries"
)

// RedisConfig configures a RedisStore of events of type E.
type RedisConfig[E Event] struct {
	// Name is the election name: the hash tag of every key (see KeysFor). Default
	// DefaultName.
	Name string
	// Node is this instance's id, written into the audit stream and used in operation
	// ids. Required.
	Node string
	// Effects returns the writes that applying batch makes (see Write). They are applied
	// by the commit script in the same atomic step as the cursor move, after the token
	// and cursor checks, and only if those pass. An error from Effects fails the commit
	// with ErrInvalidBatch before anything is sent. Default nil: the store keeps the
	// cursor and nothing else.
	Effects func(batch []E) ([]Write, error)
	// Recorder is told about every Load and Commit. Default: none.
	Recorder Recorder
	// Timeout bounds each Load and Commit request (on top of the caller's context).
	// Default 2s. A commit that times out has an unknown outcome.
	Timeout time.Duration
	// AuditMaxLen caps the audit stream at about this many entries (XADD MAXLEN ~: Redis
	// trims whole nodes of the stream, so it may keep somewhat more). Default
	// DefaultAuditMaxLen. AuditUnbounded keeps every entry (the chaos harness does,
	// to check them all).
	AuditMaxLen int64
}

// Defaults of RedisConfig.
const (
	DefaultStoreTimeout = 2 * time.Second
	// DefaultAuditMaxLen keeps about the last 100,000 attempts: about 7.5 MB of Redis
	// memory (README, "Audit retention").
	DefaultAuditMaxLen = 100_000
	// AuditUnbounded, as RedisConfig.AuditMaxLen, never trims the audit.
	AuditUnbounded = -1
)

// MaxExactInt is the largest magnitude an HINCRBY increment (and a sum of them) may
// have in a RedisStore: Lua numbers are doubles, exact up to 2^53, and the commit script
// rejects anything beyond (see commitScript). Tokens, cursors and positions may be any
// int64 but math.MinInt64: the script compares them on their digits.
const MaxExactInt = 1<<53 - 1

// ResultBadArgument is the result, in the commit script's reply and in the audit stream,
// of a commit whose arguments are malformed (see commitScript). Nothing was applied.
const ResultBadArgument = "bad-argument"

// RedisStore is a Store in Redis: a fenced cursor record and the batch's effects,
// committed by one Lua script, and an audit stream of every attempt. It is safe for
// concurrent use.
type RedisStore[E Event] struct {
	client  redis.UniversalClient
	keys    Keys
	node    string
	effects func([]E) ([]Write, error)
	rec     Recorder
	timeout time.Duration
	maxLen  int64 // 0: unbounded
	script  *redis.Script
	ids     *OpIDs
}

// NewRedisClient returns a go-redis client for addr configured as the store needs it:
//   - MaxRetries -1: go-redis otherwise re-sends a command that failed or timed out (3
//     times by default). A re-sent commit is a write attempt the history never recorded;
//     with retries off, a failed request is reported as unknown and the caller reloads.
//   - ContextTimeoutEnabled: a request's context deadline bounds the socket read, so
//     RedisConfig.Timeout and a cancelled term context are honoured.
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
func NewRedisStore[E Event](client redis.UniversalClient, cfg RedisConfig[E]) (*RedisStore[E], error) {
	if client == nil {
		return nil, configErr("nil redis client")
	}
	if n := redisretries.Of(client); n > 0 {
		return nil, configErr("redis client retries commands %s", redisretries.Refusal(client, n))
	}
	if cfg.Node == "" {
		return nil, configErr("RedisConfig.Node is required")
	}
	if cfg.Timeout < 0 {
		return nil, configErr("RedisConfig.Timeout %v must be >= 0", cfg.Timeout)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultStoreTimeout
	}
	switch {
	case cfg.AuditMaxLen == 0:
		cfg.AuditMaxLen = DefaultAuditMaxLen
	case cfg.AuditMaxLen == AuditUnbounded:
		cfg.AuditMaxLen = 0
	case cfg.AuditMaxLen < 0 || cfg.AuditMaxLen > MaxExactInt:
		return nil, configErr("RedisConfig.AuditMaxLen %d must be > 0 or AuditUnbounded", cfg.AuditMaxLen)
	}
	if cfg.Effects == nil {
		cfg.Effects = func([]E) ([]Write, error) { return nil, nil }
	}
	if cfg.Recorder == nil {
		cfg.Recorder = nopRecorder{}
	}
	ids, err := NewOpIDs(cfg.Node)
	if err != nil {
		return nil, err
	}
	return &RedisStore[E]{
		client:  client,
		keys:    KeysFor(cfg.Name),
		node:    cfg.Node,
		effects: cfg.Effects,
		rec:     cfg.Recorder,
		timeout: cfg.Timeout,
		maxLen:  cfg.AuditMaxLen,
		script:  redis.NewScript(commitScript),
		ids:     ids,
	}, nil
}

// Keys returns the store's keys.
func (s *RedisStore[E]) Keys() Keys { return s.keys }

// Load reads the cursor record with one HMGET. It returns ctx's error, recording nothing,
// if ctx is already done.
func (s *RedisStore[E]) Load(ctx context.Context) (cursor, token int64, err error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	op := Op{ID: s.ids.Next(), Kind: OpLoad}
	done := s.rec.Invoke(op)
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
		done(Result{Outcome: OutcomeUnknown, Err: err})
		return 0, 0, fmt.Errorf("listener: load %s: %w", op.ID, err)
	}
	done(Result{Outcome: OutcomeOK, Cursor: cursor, Token: token})
	return cursor, token, nil
}

// Commit runs the fenced commit script once (never retried), with the batch's effects.
// A rejection returns a *RejectedError wrapping ErrStaleToken or ErrCursorConflict, or
// ErrInvalidBatch for effects the script found it cannot apply (see Write); an unknown
// outcome an error wrapping ErrOutcomeUnknown and the cause. An invalid batch (see
// ValidateBatch; a token or cursor of math.MinInt64; Effects failing or returning a write that
// cannot be sent) returns ErrInvalidBatch and a done ctx its error, both without sending
// or recording anything.
func (s *RedisStore[E]) Commit(ctx context.Context, token, from int64, batch []E) error {
	if err := ValidateBatch(from, batch); err != nil {
		return err
	}
	to := batch[len(batch)-1].Position()
	if token == math.MinInt64 || from == math.MinInt64 {
		return fmt.Errorf("%w: token %d or from %d is math.MinInt64", ErrInvalidBatch, token, from)
	}
	writes, err := s.effects(batch)
	if err != nil {
		return fmt.Errorf("%w: effects: %w", ErrInvalidBatch, err)
	}
	op := Op{ID: s.ids.Next(), Kind: OpCommit, Token: token, From: from, To: to, Events: len(batch)}
	keys := []string{s.keys.Cursor, s.keys.Audit}
	index := map[string]int{}
	args := []any{op.ID, s.node, token, from, to, s.maxLen}
	for i, w := range writes {
		if err := w.check(); err != nil {
			return fmt.Errorf("%w: write #%d %v: %w", ErrInvalidBatch, i+1, w, err)
		}
		k, ok := index[w.key]
		if !ok {
			keys = append(keys, s.keys.Key(w.key))
			k = len(keys)
			index[w.key] = k
		}
		args = append(args, w.cmd, k, len(w.args))
		for _, a := range w.args {
			args = append(args, a)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}

	done := s.rec.Invoke(op)
	rctx, cancel := context.WithTimeout(ctx, s.timeout)
	reply, err := s.script.Run(rctx, s.client, keys, args...).Slice()
	cancel()
	if ferr := hit("listener/after-commit-before-ack"); ferr != nil && err == nil {
		err = ferr // applied, perhaps, but the answer is lost: the outcome is unknown
	}
	var result string
	var storedCursor, storedToken int64
	if err == nil {
		result, storedCursor, storedToken, err = parseCommitReply(reply)
	}
	if err != nil {
		done(Result{Outcome: OutcomeUnknown, Err: err})
		return fmt.Errorf("listener: commit %s: %w: %w", op.ID, ErrOutcomeUnknown, err)
	}
	rej := &RejectedError{Op: op.ID, Token: token, From: from, To: to,
		StoredToken: storedToken, StoredCursor: storedCursor}
	switch result {
	case string(OutcomeStaleToken):
		rej.Reason = ErrStaleToken
	case string(OutcomeCursorConflict):
		rej.Reason = ErrCursorConflict
	case ResultBadArgument:
		rej.Reason = ErrInvalidBatch
	default: // "ok", checked by parseCommitReply
		done(Result{Outcome: OutcomeOK})
		return nil
	}
	done(Result{Outcome: rej.Outcome()})
	return rej
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
	case result != string(OutcomeOK) && result != string(OutcomeStaleToken) && result != string(OutcomeCursorConflict) && result != ResultBadArgument:
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
