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

// FenceConfig configures a Fence.
type FenceConfig struct {
	// Name is the fence's row in the cursor table: the election's name. Default
	// listener.DefaultName.
	Name string
	// Node is this instance's id, written into the audit and used in operation ids.
	// Required.
	Node string
	// Recorder is told about every request. Default: none.
	Recorder listener.Recorder
	// Metrics is told the outcome of every fenced write. Default listener.NopMetrics.
	Metrics listener.FenceMetrics
	// Timeout bounds each request, the whole transaction (on top of the caller's
	// context). Default 2s. A write that times out has an unknown outcome.
	Timeout time.Duration
	// CursorTable and AuditTable name the tables, optionally schema-qualified
	// ("ingest.cursor"). Defaults "fenceline_cursor" and "fenceline_audit".
	CursorTable, AuditTable string
	// AuditMaxLen keeps about the last AuditMaxLen audit rows of this name. Default
	// DefaultAuditMaxLen; AuditUnbounded keeps every row (the chaos harness does).
	AuditMaxLen int64
}

// Fence runs your SQL fenced by a token: Do runs it in one transaction after the fence
// row's UPDATE … WHERE token <= $token has passed (see the package doc). Store's commits
// are fenced writes that also move the cursor: one row per name serves both. It is safe
// for concurrent use.
type Fence struct {
	pool       *pgxpool.Pool
	name       string
	node       string
	rec        listener.Recorder
	metrics    listener.FenceMetrics
	timeout    time.Duration
	maxLen     int64 // 0: unbounded
	ids        *listener.OpIDs
	cursorT    string // quoted identifiers
	auditT     string
	fence      string // a commit's UPDATE: $1 name, $2 token, $3 from, $4 to
	fenceToken string // a write's UPDATE: $1 name, $2 token
}

