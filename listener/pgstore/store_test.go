package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/fenceline/fenceline/listener"
	"github.com/fenceline/fenceline/listener/pgstore"
	"github.com/fenceline/fenceline/listener/storetest"
)

func TestNewStoreValidates(t *testing.T) {
	pool := newPool(t)
	type cfg = pgstore.Config[storetest.Event]
	for name, c := range map[string]cfg{
		"no node":          {},
		"negative timeout": {Node: "n1", Timeout: -1},
		"audit max -2":     {Node: "n1", AuditMaxLen: -2},
		"three-part table": {Node: "n1", CursorTable: "a.b.c"},
		"empty schema":     {Node: "n1", AuditTable: ".audit"},
	} {
		if _, err := pgstore.NewStore(pool, c); !errors.Is(err, listener.ErrInvalidConfig) {
			t.Errorf("%s: %v, want ErrInvalidConfig", name, err)
		}
	}
	if _, err := pgstore.NewStore(nil, cfg{Node: "n1"}); !errors.Is(err, listener.ErrInvalidConfig) {
		t.Errorf("nil pool: %v", err)
	}
	// Before Setup: a clear error, not a panic, nothing changed.
	s, err := pgstore.NewStore(pool, cfg{Node: "n1", Name: "unset", CursorTable: "unset_cursor", AuditTable: "unset_audit"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Load(context.Background()); err == nil {
		t.Error("Load before Setup succeeded")
	}
}

// TestEffectsRefused: effects that PostgreSQL refuses roll the whole commit back; the
// commit is rejected as invalid, audited as bad-argument, and the cursor stays.
func TestEffectsRefused(t *testing.T) {
	pool := newPool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE refused (pos bigint PRIMARY KEY CHECK (pos <> 3))`); err != nil {
		t.Fatal(err)
	}
	s, err := pgstore.NewStore(pool, pgstore.Config[storetest.Event]{Name: "refused", Node: "n1",
		Effects: func(ctx context.Context, tx pgx.Tx, batch []storetest.Event) error {
			for _, e := range batch {
				if _, err := tx.Exec(ctx, `INSERT INTO refused VALUES ($1)`, e.Pos); err != nil {
					return err
				}
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, 1, 0, storetest.Events(0, 2)); err != nil {
		t.Fatal(err)
	}
	err = s.Commit(ctx, 1, 2, storetest.Events(2, 4)) // 3 breaks the CHECK
	var rej *listener.RejectedError
	if !errors.Is(err, listener.ErrInvalidBatch) || !errors.As(err, &rej) || rej.StoredCursor != 2 {
		t.Fatalf("refused effects: %v, want a RejectedError with ErrInvalidBatch at cursor 2", err)
	}
	var rows, cursor int64
	var last string
	_ = pool.QueryRow(ctx, `SELECT count(*) FROM refused`).Scan(&rows)
	_ = pool.QueryRow(ctx, `SELECT cursor FROM fenceline_cursor WHERE name = 'refused'`).Scan(&cursor)
	_ = pool.QueryRow(ctx, `SELECT result FROM fenceline_audit WHERE name = 'refused' ORDER BY seq DESC LIMIT 1`).Scan(&last)
	if rows != 2 || cursor != 2 || last != "bad-argument" {
		t.Errorf("after a refused batch: %d rows, cursor %d, last audit %q; want 2, 2, bad-argument", rows, cursor, last)
	}
}

// TestAuditMaxLen: the audit is trimmed to about AuditMaxLen rows of the cursor by
// default, and kept whole on request.
func TestAuditMaxLen(t *testing.T) {
	pool := newPool(t)
	ctx := context.Background()
	const commits = 300
	for _, tc := range []struct {
		maxLen   int64
		min, max int64
	}{{50, 50, 150}, {pgstore.AuditUnbounded, commits, commits}} {
		name := fmt.Sprintf("trim%d", tc.maxLen)
		s, err := pgstore.NewStore(pool, pgstore.Config[storetest.Event]{Name: name, Node: "n1", AuditMaxLen: tc.maxLen})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Setup(ctx); err != nil {
			t.Fatal(err)
		}
		for i := range int64(commits) {
			if err := s.Commit(ctx, 1, i, storetest.Events(i, i+1)); err != nil {
				t.Fatal(err)
			}
		}
		var n int64
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM fenceline_audit WHERE name = $1`, name).Scan(&n); err != nil || n < tc.min || n > tc.max {
			t.Errorf("max len %d: %d rows after %d commits (%v), want %d..%d", tc.maxLen, n, commits, err, tc.min, tc.max)
		}
	}
}

// fenceCounts records what a store tells its FenceMetrics.
type fenceCounts struct {
	mu sync.Mutex
	n  map[listener.Outcome]int
}

func (m *fenceCounts) ObserveFenced(o listener.Outcome) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n[o]++
}

// The store counts what its fence rejects, commits and work alike.
func TestFenceCountsRejections(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t)
	m := &fenceCounts{n: map[listener.Outcome]int{}}
	s, err := pgstore.NewStore(pool, pgstore.Config[storetest.Event]{Name: "counts", Node: "n1", Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, 5, 0, storetest.Events(0, 2)); err != nil {
		t.Fatal(err)
	}
	_ = s.Commit(ctx, 4, 2, storetest.Events(2, 3))
	_ = s.Fence().Do(ctx, 3, nil)
	_ = s.Commit(ctx, 5, 0, storetest.Events(0, 1))
	want := map[listener.Outcome]int{listener.OutcomeOK: 1, listener.OutcomeStaleToken: 2, listener.OutcomeCursorConflict: 1}
	if !maps.Equal(m.n, want) {
		t.Errorf("observed %v, want %v", m.n, want)
	}
}
