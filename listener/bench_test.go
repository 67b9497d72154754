package listener

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/source"
)

// unfencedScript is the commit script without the fence: no token check, no TIME, no
// audit entry, no check of the writes. It keeps the cursor
// check and applies the same writes, so the difference in latency is what the fence
// costs. Benchmarks only.
const unfencedScript = `
local cursor = redis.call('HGET', KEYS[1], 'cursor') or '0'
if tonumber(ARGV[4]) ~= tonumber(cursor) then
  return {'cursor-conflict', cursor, '0'}
end
local i = 7
while i <= #ARGV do
  local cmd, key, na = ARGV[i], KEYS[tonumber(ARGV[i + 1])], tonumber(ARGV[i + 2])
  if cmd == 'XADD' then
    redis.call('XADD', key, '*', unpack(ARGV, i + 3, i + 2 + na))
  else
    redis.call(cmd, key, unpack(ARGV, i + 3, i + 2 + na))
  end
  i = i + 3 + na
end
redis.call('HSET', KEYS[1], 'cursor', ARGV[5], 'token', ARGV[3])
return {'ok', ARGV[5], ARGV[3]}
`

// unfencedStore is a store that commits with unfencedScript.
func unfencedStore(tb testing.TB, c redis.UniversalClient, name string) *RedisStore[source.Event] {
	s := newStore(tb, c, RedisConfig[source.Event]{Name: name})
	s.fence.script = redis.NewScript(unfencedScript)
	return s
}

// TestUnfencedScriptKeepsContract makes sure the benchmark compares like with like.
func TestUnfencedScriptKeepsContract(t *testing.T) {
	_, c := newRedis(t)
	s := unfencedStore(t, c, "unf")
	ctx := context.Background()
	if err := s.Commit(ctx, 1, 0, source.Range(0, 50)); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, 1, 0, source.Range(0, 1)); err == nil {
		t.Fatal("the unfenced script accepted a cursor conflict")
	}
	checkStore(t, readState(t, c, "unf"))
}

func percentile(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p * float64(len(sorted)-1))
	return float64(sorted[i].Nanoseconds()) / 1e3
}

// BenchmarkFenceOverhead measures the commit latency of the fenced script against the
// unfenced one, same client path and batch. The two alternate within one loop so that the
// noise of a shared machine hits both alike. Metrics: p50/p99 in µs and the overhead of
// the fence on the median in percent.
func BenchmarkFenceOverhead(b *testing.B) {
	_, c := newRedis(b)
	for _, batch := range []int{1, 100} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			name := uniqueName()
			fenced := newStore(b, c, RedisConfig[source.Event]{Name: name + "f"})
			unfenced := unfencedStore(b, c, name+"u")
			ctx := context.Background()
			var cursor int64
			var lf, lu []time.Duration
			// Warm up: load both scripts and the connection.
			for _, s := range []*RedisStore[source.Event]{fenced, unfenced} {
				if err := s.Commit(ctx, 1, 0, source.Range(0, int64(batch))); err != nil {
					b.Fatal(err)
				}
			}
			cursor = int64(batch)
			for i := 0; b.Loop(); i++ {
				evs := source.Range(cursor, cursor+int64(batch))
				for k, s := range []*RedisStore[source.Event]{fenced, unfenced} {
					if i%2 == 1 { // alternate which goes first
						s = []*RedisStore[source.Event]{unfenced, fenced}[k]
					}
					start := time.Now()
					if err := s.Commit(ctx, 1, cursor, evs); err != nil {
						b.Fatal(err)
					}
					d := time.Since(start)
					if s == fenced {
						lf = append(lf, d)
					} else {
						lu = append(lu, d)
					}
				}
				cursor += int64(batch)
			}
			slices.Sort(lf)
			slices.Sort(lu)
			f50, u50 := percentile(lf, 0.5), percentile(lu, 0.5)
			b.ReportMetric(f50, "fenced-p50-µs")
			b.ReportMetric(percentile(lf, 0.99), "fenced-p99-µs")
			b.ReportMetric(u50, "unfenced-p50-µs")
			b.ReportMetric(percentile(lu, 0.99), "unfenced-p99-µs")
			if u50 > 0 {
				b.ReportMetric(100*(f50-u50)/u50, "overhead-%")
			}
		})
	}
}

// BenchmarkListenerThroughput runs a listener against an in-memory source and a real
// Redis, and reports events/s. One b.N is one event.
func BenchmarkListenerThroughput(b *testing.B) {
	_, c := newRedis(b)
	for _, batch := range []int{100, 250, 500, 1000} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			total := int64(b.N)
			src := &memSource{}
			src.avail.Store(total)
			store := newStore(b, c, RedisConfig[source.Event]{Name: uniqueName()})
			m := newCountingMetrics(total)
			l, err := New(Config[source.Event]{Store: store, Source: src, BatchSize: batch, Metrics: m})
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			b.ResetTimer()
			start := time.Now()
			done := runAsync(ctx, l, 1)
			select {
			case <-m.reached:
			case err := <-done:
				cancel()
				b.Fatalf("Run returned early: %v", err)
			}
			elapsed := time.Since(start)
			b.StopTimer()
			cancel()
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(total)/elapsed.Seconds(), "events/s")
		})
	}
}
