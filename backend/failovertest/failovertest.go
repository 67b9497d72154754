// Package failovertest measures failovers over a real backend (processes or containers),
// for the benchmarks and drills of both backends: each failover is timed from the fault
// to the first commit accepted under a newer token, as the nodes' own histories record
// it, and split into the steps between.
package failovertest

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/history"
)

// Cluster is what a measurement needs of a backend: its nodes, their state and their
// histories (written under Dir()/history).
type Cluster interface {
	backend.StatusReader
	Dir() string
}

// FirstCommit returns the first accepted commit under a token above minToken in the
// histories of c's nodes, waiting for it up to timeout.
func FirstCommit(tb testing.TB, c Cluster, minToken int64, timeout time.Duration) history.Event {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var best history.Event
		for _, e := range events(c) {
			if e.Kind == history.KindCommit && e.Type == history.OK && e.Token > minToken && (best.Time == 0 || e.Time < best.Time) {
				best = e
			}
		}
		if best.Time != 0 {
			return best
		}
		if time.Now().After(deadline) {
			tb.Fatalf("no commit under a token above %d within %v", minToken, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Committing waits for a leader with a token above minToken and for its first commit;
// it returns the leader and its token.
func Committing(tb testing.TB, c Cluster, minToken int64, exclude ...string) (string, int64) {
	tb.Helper()
	id, tok, err := backend.WaitLeader(context.Background(), c, minToken, 20*time.Second, exclude...)
	if err != nil {
		tb.Fatal(err)
	}
	FirstCommit(tb, c, tok-1, 10*time.Second)
	return id, tok
}

// events reads every node's history; a file not there yet (or cut mid-line by a crash)
// gives what could be read.
func events(c Cluster) []history.Event {
	var out []history.Event
	for _, id := range c.Nodes() {
		evs, _ := history.ReadFile(filepath.Join(c.Dir(), history.HistoryDir, id+".jsonl"))
		out = append(out, evs...)
	}
	return out
}

// Sample is one failover, every figure measured from the fault's injection on the host
// clock that all histories share. A step the failover did not have is 0 (a crashed
// leader releases nothing).
type Sample struct {
	// Injected: the fault's call returned (a kill: the process or container is gone, and
	// with it its sockets).
	Injected time.Duration
	// Released: the old leader's release of its term's lease was confirmed.
	Released time.Duration
	// AcquireSent: the new leader sent the acquire that won.
	AcquireSent time.Duration
	// Acquired: that acquire returned ok, with the new token.
	Acquired time.Duration
	// Loaded: the new leader's first cursor load of its term returned.
	Loaded time.Duration
	// CommitSent: its first commit of the term was sent (the events fetched and applied).
	CommitSent time.Duration
	// Committed: that commit was accepted. The failover's length.
	Committed time.Duration
}

// Fault acts on the cluster's leader (inject) and undoes it (heal), e.g. a kill and a
// restart.
type Fault struct {
	Inject, Heal func(ctx context.Context, leader string) error
}

// Measure runs n failovers (at least one) of c: each waits for a committing leader,
// injects fault on it, waits up to timeout for the first commit under a newer token, and
// heals. It returns the samples in the order they were taken.
func Measure(tb testing.TB, c Cluster, n int, timeout time.Duration, fault Fault) []Sample {
	tb.Helper()
	ctx := context.Background()
	var out []Sample
	tok := int64(0)
	for i := range max(n, 1) {
		var old string
		old, tok = Committing(tb, c, tok)
		time.Sleep(time.Duration(i%7) * 37 * time.Millisecond) // vary the phase against the renewals
		t0 := time.Now().UnixNano()
		if err := fault.Inject(ctx, old); err != nil {
			tb.Fatal(err)
		}
		injected := time.Duration(time.Now().UnixNano() - t0)
		commit := FirstCommit(tb, c, tok, timeout)
		s := sample(events(c), t0, old, tok, commit)
		s.Injected = injected
		out = append(out, s)
		if err := fault.Heal(ctx, old); err != nil {
			tb.Fatal(err)
		}
	}
	return out
}

// sample reads one failover from evs: the fault at t0 on leader old (token tok), the new
// term's first accepted commit.
func sample(evs []history.Event, t0 int64, old string, tok int64, commit history.Event) Sample {
	since := func(t int64) time.Duration {
		if t == 0 {
			return 0
		}
		return time.Duration(t - t0)
	}
	s := Sample{Committed: since(commit.Time)}
	invokes := map[string]history.Event{}
	for _, e := range evs {
		if e.Type == history.Invoke {
			invokes[e.ID] = e
		}
	}
	first := func(match func(history.Event) bool) history.Event {
		var best history.Event
		for _, e := range evs {
			if match(e) && e.Time >= t0 && e.Time <= commit.Time && (best.Time == 0 || e.Time < best.Time) {
				best = e
			}
		}
		return best
	}
	rel := first(func(e history.Event) bool {
		return e.Node == old && e.Kind == history.KindRelease && e.Type == history.OK && e.Token == tok
	})
	acq := first(func(e history.Event) bool {
		return e.Node == commit.Node && e.Kind == history.KindAcquire && e.Type == history.OK && e.Token == commit.Token
	})
	load := first(func(e history.Event) bool {
		return e.Node == commit.Node && e.Kind == history.KindLoad && e.Type == history.OK && e.Time >= acq.Time
	})
	s.Released, s.Acquired, s.Loaded = since(rel.Time), since(acq.Time), since(load.Time)
	s.AcquireSent = since(invokes[acq.ID].Time)
	s.CommitSent = since(invokes[commit.ID].Time)
	return s
}

// Quantile is the q-quantile (0 to 1) of ds by the nearest rank: with 30 samples, 0.99
// is the largest. ds must not be empty.
func Quantile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1)+0.5)]
}

