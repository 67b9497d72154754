package proc_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/backend/proc"
	"github.com/fenceline/fenceline/harness/finalread"
	"github.com/fenceline/fenceline/source"
)

// A cluster whose store is PostgreSQL: the nodes commit through their proxies, survive a
// crash of PostgreSQL and a partition of a node's link to it, the final read finds the
// feed's prefix applied exactly once, and Close leaves no server and no data behind.
func TestPostgresStore(t *testing.T) {
	c := proc.StartT(t, backend.Spec{
		Nodes: 2, SourceRate: 500,
		Node: backend.NodeOptions{LeaseTTL: lease, Batch: 20, Store: backend.StorePostgres},
	})
	ctx := context.Background()
	leader, _ := waitLeader(t, c, 0)
	cursorAbove := func(min int64) int64 {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			if id, _, ok := backend.Leader(ctx, c); ok {
				if st, err := c.NodeStatus(ctx, id); err == nil && st.Cursor > min {
					return st.Cursor
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("the cursor did not pass %d in 30s", min)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	before := cursorAbove(100)
	if err := c.KillPostgres(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if err := c.StartPostgres(ctx); err != nil {
		t.Fatal(err)
	}
	after := cursorAbove(before + 100)
	// Cut the leader off from PostgreSQL (not from Redis): it leads on, its commits
	// hang; once healed it commits again.
	blackhole := map[string]any{"timeout": 0}
	for _, stream := range []string{"upstream", "downstream"} {
		if err := c.AddPostgresToxic(ctx, leader, backend.Toxic{Name: "cut-" + stream, Type: "timeout", Stream: stream, Attributes: blackhole}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Second)
	if err := c.RemovePostgresToxics(ctx, leader, "cut-upstream", "cut-downstream"); err != nil {
		t.Fatal(err)
	}
	cursorAbove(after + 100)

	for _, id := range c.Nodes() {
		if err := c.StopNode(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	st, err := finalread.ReadPostgres(ctx, c.PostgresURL(), "")
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(st.Sink)) != st.Cursor || st.Cursor <= after {
		t.Fatalf("sink of %d ids, cursor %d (was %d before the last fault)", len(st.Sink), st.Cursor, after)
	}
	for i, id := range st.Sink {
		if id != int64(i+1) {
			t.Fatalf("sink[%d] = %d: an event lost or applied twice", i, id)
		}
	}
	for a, v := range source.Balances(st.Cursor) {
		if st.Balances[a] != v {
			t.Fatalf("balance of %s = %d, want %d", a, st.Balances[a], v)
		}
	}
	if len(st.Audit) == 0 || st.MaxToken == 0 {
		t.Errorf("audit %d entries, max token %d", len(st.Audit), st.MaxToken)
	}

	url := c.PostgresURL()
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(c.Dir(), proc.PostgresDir, "data")); !os.IsNotExist(err) {
		t.Errorf("the data directory is still there: %v", err)
	}
	port := url[strings.LastIndexByte(url[:strings.LastIndexByte(url, '/')], ':')+1 : strings.LastIndexByte(url, '/')]
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range cmdlines {
		if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), "postgres") && strings.Contains(string(b), "\x00"+port+"\x00") {
			t.Errorf("a postgres process of the cluster survived Close: %s %q", f, b)
		}
	}
}
