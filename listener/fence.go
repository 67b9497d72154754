package listener

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/internal/redisretries"
)

// FenceConfig configures a RedisFence.
type FenceConfig struct {
	// Name is the election name: the hash tag of every key (see KeysFor). Default
	// DefaultName.
	Name string
	// Node is this instance's id, written into the audit stream and used in operation
	// ids. Required.
	Node string
	// Recorder is told about every request. Default: none.
	Recorder Recorder
	// Metrics is told the outcome of every fenced write. Default NopMetrics.
	Metrics FenceMetrics
	// Timeout bounds each request (on top of the caller's context). Default 2s. A write
	// that times out has an unknown outcome.
	Timeout time.Duration
	// AuditMaxLen caps the audit stream at about this many entries (XADD MAXLEN ~: Redis
	// trims whole nodes of the stream, so it may keep somewhat more). Default
	// DefaultAuditMaxLen. AuditUnbounded keeps every entry (the chaos harness does,
	// to check them all).
	AuditMaxLen int64
}

// RedisFence runs any work on Redis fenced by a token: a closed set of writes (Write) or
// a Lua body of yours (Eval), on keys under the election's hash tag. Each runs in one Lua
// script (see commitScript) that applies the work only if the token is at least the
// highest token accepted, then records the token as accepted, and audits every attempt
// in the audit stream, so that an unknown outcome can be looked up by its operation id.
// RedisStore's commits are fenced writes that also move the cursor: one fence record
// (Keys.Cursor) per election serves both. It is safe for concurrent use.
type RedisFence struct {
	client  redis.UniversalClient
	keys    Keys
	node    string
	rec     Recorder
	metrics FenceMetrics
	timeout time.Duration
	maxLen  int64 // 0: unbounded
	script  *redis.Script
	ids     *OpIDs
}

// NewRedisFence returns a fence on client. It refuses a client that retries commands (see
// NewRedisClient): create it with MaxRetries: -1. It does not contact Redis.
func NewRedisFence(client redis.UniversalClient, cfg FenceConfig) (*RedisFence, error) {
	if client == nil {
		return nil, configErr("nil redis client")
	}
	if n := redisretries.Of(client); n > 0 {
		return nil, configErr("redis client retries commands %s", redisretries.Refusal(client, n))
	}
	if cfg.Node == "" {
		return nil, configErr("Node is required")
	}
	if cfg.Timeout < 0 {
		return nil, configErr("Timeout %v must be >= 0", cfg.Timeout)
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
		return nil, configErr("AuditMaxLen %d must be > 0 or AuditUnbounded", cfg.AuditMaxLen)
	}
	if cfg.Recorder == nil {
		cfg.Recorder = nopRecorder{}
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NopMetrics{}
	}
	ids, err := NewOpIDs(cfg.Node)
	if err != nil {
		return nil, err
	}
	return &RedisFence{client: client, keys: KeysFor(cfg.Name), node: cfg.Node, rec: cfg.Recorder,
		metrics: cfg.Metrics, timeout: cfg.Timeout, maxLen: cfg.AuditMaxLen,
		script: redis.NewScript(commitScript), ids: ids}, nil
}

// Keys returns the fence's keys.
func (f *RedisFence) Keys() Keys { return f.keys }

