package listener

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/harness/finalread"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/internal/redisserver"
	"github.com/fenceline/fenceline/source"
)

// newRedis starts a redis-server for the test and returns a client configured as the
// store needs it.
func newRedis(tb testing.TB) (*redisserver.Server, *redis.Client) {
	tb.Helper()
	srv := redisserver.New(tb)
	c := NewRedisClient(srv.Addr())
	tb.Cleanup(func() { c.Close() })
	return srv, c
}

func newStore(tb testing.TB, c redis.UniversalClient, cfg RedisConfig[source.Event]) *RedisStore[source.Event] {
	tb.Helper()
	if cfg.Node == "" {
		cfg.Node = "n1"
	}
	if cfg.Effects == nil {
		cfg.Effects = testEffects
	}
	s, err := NewRedisStore(c, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// syncBuffer is a bytes.Buffer safe for concurrent writers (recorder, logger).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testEffects are the demo ledger's effects written plainly, one HINCRBY per account
// side of each payment (so a field is often incremented twice in a batch) and one RPUSH
// of the ids, under the ledger's key names so that finalread can read them.
func testEffects(batch []source.Event) ([]Write, error) {
	var ws []Write
	ids := make([]string, len(batch))
	for i, e := range batch {
		ws = append(ws, HIncrBy("balances", e.From, -e.Amount), HIncrBy("balances", e.To, e.Amount))
		ids[i] = strconv.FormatInt(e.ID, 10)
	}
	return append(ws, RPush("sink", ids...)), nil
}

// readState reads the store of election name with the judge's reader.
func readState(tb testing.TB, c redis.UniversalClient, name string) *history.Store {
	tb.Helper()
	st, err := finalread.Read(context.Background(), c, name)
	if err != nil {
		tb.Fatal(err)
	}
	return st
}

// checkStore checks the final-state invariants: the sink is exactly 1..cursor and the
// balances are the oracle's.
func checkStore(tb testing.TB, st *history.Store) {
	tb.Helper()
	if int64(len(st.Sink)) != st.Cursor {
		tb.Fatalf("sink has %d events, cursor is %d", len(st.Sink), st.Cursor)
	}
	for i, id := range st.Sink {
		if id != int64(i+1) {
			tb.Fatalf("sink[%d] = %d, want %d", i, id, i+1)
		}
	}
	want := source.Balances(st.Cursor)
	if len(st.Balances) != len(want) {
		tb.Fatalf("balances %v, want %v", st.Balances, want)
	}
	for a, v := range want {
		if st.Balances[a] != v {
			tb.Fatalf("balance of %s = %d, want %d (all: %v)", a, st.Balances[a], v, st.Balances)
		}
	}
}

// memSource serves source.At in memory, up to avail events.
type memSource struct {
	avail atomic.Int64
	calls atomic.Int64
}

func (m *memSource) Fetch(ctx context.Context, cursor int64, limit int) ([]source.Event, error) {
	m.calls.Add(1)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	hi := min(m.avail.Load(), cursor+int64(limit))
	return source.Range(cursor, hi), nil
}

// ingestion is a listener's parts on a real Redis: a store (named name, recording every
// request) and a feed of total events with metrics that see them all applied.
type ingestion struct {
	c     *redis.Client
	rec   *recording
	store *RedisStore[source.Event]
	m     *countingMetrics
	src   *memSource
}

func newIngestion(tb testing.TB, name string, total int64) *ingestion {
	tb.Helper()
	_, c := newRedis(tb)
	in := &ingestion{c: c, rec: &recording{}, m: newCountingMetrics(total), src: &memSource{}}
	in.store = newStore(tb, c, RedisConfig[source.Event]{Name: name, Recorder: in.rec})
	in.src.avail.Store(total)
	return in
}

// countingMetrics counts commit outcomes and applied events; reached is closed once
// target events have been applied (if target > 0).
type countingMetrics struct {
	mu       sync.Mutex
	outcomes map[Outcome]int
	applied  int64
	target   int64
	reached  chan struct{}
}

func newCountingMetrics(target int64) *countingMetrics {
	return &countingMetrics{outcomes: map[Outcome]int{}, target: target, reached: make(chan struct{})}
}

func (m *countingMetrics) ObserveCommit(o Outcome, events int, _ time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.outcomes[o]++
	if o == OutcomeOK {
		before := m.applied
		m.applied += int64(events)
		if m.target > 0 && before < m.target && m.applied >= m.target {
			close(m.reached)
		}
	}
}

func (m *countingMetrics) count(o Outcome) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.outcomes[o]
}

// waitFor polls cond every 10ms until it holds or the (generous) timeout passes.
func waitFor(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func loadCursor(tb testing.TB, s Store[source.Event]) int64 {
	tb.Helper()
	c, _, err := s.Load(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

var nameSeq atomic.Int64

// uniqueName returns a fresh election name, so runs on one server do not share keys.
func uniqueName() string { return fmt.Sprintf("t%d", nameSeq.Add(1)) }
