package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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

// Defaults of Config.
const (
	DefaultTimeout     = 2 * time.Second
	DefaultCursorTable = "fenceline_cursor"
	DefaultAuditTable  = "fenceline_audit"
	// DefaultAuditMaxLen keeps about the last 100,000 attempts: about 15 MB of table
	// and index (README, "Audit retention").
	DefaultAuditMaxLen = 100_000
	// AuditUnbounded, as Config.AuditMaxLen, never deletes an audit row.
	AuditUnbounded = -1
	// trimEvery is how many audit rows an accepted commit lets pass between trims.
	trimEvery = 100
)

// Store is a listener.Store in PostgreSQL (see the package doc). It is safe for
// concurrent use.
type Store[E listener.Event] struct {
	pool    *pgxpool.Pool
	name    string
	node    string
	effects func(context.Context, pgx.Tx, []E) error
	rec     listener.Recorder
	timeout time.Duration
	maxLen  int64 // 0: unbounded
	ids     *listener.OpIDs
	cursorT string // quoted identifiers
	auditT  string
	fence   string // the fence's UPDATE
}

// NewStore returns a store on pool. It does not contact the database; call Setup once
// to create the tables.
func NewStore[E listener.Event](pool *pgxpool.Pool, cfg Config[E]) (*Store[E], error) {
	if pool == nil {
		return nil, configErr("nil pool")
	}
	if cfg.Node == "" {
		return nil, configErr("Config.Node is required")
	}
	if cfg.Name == "" {
		cfg.Name = listener.DefaultName
	}
	if cfg.Timeout < 0 {
		return nil, configErr("Config.Timeout %v must be >= 0", cfg.Timeout)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	switch {
	case cfg.AuditMaxLen == 0:
		cfg.AuditMaxLen = DefaultAuditMaxLen
	case cfg.AuditMaxLen == AuditUnbounded:
		cfg.AuditMaxLen = 0
	case cfg.AuditMaxLen < 0:
		return nil, configErr("Config.AuditMaxLen %d must be > 0 or AuditUnbounded", cfg.AuditMaxLen)
	}
	cursorT, err := tableName(cfg.CursorTable, DefaultCursorTable)
	if err != nil {
		return nil, err
	}
	auditT, err := tableName(cfg.AuditTable, DefaultAuditTable)
	if err != nil {
		return nil, err
	}
	if cfg.Recorder == nil {
		cfg.Recorder = nopRecorder{}
	}
	ids, err := listener.NewOpIDs(cfg.Node)
	if err != nil {
		return nil, err
	}
	return &Store[E]{pool: pool, name: cfg.Name, node: cfg.Node, effects: cfg.Effects, rec: cfg.Recorder,
		timeout: cfg.Timeout, maxLen: cfg.AuditMaxLen, ids: ids, cursorT: cursorT, auditT: auditT,
		fence: fenceSQL(cursorT)}, nil
}

// fenceSQL is the fence: $1 name, $2 token, $3 from, $4 to.
func fenceSQL(cursorT string) string {
	return `UPDATE ` + cursorT + ` SET cursor = $4, token = $2 WHERE name = $1 AND token <= $2 AND cursor = $3`
}

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

// Setup creates the tables if they do not exist, and the cursor's row (cursor 0, token
// 0) if it does not exist. It is idempotent and safe to run from several nodes at once
// (it holds a transaction-scoped advisory lock: concurrent CREATE TABLE IF NOT EXISTS
// can otherwise fail); run it before the first commit.
func (s *Store[E]) Setup(ctx context.Context) error {
	return SetupTx(ctx, s.pool, func(tx pgx.Tx) error { return s.setup(ctx, tx) })
}

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

func (s *Store[E]) setup(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `
CREATE TABLE IF NOT EXISTS `+s.cursorT+` (
  name   text PRIMARY KEY,
  cursor bigint NOT NULL DEFAULT 0,
  token  bigint NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS `+s.auditT+` (
  seq         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name        text NOT NULL,
  op          text NOT NULL,
  node        text NOT NULL,
  token       bigint NOT NULL,
  from_cursor bigint NOT NULL,
  to_cursor   bigint NOT NULL,
  result      text NOT NULL,
  error       text,
  time        timestamptz NOT NULL DEFAULT clock_timestamp()
)`)
	if err == nil {
		_, err = tx.Exec(ctx, `INSERT INTO `+s.cursorT+` (name) VALUES ($1) ON CONFLICT (name) DO NOTHING`, s.name)
	}
	if err != nil {
		return fmt.Errorf("pgstore: setup: %w", err)
	}
	return nil
}

// ErrNotSetUp is wrapped by the errors of Load and Commit when the cursor's row does not
// exist: Setup was not run. Nothing was changed.
var ErrNotSetUp = errors.New("pgstore: no cursor row (run Setup)")

