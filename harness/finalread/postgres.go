package finalread

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fenceline/fenceline/history"
)

// Tables of a PostgreSQL store, from listener/pgstore's and workloads/ledger's package
// docs (not their code: the judge reads the evidence itself).
const (
	pgCursor   = "fenceline_cursor"
	pgAudit    = "fenceline_audit"
	pgBalances = "fenceline_balances"
	pgSink     = "fenceline_sink"
)

// ReadPostgres reads the final state of election name's store in PostgreSQL at url —
// the cursor row, the balances, the sink in its order and the audit in its order — in
// one REPEATABLE READ, read-only transaction, so the parts are one snapshot. The token
// counter lives in Redis: TokenCounter is left 0 for the caller. A missing cursor row
// reads as nothing committed; an audit row whose result is not one the store writes, or
// whose error is set for any result but bad-argument (or missing for it), is ErrBadStore.
func ReadPostgres(ctx context.Context, url, name string) (*history.Store, error) {
	if name == "" {
		name = defaultElection
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("final read: %w", err)
	}
	cfg.ConnectTimeout = 10 * time.Second
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("final read: %w", err)
	}
	defer c.Close(context.WithoutCancel(ctx))
	tx, err := c.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("final read: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()

	st := &history.Store{Balances: map[string]int64{}, Sink: []int64{}, Audit: []history.AuditEntry{}}
	err = tx.QueryRow(ctx, `SELECT cursor, token FROM `+pgCursor+` WHERE name = $1`, name).Scan(&st.Cursor, &st.MaxToken)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("final read: %s: %w", pgCursor, err)
	}
	var acct string
	var n int64
	rows, _ := tx.Query(ctx, `SELECT account, balance FROM `+pgBalances+` WHERE name = $1`, name)
	if _, err := pgx.ForEachRow(rows, []any{&acct, &n}, func() error { st.Balances[acct] = n; return nil }); err != nil {
		return nil, fmt.Errorf("final read: %s: %w", pgBalances, err)
	}
	rows, _ = tx.Query(ctx, `SELECT id FROM `+pgSink+` WHERE name = $1 ORDER BY seq`, name)
	if _, err := pgx.ForEachRow(rows, []any{&n}, func() error { st.Sink = append(st.Sink, n); return nil }); err != nil {
		return nil, fmt.Errorf("final read: %s: %w", pgSink, err)
	}
	var a history.AuditEntry
	var seq int64
	var msg *string
	rows, _ = tx.Query(ctx, `SELECT seq, op, node, token, from_cursor, to_cursor, result, error,
  (extract(epoch FROM time) * 1000000)::bigint FROM `+pgAudit+` WHERE name = $1 ORDER BY seq`, name)
	_, err = pgx.ForEachRow(rows, []any{&seq, &a.Op, &a.Node, &a.Token, &a.From, &a.To, &a.Result, &msg, &a.ServerTime}, func() error {
		if !auditResults[a.Result] {
			return fmt.Errorf("%w: %s seq %d: result %q", ErrBadStore, pgAudit, seq, a.Result)
		}
		if (msg != nil) != (a.Result == auditBadArgument) {
			return fmt.Errorf("%w: %s seq %d: result %s with error %v", ErrBadStore, pgAudit, seq, a.Result, msg != nil)
		}
		a.StreamID = strconv.FormatInt(seq, 10)
		st.Audit = append(st.Audit, a)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("final read: %s: %w", pgAudit, err)
	}
	return st, nil
}
