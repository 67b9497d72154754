// Package etcdfaulttest checks the etcd faults on a real backend (processes or
// containers), for the tests of both: each fault is injected and healed through package
// nemesis, and its effect is read where a node would see it, through the node's own
// proxies to the members (etcd's /health, with no client library in between).
package etcdfaulttest

import (
	"context"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/internal/etcdserver"
	"github.com/fenceline/fenceline/nemesis"
)

// Cluster is a backend that runs etcd.
type Cluster interface {
	nemesis.Backend
	nemesis.EtcdCluster
	nemesis.EtcdLinks
	// EtcdProxyAddr is node id's proxy to member m, as the runner reaches it.
	EtcdProxyAddr(id, m string) string
}

// Timeout bounds each wait for a link to answer, or to stop answering: a 3-member
// cluster elects a new leader within seconds; a loaded machine is slow.
const Timeout = 30 * time.Second

// healthy reports whether member m answers healthy through node id's proxy.
func healthy(c Cluster, id, m string) error {
	return etcdserver.Health(context.Background(), c.EtcdProxyAddr(id, m))
}

// Wait waits until member m through node id's proxy is healthy (want) or is not.
func Wait(tb testing.TB, c Cluster, id, m string, want bool, why string) {
	tb.Helper()
	deadline := time.Now().Add(Timeout)
	for {
		err := healthy(c, id, m)
		if (err == nil) == want {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s: %s via %s's proxy: healthy %v after %v, want %v (%v)", why, m, id, err == nil, Timeout, want, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// WaitAll waits until every member is healthy through every node's proxies.
func WaitAll(tb testing.TB, c Cluster, why string) {
	tb.Helper()
	for _, id := range c.Nodes() {
		for _, m := range c.EtcdMembers() {
			Wait(tb, c, id, m, true, why)
		}
	}
}

func inject(tb testing.TB, c Cluster, kind, aim string) nemesis.Fault {
	tb.Helper()
	f, err := nemesis.ByKind(kind)
	if err != nil {
		tb.Fatal(err)
	}
	what, err := f.Inject(context.Background(), c, aim, nemesis.Params{LeaseTTL: time.Second})
	if err != nil {
		tb.Fatalf("%s: %v", kind, err)
	}
	tb.Logf("%s: %s", kind, what)
	return f
}

func heal(tb testing.TB, c Cluster, f nemesis.Fault, aim string) {
	tb.Helper()
	what, err := f.Heal(context.Background(), c, aim)
	if err != nil {
		tb.Fatalf("%s heal: %v", f.Kind(), err)
	}
	tb.Logf("%s healed: %s", f.Kind(), what)
}

// Check runs every etcd fault on c, which must have two nodes or more, and checks that
// each does what it says and heals:
//   - partition-etcd: every proxy of the node stops answering, the other node's do not;
//   - etcd-kill and etcd-pause: the member hit (the leader) stops answering; with three
//     members the other two elect a leader and answer healthy meanwhile (a quorum of
//     two); after the heal it answers again;
//   - etcd-restart: every member answers again after the heal.
func Check(t *testing.T, c Cluster) {
	ids, ms := c.Nodes(), c.EtcdMembers()
	if len(ids) < 2 || len(ms) == 0 {
		t.Fatalf("need two nodes and etcd: %v, %v", ids, ms)
	}
	WaitAll(t, c, "at start")

	f := inject(t, c, faults.PartitionEtcd, ids[0])
	for _, m := range ms {
		Wait(t, c, ids[0], m, false, "partitioned")
		Wait(t, c, ids[1], m, true, "the other node, during the partition")
	}
	heal(t, c, f, ids[0])
	WaitAll(t, c, "partition healed")

	for _, kind := range []string{faults.EtcdKill, faults.EtcdPause} {
		leader, err := c.EtcdLeader(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		f := inject(t, c, kind, nemesis.TargetEtcd)
		Wait(t, c, ids[0], leader, false, kind+" of the leader")
		if len(ms) > 1 {
			for _, m := range ms {
				if m != leader {
					Wait(t, c, ids[1], m, true, kind+": the others keep a quorum")
				}
			}
			if now, err := c.EtcdLeader(context.Background()); err != nil || now == leader {
				t.Errorf("%s: leader %q after the leader %s was hit (%v)", kind, now, leader, err)
			}
		}
		heal(t, c, f, nemesis.TargetEtcd)
		WaitAll(t, c, kind+" healed")
	}

	f = inject(t, c, faults.EtcdRestart, nemesis.TargetEtcd)
	heal(t, c, f, nemesis.TargetEtcd)
	WaitAll(t, c, "etcd-restart healed")
	if err := nemesis.HealAll(context.Background(), c); err != nil {
		t.Fatal(err)
	}
}

// Addrs lists every address a cluster's etcd answers at: the members' (direct) and the
// nodes' proxies, for CheckClosed.
func Addrs(c Cluster, direct func(m string) string) []string {
	var out []string
	for _, m := range c.EtcdMembers() {
		out = append(out, direct(m))
		for _, id := range c.Nodes() {
			out = append(out, c.EtcdProxyAddr(id, m))
		}
	}
	return slices.DeleteFunc(out, func(a string) bool { return a == "" })
}

// CheckClosed fails the test if anything still listens at addrs (after Close).
func CheckClosed(tb testing.TB, addrs []string) {
	tb.Helper()
	for _, a := range addrs {
		if conn, err := net.DialTimeout("tcp", a, time.Second); err == nil {
			conn.Close()
			tb.Errorf("%s still accepts connections after Close", a)
		}
	}
	if len(addrs) == 0 {
		tb.Error(fmt.Errorf("no address to check"))
	}
}
