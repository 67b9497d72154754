package proc_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/backend/proc"
	"github.com/fenceline/fenceline/nemesis/etcdfaulttest"
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
