package pgstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fenceline/fenceline/listener"
	"github.com/fenceline/fenceline/listener/pgstore"
	"github.com/fenceline/fenceline/listener/storetest"
)

var backendSeq atomic.Int64

func newPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), pgURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// contractEffects returns storetest.Event's effects as SQL on the tables credits and
// applied (a suffix keeps backends apart).
func contractEffects(credits, applied string) func(context.Context, pgx.Tx, []storetest.Event) error {
	return func(ctx context.Context, tx pgx.Tx, batch []storetest.Event) error {
		for _, e := range batch {
			if _, err := tx.Exec(ctx, `INSERT INTO `+credits+` (account, amount) VALUES ($1, $2)
ON CONFLICT (account) DO UPDATE SET amount = `+credits+`.amount + excluded.amount`, e.Account, e.Amount); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO `+applied+` (pos) VALUES ($1)`, e.Pos); err != nil {
				return err
			}
		}
		return nil
	}
}

// TestStoreContract runs the store contract against Store on a real PostgreSQL, and the
// work contract against Fence.Do.
func TestStoreContract(t *testing.T) {
	pool := newPool(t)
	ctx := context.Background()
	storetest.Run(t, func(t *testing.T) storetest.Backend {
		n := backendSeq.Add(1)
		name := fmt.Sprintf("contract%d", n)
		credits, applied := fmt.Sprintf("credits_%d", n), fmt.Sprintf("applied_%d", n)
		if _, err := pool.Exec(ctx, `CREATE TABLE `+credits+` (account text PRIMARY KEY, amount bigint NOT NULL);
CREATE TABLE `+applied+` (seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, pos bigint NOT NULL)`); err != nil {
			t.Fatal(err)
		}
		return storetest.Backend{
			NewStore: func(t *testing.T, node string, timeout time.Duration, rec listener.Recorder) listener.Store[storetest.Event] {
				s, err := pgstore.NewStore(pool, pgstore.Config[storetest.Event]{Name: name, Node: node,
					Timeout: timeout, Recorder: rec, Effects: contractEffects(credits, applied)})
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Setup(ctx); err != nil {
					t.Fatal(err)
				}
				return s
			},
			State: func(t *testing.T) storetest.State {
				return pgState(t, pool, name, credits, applied)
			},
			Stall: func(t *testing.T) func() {
				// Another transaction holds the cursor's row: the fence's UPDATE waits.
				tx, err := pool.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := tx.Exec(ctx, `SELECT 1 FROM fenceline_cursor WHERE name = $1 FOR UPDATE`, name); err != nil {
					t.Fatal(err)
				}
				return func() {
					if err := tx.Commit(ctx); err != nil {
						t.Fatal(err)
					}
				}
			},
			NewWork: func(t *testing.T, node string, timeout time.Duration, rec listener.Recorder) storetest.Work {
				f, err := pgstore.NewFence(pool, pgstore.FenceConfig{Name: name, Node: node, Timeout: timeout, Recorder: rec})
				if err != nil {
					t.Fatal(err)
				}
				if err := f.Setup(ctx); err != nil {
					t.Fatal(err)
				}
				return func(ctx context.Context, token int64, account string, amount int64) error {
					return f.Do(ctx, token, func(ctx context.Context, tx pgx.Tx) error {
						_, err := tx.Exec(ctx, `INSERT INTO `+credits+` (account, amount) VALUES ($1, $2)
ON CONFLICT (account) DO UPDATE SET amount = `+credits+`.amount + excluded.amount`, account, amount)
						return err
					})
				}
			},
		}
	})
}

func pgState(t *testing.T, pool *pgxpool.Pool, name, credits, applied string) storetest.State {
	t.Helper()
	ctx := context.Background()
	st := storetest.State{Credits: map[string]int64{}}
	err := pool.QueryRow(ctx, `SELECT cursor, token FROM fenceline_cursor WHERE name = $1`, name).Scan(&st.Cursor, &st.Token)
	if err != nil && err != pgx.ErrNoRows {
		t.Fatal(err)
	}
	var acct string
	var amount int64
	rows, _ := pool.Query(ctx, `SELECT account, amount FROM `+credits)
	if _, err := pgx.ForEachRow(rows, []any{&acct, &amount}, func() error { st.Credits[acct] = amount; return nil }); err != nil {
		t.Fatal(err)
	}
	var pos int64
	rows, _ = pool.Query(ctx, `SELECT pos FROM `+applied+` ORDER BY seq`)
	if _, err := pgx.ForEachRow(rows, []any{&pos}, func() error { st.Applied = append(st.Applied, pos); return nil }); err != nil {
		t.Fatal(err)
	}
	var a storetest.AuditEntry
	rows, _ = pool.Query(ctx, `SELECT op, node, token, from_cursor, to_cursor, result FROM fenceline_audit WHERE name = $1 ORDER BY seq`, name)
	if _, err := pgx.ForEachRow(rows, []any{&a.Op, &a.Node, &a.Token, &a.From, &a.To, &a.Result}, func() error {
		st.Audit = append(st.Audit, a)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return st
}
