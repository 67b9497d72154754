package container_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/nemesis/etcdfaulttest"
)

// A cluster with etcd containers, one member and three: every etcd fault acts on what
// the nodes reach through their proxies and heals (etcdfaulttest.Check), and Close leaves
// no container, network or proxy behind. The nodes are the reference's, which do not use etcd.
func TestEtcd(t *testing.T) {
	for _, n := range []int{1, 3} {
		t.Run(fmt.Sprintf("members=%d", n), func(t *testing.T) {
			t0 := time.Now()
			c := start(t, backend.Spec{Nodes: 2, EtcdMembers: n, Node: backend.NodeOptions{LeaseTTL: lease}})
			if got := c.EtcdMembers(); len(got) != n {
				t.Fatalf("members %v, want %d", got, n)
			}
			etcdfaulttest.Check(t, c)
			// The members' published ports; the proxies live in the toxiproxy container,
			// which start's cleanup finds removed (an address on the run's network would
			// prove nothing once the network is gone: this machine's egress accepts any
			// connection to an address it does not route locally).
			var addrs []string
			for _, m := range c.EtcdMembers() {
				addrs = append(addrs, c.EtcdAddr(m))
			}
			if err := c.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			etcdfaulttest.CheckClosed(t, addrs)
			t.Logf("took %v", time.Since(t0).Round(time.Millisecond))
		})
	}
}
