package election_test

import (
	"slices"
	"testing"
	"time"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/internal/redisserver"
)

// BenchmarkGracefulHandoff measures a graceful handoff between two electors on a real
// redis-server: from the old leader's ok release to the standby's lead call (pub/sub
// notice + acquire), and from the old leader's shutdown to that call (lead returning +
// release + notice + acquire). The lease and retry interval are 10s, so only the notice
// can explain a fast takeover. It reports p50 and p99 in milliseconds.
func BenchmarkGracefulHandoff(b *testing.B) {
	srv := redisserver.New(b)
	c := newClient(b, srv.Addr())
	cfg := func(id string) election.Config {
		return election.Config{InstanceID: id, LeaseTTL: 10 * time.Second, RetryInterval: 10 * time.Second}
	}
	nodes := []*node{startNode(b, c, cfg("a"), nil)}
	nodes[0].term(b, wait)
	nodes = append(nodes, startNode(b, c, cfg("b"), nil))
	subscribed(b, nodes[1])

	var fromRelease, fromStop []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l := 0
		if nodes[1].e.Status().Role == election.RoleLeader {
			l = 1
		}
		old, next := nodes[l], nodes[1-l]
		stopped := time.Now()
		old.stop()
		next.term(b, wait)
		led := time.Now()
		fromStop = append(fromStop, led.Sub(stopped))
		fromRelease = append(fromRelease, led.Sub(old.rec.lastRelease()))

		b.StopTimer()
		nodes[l] = startNode(b, c, cfg(old.id), nil) // back as a standby
		subscribed(b, nodes[l])
		b.StartTimer()
	}
	b.StopTimer()
	report(b, fromRelease, "release")
	report(b, fromStop, "stop")
	b.ReportMetric(0, "ns/op") // the per-iteration time includes restarts; see the percentiles
}

// subscribed waits until n has made its first acquire attempt, which it makes only after
// subscribing to the release channel.
func subscribed(tb testing.TB, n *node) {
	tb.Helper()
	if !n.rec.eventually("acquire/fail", 1, wait) {
		tb.Fatalf("%s made no acquire attempt", n.id)
	}
}

func report(b *testing.B, ds []time.Duration, name string) {
	slices.Sort(ds)
	pct := func(p float64) float64 {
		return float64(ds[int(p*float64(len(ds)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(0.50), name+"-p50-ms")
	b.ReportMetric(pct(0.99), name+"-p99-ms")
}

// BenchmarkLostReply measures recovery from the queued-acquire case: three electors (lease
// 2s, RetryInterval 100ms) on a real redis-server that is stopped (SIGSTOP) for 3s, longer
// than the lease, and resumed: from SIGCONT to the first lead call under a new token. The
// acquires queued in the stopped Redis run when it resumes; the elector whose (abandoned)
// acquire took the lock adopts that term at its next attempt. Each round takes about 3.5s.
// It reports p50 and p99 in milliseconds, and the tokens wasted per round (issued to a
// lease nobody led; 0 when the queued acquire's term is adopted).
func BenchmarkLostReply(b *testing.B) {
	srv := redisserver.New(b)
	var nodes []*node
	for _, id := range []string{"a", "b", "c"} {
		nodes = append(nodes, startNode(b, newClient(b, srv.Addr()), pausedConfig(id), nil))
	}
	var took []time.Duration
	wasted := int64(0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resumed, before, first := pauseAndResume(b, srv, nodes)
		took = append(took, first.at.Sub(resumed))
		wasted += first.term.Token - before - 1
	}
	b.StopTimer()
	report(b, took, "resume-to-term")
	b.ReportMetric(float64(wasted)/float64(b.N), "wasted-tokens/op")
	b.ReportMetric(0, "ns/op") // the per-iteration time is the pause; see the percentiles
}
