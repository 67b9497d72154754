package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fenceline/fenceline/listener"
)

// Config configures a Store of events of type E.
type Config[E listener.Event] struct {
	// Name is the cursor's name, its row in the cursor table: the election's name.
	// Default listener.DefaultName.
	Name string
	// Node is this instance's id, written into the audit and used in operation ids.
	// Required.
	Node string
	// Effects applies batch on tx, the commit's transaction, after the fence has passed
	// (see the package doc). Default nil: the store keeps the cursor and nothing else.
	Effects func(ctx context.Context, tx pgx.Tx, batch []E) error
	// Recorder is told about every Load and Commit. Default: none.
	Recorder listener.Recorder
	// Metrics is told the outcome of every commit (FenceConfig.Metrics). Default
	// listener.NopMetrics.
	Metrics listener.FenceMetrics
	// Timeout bounds each Load and Commit, the whole transaction (on top of the caller's
	// context). Default 2s. A commit that times out has an unknown outcome.
	Timeout time.Duration
	// CursorTable and AuditTable name the tables, optionally schema-qualified
	// ("ingest.cursor"). Defaults "fenceline_cursor" and "fenceline_audit".
	CursorTable, AuditTable string
	// AuditMaxLen keeps about the last AuditMaxLen audit rows of this cursor. Default
	// DefaultAuditMaxLen; AuditUnbounded keeps every row (the chaos harness does).
	AuditMaxLen int64
}

// Defaults of Config and FenceConfig.
const (
	DefaultTimeout     = 2 * time.Second
	DefaultCursorTable = "fenceline_cursor"
	DefaultAuditTable  = "fenceline_audit"
	// DefaultAuditMaxLen keeps about the last 100,000 attempts: about 15 MB of table
	// and index (docs/library.md, "Audit retention").
	DefaultAuditMaxLen = 100_000
	// AuditUnbounded, as Config.AuditMaxLen, never deletes an audit row.
	AuditUnbounded = -1
	// trimEvery is how many audit rows an accepted commit lets pass between trims.
	trimEvery = 100
)

// Store is a listener.Store in PostgreSQL: a Fence whose commits also move the cursor,
// with the batch's effects as their work (see the package doc). It is safe for
// concurrent use.
type Store[E listener.Event] struct {
	fence   *Fence
	effects func(context.Context, pgx.Tx, []E) error
}

// NewStore returns a store on pool. It does not contact the database; call Setup once
// to create the tables.
func NewStore[E listener.Event](pool *pgxpool.Pool, cfg Config[E]) (*Store[E], error) {
	f, err := NewFence(pool, FenceConfig{Name: cfg.Name, Node: cfg.Node, Recorder: cfg.Recorder, Metrics: cfg.Metrics,
		Timeout: cfg.Timeout, CursorTable: cfg.CursorTable, AuditTable: cfg.AuditTable, AuditMaxLen: cfg.AuditMaxLen})
	if err != nil {
		return nil, err
	}
	return &Store[E]{fence: f, effects: cfg.Effects}, nil
}

// Fence returns the store's fence, for fenced work beside the feed's commits.
func (s *Store[E]) Fence() *Fence { return s.fence }

// tableName quotes a table name given as "table" or "schema.table".
func tableName(name, def string) (string, error) {
	if name == "" {
		name = def
	}
	parts := strings.Split(name, ".")
	if len(parts) > 2 {
		return "", configErr("table name %q: want table or schema.table", name)
	}
	for _, p := range parts {
		if p == "" {
			return "", configErr("table name %q has an empty part", name)
		}
	}
	return pgx.Identifier(parts).Sanitize(), nil
}

func configErr(format string, a ...any) error {
	return fmt.Errorf("%w: pgstore: "+format, append([]any{listener.ErrInvalidConfig}, a...)...)
}

type nopRecorder struct{}

func (nopRecorder) Invoke(listener.Op) func(listener.Result) { return func(listener.Result) {} }

// Setup creates the tables and the cursor's row (Fence.Setup).
func (s *Store[E]) Setup(ctx context.Context) error { return s.fence.Setup(ctx) }

// SetupTx runs f in a transaction that holds fenceline's setup advisory lock, so that
// setups of several nodes (of the store and of their effects' tables) run one at a time.
func SetupTx(ctx context.Context, pool *pgxpool.Pool, f func(pgx.Tx) error) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("pgstore: setup: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, setupLock); err != nil {
		return fmt.Errorf("pgstore: setup: %w", err)
	}
	if err := f(tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("pgstore: setup: %w", err)
	}
	return nil
}

// setupLock is the advisory lock key of Setup ("fncl" in ASCII).
const setupLock = 0x666e636c

// ErrNotSetUp is wrapped by the errors of Load, Commit and Do when the fence's row does
// not exist: Setup was not run. Nothing was changed.
var ErrNotSetUp = errors.New("pgstore: no cursor row (run Setup)")

// Load reads the cursor and the highest accepted token (Fence.Load).
func (s *Store[E]) Load(ctx context.Context) (cursor, token int64, err error) {
	return s.fence.Load(ctx)
}

// Commit runs the commit's transaction once (never retried). A rejection returns a
// *listener.RejectedError wrapping ErrStaleToken or ErrCursorConflict, or ErrInvalidBatch
// when PostgreSQL refused the effects; an unknown outcome an error wrapping
// listener.ErrOutcomeUnknown and the cause. An invalid batch (listener.ValidateBatch)
// returns ErrInvalidBatch and a done ctx its error, both without sending or recording
// anything.
func (s *Store[E]) Commit(ctx context.Context, token, from int64, batch []E) error {
	if err := listener.ValidateBatch(from, batch); err != nil {
		return err
	}
	op := listener.Op{Kind: listener.OpCommit, Token: token, From: from, To: batch[len(batch)-1].Position(), Events: len(batch)}
	var work func(context.Context, pgx.Tx) error
	if s.effects != nil {
		work = func(ctx context.Context, tx pgx.Tx) error { return s.effects(ctx, tx, batch) }
	}
	return s.fence.run(ctx, op, true, work)
}
