package container_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/backend/failovertest"
)

// BenchmarkCrashFailover is backend/proc's BenchmarkCrashFailover over containers: docker
// kill of the leader's container (SIGKILL: its kernel closes its sockets, as a crashed
// process's does), 30 times per lease length, takeover on disconnect off and on. Run with
// `go test -run '^$' -bench CrashFailover -benchtime 1x ./backend/container/`.
func BenchmarkCrashFailover(b *testing.B) {
	for _, ttl := range []time.Duration{time.Second, 2 * time.Second, 10 * time.Second} {
		for _, on := range []bool{false, true} {
			onOff := map[bool]string{false: "off", true: "on"}[on]
			b.Run(fmt.Sprintf("lease=%v/takeover=%s", ttl, onOff), func(b *testing.B) {
				c := start(b, backend.Spec{Nodes: 3, SourceRate: 0,
					Node: backend.NodeOptions{LeaseTTL: ttl, Batch: 20, TakeoverOnDisconnect: on}})
				samples := failovertest.Measure(b, c, max(b.N, 30), 2*ttl+30*time.Second, failovertest.Fault{
					Inject: c.KillNode, Heal: c.StartNode})
				failovertest.Report(b, os.Stderr, fmt.Sprintf("docker kill, lease %v, takeover on disconnect %s", ttl, onOff), samples)
			})
		}
	}
}
