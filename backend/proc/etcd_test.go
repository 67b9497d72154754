package proc_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/backend/proc"
	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/harness"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/internal/testbin"
	"github.com/fenceline/fenceline/nemesis"
	"github.com/fenceline/fenceline/nemesis/etcdfaulttest"
	"github.com/fenceline/fenceline/source"
	"github.com/fenceline/fenceline/workloads"
)

// A cluster with etcd, one member and three: every etcd fault acts on what the nodes
// reach through their proxies and heals (etcdfaulttest.Check), and Close leaves no
// member, no proxy and no data behind. The nodes are the reference's, which do not use
// etcd: the backend gives --etcd only to a target that elects through it.
func TestEtcd(t *testing.T) {
	for _, n := range []int{1, 3} {
		t.Run(fmt.Sprintf("members=%d", n), func(t *testing.T) {
			c := proc.StartT(t, backend.Spec{Nodes: 2, EtcdMembers: n, Node: backend.NodeOptions{LeaseTTL: lease}})
			if got := c.EtcdMembers(); len(got) != n {
				t.Fatalf("members %v, want %d", got, n)
			}
			etcdfaulttest.Check(t, c)
			addrs := etcdfaulttest.Addrs(c, c.EtcdAddr)
			if err := c.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			etcdfaulttest.CheckClosed(t, addrs)
			for _, m := range backend.EtcdMemberNames(n) {
				dir := filepath.Join(c.Dir(), proc.EtcdDir, m)
				if _, err := os.Stat(filepath.Join(dir, "data")); !os.IsNotExist(err) {
					t.Errorf("%s's data directory is still there: %v", m, err)
				}
				if _, err := os.Stat(filepath.Join(dir, "etcd.log")); err != nil {
					t.Errorf("%s's log: %v", m, err)
				}
			}
			cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
			for _, f := range cmdlines {
				if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), filepath.Join(c.Dir(), proc.EtcdDir)) {
					t.Errorf("an etcd member survived Close: %s %q", f, b)
				}
			}
		})
	}
}

// The nodes of a target that elects through etcd are given --etcd with their own
// proxies, in member order; others are not.
func TestEtcdArgs(t *testing.T) {
	proxies := []string{"127.0.0.1:1", "127.0.0.1:2"}
	if got := (backend.NodeOptions{Target: "etcd-fenced"}).EtcdArgs(proxies); strings.Join(got, " ") != "--etcd 127.0.0.1:1,127.0.0.1:2" {
		t.Errorf("etcd-fenced: %q", got)
	}
	if got := (backend.NodeOptions{}).EtcdArgs(proxies); got != nil {
		t.Errorf("reference: %q", got)
	}
}

// A harness run with three etcd members and every etcd fault on its schedule: the faults
// are recorded against etcd (or the node partitioned) and healed, run.json records the
// cluster's size, the checker judges the run, and nothing of etcd is left. The nodes are
// the reference's, which do not use etcd: what is checked is the harness's side.
func TestEtcdHarnessRun(t *testing.T) {
	wl, err := workloads.ByName("listener")
	if err != nil {
		t.Fatal(err)
	}
	p := nemesis.Params{Hold: time.Second, LeaseTTL: lease}
	cfg := harness.Config{
		Dir: t.TempDir(), Seed: 1, Duration: 12 * time.Second, Nodes: 2, Workload: wl, Backend: "local",
		Node: backend.NodeOptions{LeaseTTL: lease}, EtcdMembers: 3, Nemeses: faults.Etcd(),
		Steps: []nemesis.Step{
			{At: time.Second, Kind: faults.EtcdKill, Params: p},
			{At: 4 * time.Second, Kind: faults.EtcdPause, Params: p},
			{At: 7 * time.Second, Kind: faults.EtcdRestart, Params: p},
			{At: 9 * time.Second, Kind: faults.PartitionEtcd, Aim: nemesis.Aim{Leader: true}, Params: p},
		},
		Start: func(ctx context.Context, spec backend.Spec) (backend.Backend, error) {
			spec.Node.Chaos = true
			c, err := proc.Start(ctx, proc.Config{Spec: spec, Binary: testbin.Fenceline(t)})
			if err != nil {
				return nil, err
			}
			return c, nil
		},
	}
	if err := harness.Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	run, err := history.LoadRun(cfg.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.Info.EtcdMembers != 3 {
		t.Errorf("run.json: etcd_members %d", run.Info.EtcdMembers)
	}
	healed := map[string]string{}
	for _, f := range run.Faults {
		if f.Type == history.OK {
			healed[f.Fault] = f.Node
		}
		if f.Error != "" {
			t.Errorf("fault %s on %s: %s", f.Fault, f.Node, f.Error)
		}
	}
	for _, k := range faults.Etcd() {
		want := nemesis.TargetEtcd
		if k == faults.PartitionEtcd {
			want = healed[k] // a node
		}
		if n, ok := healed[k]; !ok || n != want || n == "" {
			t.Errorf("%s: healed on %q (%v); want %q", k, n, ok, want)
		}
	}
	res, err := checker.Check(context.Background(), run, checker.Options{ExpectedBalances: source.Balances, OutDir: cfg.Dir})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != checker.Valid {
		t.Errorf("verdict %s", res.Verdict)
	}
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range cmdlines {
		if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), filepath.Join(cfg.Dir, proc.EtcdDir)) {
			t.Errorf("an etcd member survived the run: %s %q", f, b)
		}
	}
}