// Load reads the cursor and the highest accepted token.
func (s *Store[E]) Load(ctx context.Context) (cursor, token int64, err error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	op := listener.Op{ID: s.ids.Next(), Kind: listener.OpLoad}
	done := s.rec.Invoke(op)
	rctx, cancel := context.WithTimeout(ctx, s.timeout)
	err = s.pool.QueryRow(rctx, `SELECT cursor, token FROM `+s.cursorT+` WHERE name = $1`, s.name).Scan(&cursor, &token)
	cancel()
	if errors.Is(err, pgx.ErrNoRows) {
		err = ErrNotSetUp
	}
	if err != nil {
		done(listener.Result{Outcome: listener.OutcomeUnknown, Err: err})
		return 0, 0, fmt.Errorf("pgstore: load %s: %w", op.ID, err)
	}
	done(listener.Result{Outcome: listener.OutcomeOK, Cursor: cursor, Token: token})
	return cursor, token, nil
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
	if err := ctx.Err(); err != nil {
		return err
	}
	to := batch[len(batch)-1].Position()
	op := listener.Op{ID: s.ids.Next(), Kind: listener.OpCommit, Token: token, From: from, To: to, Events: len(batch)}
	done := s.rec.Invoke(op)
	rctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	rej, err := s.commit(rctx, op, batch)
	switch {
	case err == nil && rej == nil:
		done(listener.Result{Outcome: listener.OutcomeOK})
		return nil
	case err == nil:
		done(listener.Result{Outcome: rej.Outcome()})
		return rej
	}
	done(listener.Result{Outcome: listener.OutcomeUnknown, Err: err})
	return fmt.Errorf("pgstore: commit %s: %w: %w", op.ID, listener.ErrOutcomeUnknown, err)
}

// commit runs the transaction. It returns a rejection, or an error when the outcome is
// unknown, or neither when the batch was applied.
func (s *Store[E]) commit(ctx context.Context, op listener.Op, batch []E) (*listener.RejectedError, error) {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }() // a no-op after Commit
	tag, err := tx.Exec(ctx, s.fence, s.name, op.Token, op.From, op.To)
	if err != nil {
		return nil, err
	}
	if tag.RowsAffected() == 0 {
		rej, err := s.reject(ctx, tx, op)
		if err != nil {
			return nil, err
		}
		// Nothing but the audit row is in the transaction: whether or not it commits,
		// the batch was not applied. But every answered attempt is in the audit: a
		// rejection whose audit row did not commit (the deadline passed while the node
		// was paused mid-transaction) is answered as an unknown outcome, which the audit
		// then resolves as never applied.
		if err := tx.Commit(ctx); err != nil {
			return nil, fmt.Errorf("%s, but its audit row was not committed: %w", rej.Outcome(), err)
		}
		return rej, nil
	}
	if s.effects != nil {
		if err := s.effects(ctx, tx, batch); err != nil {
			return s.refused(ctx, tx, op, err)
		}
	}
	var seq int64
	if err := tx.QueryRow(ctx, `INSERT INTO `+s.auditT+` (name, op, node, token, from_cursor, to_cursor, result)
VALUES ($1, $2, $3, $4, $5, $6, 'ok') RETURNING seq`, s.name, op.ID, s.node, op.Token, op.From, op.To).Scan(&seq); err != nil {
		return nil, err
	}
	if s.maxLen > 0 && seq%trimEvery == 0 {
		// Under the cursor's row lock: trims never run concurrently.
		if _, err := tx.Exec(ctx, `DELETE FROM `+s.auditT+` WHERE name = $1 AND seq <= $2`, s.name, seq-s.maxLen); err != nil {
			return nil, err
		}
	}
	return nil, tx.Commit(ctx)
}

// reject reads the row the fence did not update, audits the rejection and returns it.
func (s *Store[E]) reject(ctx context.Context, tx pgx.Tx, op listener.Op) (*listener.RejectedError, error) {
	rej := &listener.RejectedError{Op: op.ID, Token: op.Token, From: op.From, To: op.To}
	err := tx.QueryRow(ctx, `SELECT cursor, token FROM `+s.cursorT+` WHERE name = $1`, s.name).Scan(&rej.StoredCursor, &rej.StoredToken)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotSetUp
	}
	if err != nil {
		return nil, err
	}
	rej.Reason = listener.ErrCursorConflict
	if rej.StoredToken > op.Token {
		rej.Reason = listener.ErrStaleToken
	}
	_, err = tx.Exec(ctx, `INSERT INTO `+s.auditT+` (name, op, node, token, from_cursor, to_cursor, result)
VALUES ($1, $2, $3, $4, $5, $6, $7)`, s.name, op.ID, s.node, op.Token, op.From, op.To, string(rej.Outcome()))
	return rej, err
}

// refused handles an error of the effects: the transaction is rolled back. PostgreSQL's
// own refusal of the batch is a rejection, audited on its own; a serialization failure or
// deadlock (worth a retry), or anything else (the connection), leaves the outcome for the
// caller to find out.
func (s *Store[E]) refused(ctx context.Context, tx pgx.Tx, op listener.Op, cause error) (*listener.RejectedError, error) {
	var pgErr *pgconn.PgError
	if !errors.As(cause, &pgErr) || strings.HasPrefix(pgErr.Code, "40") || strings.HasPrefix(pgErr.Code, "57") {
		return nil, fmt.Errorf("effects: %w", cause)
	}
	if err := tx.Rollback(ctx); err != nil {
		return nil, fmt.Errorf("effects: %w; rollback: %w", cause, err)
	}
	rej := &listener.RejectedError{Reason: fmt.Errorf("%w: effects: %w", listener.ErrInvalidBatch, cause),
		Op: op.ID, Token: op.Token, From: op.From, To: op.To}
	// The attempt is audited in a transaction of its own, best effort: the batch was
	// not applied either way.
	_ = s.pool.QueryRow(ctx, `INSERT INTO `+s.auditT+` (name, op, node, token, from_cursor, to_cursor, result, error)
VALUES ($1, $2, $3, $4, $5, $6, 'bad-argument', $7) RETURNING 0`, s.name, op.ID, s.node, op.Token, op.From, op.To,
		cause.Error()).Scan(new(int))
	_ = s.pool.QueryRow(ctx, `SELECT cursor, token FROM `+s.cursorT+` WHERE name = $1`, s.name).Scan(&rej.StoredCursor, &rej.StoredToken)
	return rej, nil
}