// Report reports the failovers' p50, p99 and max in milliseconds as b's metrics, and
// writes to w one line with the percentiles of the whole and one per step, so that where
// the time goes can be read off a benchmark run.
func Report(b *testing.B, w io.Writer, what string, samples []Sample) {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	total := steps(samples, func(s Sample) time.Duration { return s.Committed })
	b.ReportMetric(ms(Quantile(total, 0.5)), "p50-ms")
	b.ReportMetric(ms(Quantile(total, 0.99)), "p99-ms")
	b.ReportMetric(ms(Quantile(total, 1)), "max-ms")
	b.ReportMetric(0, "ns/op")
	fmt.Fprintf(w, "%s: %s: %d failovers: p50 %.1f ms p90 %.1f ms p99 %.1f ms max %.1f ms\n",
		b.Name(), what, len(samples), ms(Quantile(total, 0.5)), ms(Quantile(total, 0.9)), ms(Quantile(total, 0.99)), ms(Quantile(total, 1)))
	// Each step's own length: from the end of the step before (the fault for the first).
	// The acquire may be sent before the fault's call returns (a graceful stop waits for
	// the process to exit, long after its release): that step is then negative.
	marks := []struct {
		name string
		at   func(Sample) time.Duration
	}{
		{"fault injected", func(s Sample) time.Duration { return s.Injected }},
		{"→acquire sent", func(s Sample) time.Duration { return s.AcquireSent }},
		{"acquire", func(s Sample) time.Duration { return s.Acquired }},
		{"load", func(s Sample) time.Duration { return s.Loaded }},
		{"fetch+apply", func(s Sample) time.Duration { return s.CommitSent }},
		{"commit", func(s Sample) time.Duration { return s.Committed }},
	}
	var parts []string
	for i, m := range marks {
		ds := steps(samples, func(s Sample) time.Duration {
			if i == 0 {
				return m.at(s)
			}
			return m.at(s) - marks[i-1].at(s)
		})
		parts = append(parts, fmt.Sprintf("%s p50 %.2f p99 %.2f", m.name, ms(Quantile(ds, 0.5)), ms(Quantile(ds, 0.99))))
	}
	if rel := steps(samples, func(s Sample) time.Duration { return s.Released }); slices.ContainsFunc(rel, func(d time.Duration) bool { return d > 0 }) {
		parts = append(parts, fmt.Sprintf("(release confirmed p50 %.2f p99 %.2f)", ms(Quantile(rel, 0.5)), ms(Quantile(rel, 0.99))))
	}
	fmt.Fprintf(w, "%s: steps in ms over %d: %s\n", b.Name(), len(samples), strings.Join(parts, "; "))
}

func steps(samples []Sample, f func(Sample) time.Duration) []time.Duration {
	out := make([]time.Duration, len(samples))
	for i, s := range samples {
		out[i] = f(s)
	}
	return out
}
