package listener

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/fenceline/fenceline/internal/redisopts"
	"github.com/redis/go-redis/v9"
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
	// Metrics is told the outcome of every commit (FenceConfig.Metrics). Default
	// NopMetrics.
	Metrics FenceMetrics
	// Timeout bounds each Load and Commit request (on top of the caller's context).
	// Default 2s. A commit that times out has an unknown outcome.
	Timeout time.Duration
	// AuditMaxLen caps the audit stream (FenceConfig.AuditMaxLen). Default
	// DefaultAuditMaxLen.
	AuditMaxLen int64
}

// Defaults of RedisConfig and FenceConfig.
const (
	DefaultStoreTimeout = 2 * time.Second
	// DefaultAuditMaxLen keeps about the last 100,000 attempts: about 7.5 MB of Redis
	// memory (docs/library.md, "Audit retention").
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

// RedisStore is a Store in Redis: a RedisFence whose commits also move the cursor, with
// the batch's effects as its writes. It is safe for concurrent use.
type RedisStore[E Event] struct {
	fence   *RedisFence
	effects func([]E) ([]Write, error)
}

// NewRedisClient returns a go-redis client for addr configured as the store needs it,
// with the options election.ClientOptions documents:
//   - MaxRetries -1: go-redis otherwise re-sends a command that failed or timed out (3
//     times by default). A re-sent commit is a write attempt the history never recorded;
//     with retries off, a failed request is reported as unknown and the caller reloads.
//   - ContextTimeoutEnabled: a request's context deadline bounds the socket read, so
//     RedisConfig.Timeout and a cancelled term context are honoured.
//   - two idle connections handed out in turn (MinIdleConns 2, PoolFIFO): a commit sent
//     beside another request finds a connection ready, not a dial and a handshake that a
//     slow link can make use up its deadline before the commit is sent.
//
// The caller closes the client.
func NewRedisClient(addr string) *redis.Client { return redis.NewClient(redisopts.Options(addr)) }

// NewRedisStore returns a store on client. It refuses a client that retries commands (see
// NewRedisClient): create it with MaxRetries: -1. It does not contact Redis.
func NewRedisStore[E Event](client redis.UniversalClient, cfg RedisConfig[E]) (*RedisStore[E], error) {
	f, err := NewRedisFence(client, FenceConfig{Name: cfg.Name, Node: cfg.Node, Recorder: cfg.Recorder,
		Metrics: cfg.Metrics, Timeout: cfg.Timeout, AuditMaxLen: cfg.AuditMaxLen})
	if err != nil {
		return nil, err
	}
	if cfg.Effects == nil {
		cfg.Effects = func([]E) ([]Write, error) { return nil, nil }
	}
	return &RedisStore[E]{fence: f, effects: cfg.Effects}, nil
}

// Keys returns the store's keys.
func (s *RedisStore[E]) Keys() Keys { return s.fence.keys }

// Fence returns the store's fence, for fenced work beside the feed's commits.
func (s *RedisStore[E]) Fence() *RedisFence { return s.fence }

// Load reads the cursor record (RedisFence.Load).
func (s *RedisStore[E]) Load(ctx context.Context) (cursor, token int64, err error) {
	return s.fence.Load(ctx)
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
	writes, err := s.effects(batch)
	if err != nil {
		return fmt.Errorf("%w: effects: %w", ErrInvalidBatch, err)
	}
	keys, args, err := s.fence.encodeWrites(writes)
	if err != nil {
		return err
	}
	op := Op{Kind: OpCommit, Token: token, From: from, To: batch[len(batch)-1].Position(), Events: len(batch)}
	_, err = s.fence.run(ctx, op, true, keys, args)
	return err
}

func exact(n int64) bool { return n >= -MaxExactInt && n <= MaxExactInt }

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
