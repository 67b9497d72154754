package nemesis_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/backend/proc"
	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/nemesis"
)

// source-outage fails every fetch of the node it aims at, and nothing else: the
// reference's leader keeps its term through it, commits nothing while it holds, and
// commits again after the heal.
func TestSourceOutage(t *testing.T) {
	c := proc.StartT(t, backend.Spec{Nodes: 2, SourceRate: 200, Node: backend.NodeOptions{LeaseTTL: lease, Batch: 10}})
	ctx := context.Background()
	old, tok := leader(t, c, 0)
	f := inject(t, c, faults.SourceOutage, old, nemesis.Params{})
	time.Sleep(lease / 4) // a commit in flight lands
	before, err := c.NodeStatus(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(lease * 3 / 2)
	during, err := c.NodeStatus(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	if during.Role != "leader" || during.Token != tok {
		t.Fatalf("%s is %s with token %d after a lease and a half without its source, want leader with %d", old, during.Role, during.Token, tok)
	}
	if during.Commits != before.Commits {
		t.Errorf("%s committed %d batches without its source", old, during.Commits-before.Commits)
	}
	b, err := os.ReadFile(filepath.Join(c.Dir(), history.LogsDir, old+".log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "fetch-failed") {
		t.Errorf("%s's log has no failed fetch", old)
	}
	heal(t, c, f, old)
	eventually(t, electTimeout, old+" commits again", func() bool {
		st, err := c.NodeStatus(ctx, old)
		return err == nil && st.Commits > during.Commits && st.Token == tok
	})
}
