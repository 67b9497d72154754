package pgstore_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fenceline/fenceline/listener"
	"github.com/fenceline/fenceline/listener/pgstore"
	"github.com/fenceline/fenceline/listener/storetest"
)

// Refund is a user's event: an order refunded, Seq-th in the payment provider's feed.
type Refund struct {
	Seq   int64
	Order string
	Cents int64
}

// Position is the refund's place in the feed: listener.Event.
func (r Refund) Position() int64 { return r.Seq }

// ExampleStore records refunds in the service's own PostgreSQL database (pgURL: here a
// server that the package's tests start, in a service its own database's URL). Each batch's
// rows are inserted on the transaction that moves the cursor, after the fence: a writer
// whose token is stale inserts nothing.
func ExampleStore() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgURL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `CREATE TABLE refunds (order_id text PRIMARY KEY, cents bigint NOT NULL)`); err != nil {
		fmt.Println(err)
		return
	}
	store, err := pgstore.NewStore(pool, pgstore.Config[Refund]{
		Name: "refunds", // the election's name: the cursor's row
		Node: "n1",
		Effects: func(ctx context.Context, tx pgx.Tx, batch []Refund) error {
			for _, r := range batch {
				if _, err := tx.Exec(ctx, `INSERT INTO refunds VALUES ($1, $2)`, r.Order, r.Cents); err != nil {
					return err
				}
			}
			return nil
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := store.Setup(ctx); err != nil { // the cursor and audit tables
		fmt.Println(err)
		return
	}
	feed := storetest.Feed[Refund]{{1, "A-17", 1250}, {2, "B-3", 499}, {3, "C-9", 10000}}
	l, err := listener.New(listener.Config[Refund]{Store: store, Source: feed, BatchSize: 2})
	if err != nil {
		fmt.Println(err)
		return
	}

	// A leader's term gives Run a context, cancelled when the term ends, and the term's
	// fencing token (election.Term.Token). This term ends once the feed is ingested.
	term, end := storetest.Until(ctx, store, 3)
	if err := l.Run(term, 7); err != nil {
		fmt.Println(err)
	}
	end()

	var n, cents int64
	_ = pool.QueryRow(ctx, `SELECT count(*), sum(cents) FROM refunds`).Scan(&n, &cents)
	fmt.Println(n, cents)
	// A paused leader of an older term wakes up and writes: refused, nothing inserted.
	err = store.Commit(ctx, 6, 3, []Refund{{4, "D-1", 5}})
	fmt.Println(errors.Is(err, listener.ErrStaleToken))
	_ = pool.QueryRow(ctx, `SELECT count(*), sum(cents) FROM refunds`).Scan(&n, &cents)
	fmt.Println(n, cents)
	// Output:
	// 3 11749
	// true
	// 3 11749
}

// ExampleFence runs a job's SQL fenced by its term's token (election.Term.Token), in the
// service's own PostgreSQL database (pgURL, as in ExampleStore): the function runs in
// the transaction after the fence row's UPDATE … WHERE token <= $token, and a writer
// whose token is stale runs nothing.
func ExampleFence() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgURL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close()
	fence, err := pgstore.NewFence(pool, pgstore.FenceConfig{Name: "invoices", Node: "n1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := fence.Setup(ctx); err != nil { // the fence and audit tables
		fmt.Println(err)
		return
	}
	issue := func(token int64, invoice string) error {
		return fence.Do(ctx, token, func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO issued VALUES ($1)`, invoice)
			return err
		})
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE issued (invoice text PRIMARY KEY)`); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(issue(7, "2026-12"))
	// A paused leader of an older term wakes up: refused, nothing inserted.
	fmt.Println(errors.Is(issue(6, "2026-12-again"), listener.ErrStaleToken))
	var n int
	_ = pool.QueryRow(ctx, `SELECT count(*) FROM issued`).Scan(&n)
	fmt.Println(n)
	// Output:
	// <nil>
	// true
	// 1
}