// Load reads the fence record with one HMGET: the cursor (0 if no commit moved it) and
// the highest token accepted (0 if none). It returns ctx's error, recording nothing, if
// ctx is already done.
func (f *RedisFence) Load(ctx context.Context) (cursor, token int64, err error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	op := Op{ID: f.ids.Next(), Kind: OpLoad}
	done := f.rec.Invoke(op)
	rctx, cancel := context.WithTimeout(ctx, f.timeout)
	vals, err := f.client.HMGet(rctx, f.keys.Cursor, "cursor", "token").Result()
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

// Write applies writes (none: only the token is recorded) fenced by token, in one atomic
// step, whole or not at all (see Write for what is checked first). It blocks for one
// round trip and is never retried. A rejection returns a *RejectedError wrapping
// ErrStaleToken, or ErrInvalidBatch for writes the script found it cannot apply; an
// unknown outcome an error wrapping ErrOutcomeUnknown, whose operation id (in the error
// and the Recorder's Op) the audit resolves. A write that cannot be sent returns
// ErrInvalidBatch and a done ctx its error, both without sending or recording anything.
func (f *RedisFence) Write(ctx context.Context, token int64, writes ...Write) error {
	keys, args, err := f.encodeWrites(writes)
	if err != nil {
		return err
	}
	_, err = f.run(ctx, Op{Kind: OpWrite, Token: token}, false, keys, args)
	return err
}

// Eval runs body, the source of a Lua function, fenced by token: it runs once the token
// check has passed, in the same script, and its token is then recorded as accepted. Its
// KEYS are keys (names under the hash tag, as for Write: "balances" is
// "{name}:balances") and its ARGV args; it returns what body returns, converted as
// Redis converts a script's reply. It blocks for one round trip and is never retried.
//
// The body cannot escape the fence: no text of it runs before the check (it is compiled
// as a chunk of its own); it reaches Redis only through the redis.call and redis.pcall it
// is given, which run only single-key commands and DEL, UNLINK and EXISTS, and only on its
// KEYS (checked to be under the hash tag, none the store's or the election's own); every
// other global but the pure libraries (string, table, math, cjson, ...) is nil.
//
// Errors are those of Write, and: a body that does not compile is rejected with
// ErrInvalidBatch, nothing run; a body that raises an error (a refused command included)
// returns an error wrapping ErrBodyFailed. Redis does not roll a script back: what the
// body wrote before the error is applied under token, as the audit says ("error"). Check
// before you write, as Write's script does. An error reply the body returns
// (redis.error_reply) is its value, not a failure. A body that never ends blocks Redis,
// as any script does.
func (f *RedisFence) Eval(ctx context.Context, token int64, body string, keys []string, args ...any) (any, error) {
	full := make([]string, len(keys))
	for i, k := range keys {
		if err := checkEffectKey(k); err != nil {
			return nil, fmt.Errorf("%w: key #%d: %w", ErrInvalidBatch, i+1, err)
		}
		full[i] = f.keys.Key(k)
	}
	return f.run(ctx, Op{Kind: OpWrite, Token: token}, false, full, append([]any{"BODY", body}, args...))
}

// encodeWrites returns the KEYS (after the fence record and the audit) and the ARGV
// (after the six fixed arguments) of writes.
func (f *RedisFence) encodeWrites(writes []Write) (keys []string, args []any, err error) {
	index := map[string]int{}
	for i, w := range writes {
		if err := w.check(); err != nil {
			return nil, nil, fmt.Errorf("%w: write #%d %v: %w", ErrInvalidBatch, i+1, w, err)
		}
		k, ok := index[w.key]
		if !ok {
			keys = append(keys, f.keys.Key(w.key))
			k = len(keys) + 2
			index[w.key] = k
		}
		args = append(args, w.cmd, k, len(w.args))
		for _, a := range w.args {
			args = append(args, a)
		}
	}
	return keys, args, nil
}

// run sends one fenced write: op (its ID set here), moving the cursor from op.From to
// op.To if moves, with the work's keys (full names) and arguments.
func (f *RedisFence) run(ctx context.Context, op Op, moves bool, keys []string, work []any) (any, error) {
	if op.Token == math.MinInt64 || (moves && op.From == math.MinInt64) {
		return nil, fmt.Errorf("%w: token %d or from %d is math.MinInt64", ErrInvalidBatch, op.Token, op.From)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	op.ID = f.ids.Next()
	var from, to any = "", ""
	if moves {
		from, to = op.From, op.To
	}
	args := append([]any{op.ID, f.node, op.Token, from, to, f.maxLen}, work...)
	done := f.rec.Invoke(op)
	rctx, cancel := context.WithTimeout(ctx, f.timeout)
	reply, err := f.script.Run(rctx, f.client, append([]string{f.keys.Cursor, f.keys.Audit}, keys...), args...).Slice()
	cancel()
	if ferr := hit("listener/after-commit-before-ack"); ferr != nil && err == nil {
		err = ferr // applied, perhaps, but the answer is lost: the outcome is unknown
	}
	var r commitReply
	if err == nil {
		r, err = parseCommitReply(reply)
	}
	if err != nil {
		done(Result{Outcome: OutcomeUnknown, Err: err})
		f.metrics.ObserveFenced(OutcomeUnknown)
		return nil, fmt.Errorf("listener: %s %s: %w: %w", op.Kind, op.ID, ErrOutcomeUnknown, err)
	}
	f.metrics.ObserveFenced(Outcome(r.result))
	rej := &RejectedError{Op: op.ID, Token: op.Token, From: op.From, To: op.To,
		StoredToken: r.token, StoredCursor: r.cursor}
	switch Outcome(r.result) {
	case OutcomeOK:
		done(Result{Outcome: OutcomeOK})
		return r.value, nil
	case OutcomeBodyError:
		done(Result{Outcome: OutcomeBodyError})
		return nil, fmt.Errorf("listener: %s %s: %w: %v", op.Kind, op.ID, ErrBodyFailed, r.value)
	case OutcomeStaleToken:
		rej.Reason = ErrStaleToken
	case OutcomeCursorConflict:
		rej.Reason = ErrCursorConflict
	default: // bad-argument, checked by parseCommitReply
		rej.Reason = ErrInvalidBatch
	}
	done(Result{Outcome: rej.Outcome()})
	return nil, rej
}

// commitReply is the script's reply.
type commitReply struct {
	result        string
	cursor, token int64
	value         any
}

// parseCommitReply reads the script's {result, cursor, token[, value]}.
func parseCommitReply(reply []any) (r commitReply, err error) {
	if len(reply) != 3 && len(reply) != 4 {
		return r, fmt.Errorf("%w: %v", ErrUnexpectedReply, reply)
	}
	var ok bool
	r.result, ok = reply[0].(string)
	switch Outcome(r.result) {
	case OutcomeOK, OutcomeStaleToken, OutcomeCursorConflict, OutcomeBadArgument, OutcomeBodyError:
	default:
		if !ok {
			return r, fmt.Errorf("%w: %v", ErrUnexpectedReply, reply)
		}
		return r, fmt.Errorf("%w: result %q", ErrUnexpectedReply, r.result)
	}
	if r.cursor, err = parseOptInt(reply[1]); err != nil {
		return r, fmt.Errorf("%w: cursor: %w", ErrUnexpectedReply, err)
	}
	if r.token, err = parseOptInt(reply[2]); err != nil {
		return r, fmt.Errorf("%w: token: %w", ErrUnexpectedReply, err)
	}
	if len(reply) == 4 {
		r.value = reply[3]
	}
	return r, nil
}
