package harness

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/internal/redisserver"
	"github.com/fenceline/fenceline/listener"
	"github.com/fenceline/fenceline/node"
)

// countingCluster is a cluster of one node that reports a commit more at every status
// read, whatever the store holds: only what waitProgress uses is implemented.
type countingCluster struct {
	Backend
	addr    string
	commits atomic.Int64
}

func (c *countingCluster) Nodes() []string   { return []string{"n1"} }
func (c *countingCluster) RedisAddr() string { return c.addr }
func (c *countingCluster) NodeStatus(context.Context, string) (node.Status, error) {
	return node.Status{Commits: c.commits.Add(1)}, nil
}

// The wait for progress counts a node's commits only once the store's cursor has moved
// too, for fenceline's own node and store: a fence that answered "committed" without
// sending anything (the mutant listener:run+4:27) made the counts grow and the recovery
// phase end at once, too soon for the progress check to decide. Another design's counts
// are taken as they are.
func TestWaitProgressStoreCursor(t *testing.T) {
	srv := redisserver.New(t)
	c := election.NewClient(srv.Addr())
	t.Cleanup(func() { c.Close() })
	key := listener.KeysFor("fenceline").Cursor
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		variant string
		moves   bool
		want    error
	}{
		{"store still", "", false, ErrNoProgress},
		{"store moves", "", true, nil},
		{"another design", "no-fence", false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := c.HSet(ctx, key, "cursor", 10, "token", 1).Err(); err != nil {
				t.Fatal(err)
			}
			r := &runner{
				cfg: Config{Node: backend.NodeOptions{Election: "fenceline", Variant: tc.variant}},
				log: slog.New(slog.NewTextHandler(io.Discard, nil)),
				c:   &countingCluster{addr: srv.Addr()},
			}
			if tc.moves {
				go func() {
					time.Sleep(200 * time.Millisecond)
					c.HSet(ctx, key, "cursor", 12)
				}()
			}
			start := time.Now()
			err := r.waitProgress(ctx, 2*time.Second)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("waitProgress = %v, want %v", err, tc.want)
			}
			if tc.moves && time.Since(start) < 150*time.Millisecond {
				t.Errorf("returned after %v, before the store's cursor moved", time.Since(start))
			}
		})
	}
}
