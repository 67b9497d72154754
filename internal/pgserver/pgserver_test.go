package pgserver

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// A server starts, keeps a committed row across a crash (Kill, Restart), and a paused
// server answers nothing until it resumes.
func TestServer(t *testing.T) {
	s := New(t)
	ctx := context.Background()
	c, err := pgx.Connect(ctx, s.URL())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "CREATE TABLE t (v int); INSERT INTO t VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	c.Close(ctx)
	s.Kill()
	if err := Ping(ctx, s.URL()); err == nil {
		t.Fatal("a killed server answers")
	}
	if err := s.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	c, err = pgx.Connect(ctx, s.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var v int
	if err := c.QueryRow(ctx, "SELECT v FROM t").Scan(&v); err != nil || v != 42 {
		t.Fatalf("after a crash: %d, %v; want the committed 42", v, err)
	}
	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err = c.QueryRow(pctx, "SELECT 1").Scan(&v)
	cancel()
	if err == nil {
		t.Error("a paused server answered")
	}
	if err := s.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := Ping(ctx, s.URL()); err != nil {
		t.Errorf("after resume: %v", err)
	}
}