// NewFence returns a fence on pool. It does not contact the database; call Setup once
// to create the tables.
func NewFence(pool *pgxpool.Pool, cfg FenceConfig) (*Fence, error) {
	if pool == nil {
		return nil, configErr("nil pool")
	}
	if cfg.Node == "" {
		return nil, configErr("Node is required")
	}
	if cfg.Name == "" {
		cfg.Name = listener.DefaultName
	}
	if cfg.Timeout < 0 {
		return nil, configErr("Timeout %v must be >= 0", cfg.Timeout)
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
		return nil, configErr("AuditMaxLen %d must be > 0 or AuditUnbounded", cfg.AuditMaxLen)
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
	if cfg.Metrics == nil {
		cfg.Metrics = listener.NopMetrics{}
	}
	ids, err := listener.NewOpIDs(cfg.Node)
	if err != nil {
		return nil, err
	}
	return &Fence{pool: pool, name: cfg.Name, node: cfg.Node, rec: cfg.Recorder, metrics: cfg.Metrics,
		timeout: cfg.Timeout, maxLen: cfg.AuditMaxLen, ids: ids, cursorT: cursorT, auditT: auditT,
		fence:      `UPDATE ` + cursorT + ` SET cursor = $4, token = $2 WHERE name = $1 AND token <= $2 AND cursor = $3`,
		fenceToken: `UPDATE ` + cursorT + ` SET token = $2 WHERE name = $1 AND token <= $2`}, nil
}

// Load reads the cursor (0 if no commit moved it) and the highest accepted token.
func (f *Fence) Load(ctx context.Context) (cursor, token int64, err error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	op := listener.Op{ID: f.ids.Next(), Kind: listener.OpLoad}
	done := f.rec.Invoke(op)
	rctx, cancel := context.WithTimeout(ctx, f.timeout)
	err = f.pool.QueryRow(rctx, `SELECT cursor, token FROM `+f.cursorT+` WHERE name = $1`, f.name).Scan(&cursor, &token)
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

// Do runs work fenced by token, once (never retried): in one transaction at READ
// COMMITTED, after the fence row's UPDATE has passed and while it holds the row's lock,
// so no other fenced write of the name runs meanwhile. work must use only tx and must not
// commit or roll it back. Do blocks until the transaction ends.
//
// A rejection returns a *listener.RejectedError wrapping listener.ErrStaleToken
// (work not run), or listener.ErrInvalidBatch when PostgreSQL refused work's SQL (a
// constraint, say: rolled back, audited as bad-argument). Any other error of work
// (yours, a serialization failure, a lost connection) rolls back and is returned
// wrapped with listener.ErrOutcomeUnknown, as is an error of the commit itself: the
// audit row of the operation id in the error (and the Recorder's Op) says whether it
// was applied. A done ctx returns its error, nothing sent or recorded.
func (f *Fence) Do(ctx context.Context, token int64, work func(ctx context.Context, tx pgx.Tx) error) error {
	return f.run(ctx, listener.Op{Kind: listener.OpWrite, Token: token}, false, work)
}

// run runs op's transaction, the cursor moving from op.From to op.To if moves.
func (f *Fence) run(ctx context.Context, op listener.Op, moves bool, work func(context.Context, pgx.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	op.ID = f.ids.Next()
	done := f.rec.Invoke(op)
	rctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	rej, err := f.tx(rctx, op, moves, work)
	switch {
	case err == nil && rej == nil:
		done(listener.Result{Outcome: listener.OutcomeOK})
		f.metrics.ObserveFenced(listener.OutcomeOK)
		return nil
	case err == nil:
		done(listener.Result{Outcome: rej.Outcome()})
		f.metrics.ObserveFenced(rej.Outcome())
		return rej
	}
	done(listener.Result{Outcome: listener.OutcomeUnknown, Err: err})
	f.metrics.ObserveFenced(listener.OutcomeUnknown)
	return fmt.Errorf("pgstore: %s %s: %w: %w", op.Kind, op.ID, listener.ErrOutcomeUnknown, err)
}

// tx runs the transaction. It returns a rejection, or an error when the outcome is
// unknown, or neither when the work was applied.
func (f *Fence) tx(ctx context.Context, op listener.Op, moves bool, work func(context.Context, pgx.Tx) error) (*listener.RejectedError, error) {
	tx, err := f.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }() // a no-op after Commit
	var tag pgconn.CommandTag
	if moves {
		tag, err = tx.Exec(ctx, f.fence, f.name, op.Token, op.From, op.To)
	} else {
		tag, err = tx.Exec(ctx, f.fenceToken, f.name, op.Token)
	}
	if err != nil {
		return nil, err
	}
	if tag.RowsAffected() == 0 {
		rej, err := f.reject(ctx, tx, op)
		if err != nil {
			return nil, err
		}
		// Nothing but the audit row is in the transaction: whether or not it commits,
		// the work was not applied. But every answered attempt is in the audit: a
		// rejection whose audit row did not commit (the deadline passed while the node
		// was paused mid-transaction) is answered as an unknown outcome, which the audit
		// then resolves as never applied.
		if err := tx.Commit(ctx); err != nil {
			return nil, fmt.Errorf("%s, but its audit row was not committed: %w", rej.Outcome(), err)
		}
		return rej, nil
	}
	if work != nil {
		if err := work(ctx, tx); err != nil {
			return f.refused(ctx, tx, op, err)
		}
	}
	var seq int64
	if err := tx.QueryRow(ctx, `INSERT INTO `+f.auditT+` (name, op, node, token, from_cursor, to_cursor, result)
VALUES ($1, $2, $3, $4, $5, $6, 'ok') RETURNING seq`, f.name, op.ID, f.node, op.Token, op.From, op.To).Scan(&seq); err != nil {
		return nil, err
	}
	if f.maxLen > 0 && seq%trimEvery == 0 {
		// Under the fence row's lock: trims never run concurrently.
		if _, err := tx.Exec(ctx, `DELETE FROM `+f.auditT+` WHERE name = $1 AND seq <= $2`, f.name, seq-f.maxLen); err != nil {
			return nil, err
		}
	}
	return nil, tx.Commit(ctx)
}

// reject reads the row the fence did not update, audits the rejection and returns it.
func (f *Fence) reject(ctx context.Context, tx pgx.Tx, op listener.Op) (*listener.RejectedError, error) {
	rej := &listener.RejectedError{Op: op.ID, Token: op.Token, From: op.From, To: op.To}
	err := tx.QueryRow(ctx, `SELECT cursor, token FROM `+f.cursorT+` WHERE name = $1`, f.name).Scan(&rej.StoredCursor, &rej.StoredToken)
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
	_, err = tx.Exec(ctx, `INSERT INTO `+f.auditT+` (name, op, node, token, from_cursor, to_cursor, result)
VALUES ($1, $2, $3, $4, $5, $6, $7)`, f.name, op.ID, f.node, op.Token, op.From, op.To, string(rej.Outcome()))
	return rej, err
}

// refused handles an error of the work: the transaction is rolled back. PostgreSQL's
// own refusal of the work is a rejection, audited on its own; a serialization failure or
// deadlock (worth a retry), or anything else (the connection), leaves the outcome for the
// caller to find out.
func (f *Fence) refused(ctx context.Context, tx pgx.Tx, op listener.Op, cause error) (*listener.RejectedError, error) {
	var pgErr *pgconn.PgError
	if !errors.As(cause, &pgErr) || strings.HasPrefix(pgErr.Code, "40") || strings.HasPrefix(pgErr.Code, "57") {
		return nil, fmt.Errorf("effects: %w", cause)
	}
	if err := tx.Rollback(ctx); err != nil {
		return nil, fmt.Errorf("effects: %w; rollback: %w", cause, err)
	}
	rej := &listener.RejectedError{Reason: fmt.Errorf("%w: effects: %w", listener.ErrInvalidBatch, cause),
		Op: op.ID, Token: op.Token, From: op.From, To: op.To}
	// The attempt is audited in a transaction of its own, best effort: the work was
	// not applied either way.
	_ = f.pool.QueryRow(ctx, `INSERT INTO `+f.auditT+` (name, op, node, token, from_cursor, to_cursor, result, error)
VALUES ($1, $2, $3, $4, $5, $6, 'bad-argument', $7) RETURNING 0`, f.name, op.ID, f.node, op.Token, op.From, op.To,
		cause.Error()).Scan(new(int))
	_ = f.pool.QueryRow(ctx, `SELECT cursor, token FROM `+f.cursorT+` WHERE name = $1`, f.name).Scan(&rej.StoredCursor, &rej.StoredToken)
	return rej, nil
}

// Setup creates the tables if they do not exist, and the fence's row (cursor 0, token
// 0) if it does not exist. It is idempotent and safe to run from several nodes at once
// (it holds a transaction-scoped advisory lock: concurrent CREATE TABLE IF NOT EXISTS
// can otherwise fail); run it before the first write.
func (f *Fence) Setup(ctx context.Context) error {
	return SetupTx(ctx, f.pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `
CREATE TABLE IF NOT EXISTS `+f.cursorT+` (
  name   text PRIMARY KEY,
  cursor bigint NOT NULL DEFAULT 0,
  token  bigint NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS `+f.auditT+` (
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
			_, err = tx.Exec(ctx, `INSERT INTO `+f.cursorT+` (name) VALUES ($1) ON CONFLICT (name) DO NOTHING`, f.name)
		}
		if err != nil {
			return fmt.Errorf("pgstore: setup: %w", err)
		}
		return nil
	})
}
