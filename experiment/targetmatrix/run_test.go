//go:build chaos

package targetmatrix

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/internal/testbin"
	"github.com/fenceline/fenceline/targets"
)

func TestMain(m *testing.M) { testbin.Main(m) }

// shortRunTargets are the targets make test runs once each (make targets runs them all,
// longer): those added with etcd and client-go.
var shortRunTargets = []string{targets.Etcd, targets.EtcdFenced}

// TestShortRunOfEachNewTarget runs each such target through the matrix, one seed of 15 s
// under every fault that applies (etcd's too) and the stops-only run, and requires what
// the table needs of it: a fenced target valid; an unfenced one decided, and
// no-stale-write "not applicable".
func TestShortRunOfEachNewTarget(t *testing.T) {
	all, err := faults.ParseList("all")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range shortRunTargets {
		t.Run(name, func(t *testing.T) {
			ds, err := Pick(name)
			if err != nil {
				t.Fatal(err)
			}
			out := t.TempDir()
			var stdout, stderr bytes.Buffer
			code := Run(context.Background(), Config{Designs: ds, Seed: 2, Seeds: 1, Duration: 15 * time.Second,
				LeaseTTL: 2 * time.Second, Nodes: 3, Nemeses: all, Out: out, Table: filepath.Join(out, "targets.md"),
				Command: "test", Binary: testbin.Fenceline(t)}, &stdout, &stderr)
			b, err := os.ReadFile(filepath.Join(out, "targets.json"))
			if err != nil {
				t.Fatalf("exit %d, no targets.json: %v\n%s", code, err, stderr.String())
			}
			var recs []Record
			if err := json.Unmarshal(b, &recs); err != nil {
				t.Fatal(err)
			}
			if len(recs) != 2 {
				t.Fatalf("%d runs, want 2 (all faults, stops only)", len(recs))
			}
			for _, r := range recs {
				switch {
				case r.Incomplete != "":
					t.Errorf("%s%s: incomplete: %s", r.Target, r.kind(), r.Incomplete)
				case ds[0].Fenced && r.Verdict != checker.Valid:
					t.Errorf("%s%s: %s %v, want valid", r.Target, r.kind(), r.Verdict, r.Failed)
				case r.Verdict != checker.Valid && r.Verdict != checker.Invalid:
					t.Errorf("%s%s: %q, want a verdict", r.Target, r.kind(), r.Verdict)
				}
			}
			if want := ds[0].Fenced; want && code != 0 {
				t.Errorf("exit %d, want 0\n%s", code, stderr.String())
			}
			md, _ := os.ReadFile(filepath.Join(out, "targets.md"))
			if !ds[0].Fenced && !bytes.Contains(md, []byte("no-stale-write: not applicable, no fence")) {
				t.Errorf("the table does not say no-stale-write is not applicable:\n%s", md)
			}
		})
	}
}
