package harness

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/nemesis"
)

// RedisUnavailable is the fault kind the harness records for a Redis outage it did not
// cause: its probe found Redis unanswering while no Redis fault of the schedule was in
// force. A failover window that such an outage opened is attributed to it, not to a
// scheduled fault that happened to fall inside it.
const RedisUnavailable = history.FaultRedisUnavailable

// monitor watches, for the whole run, what the schedule does not control: whether Redis
// answers (a Redis killed or stopped behind the harness's back), whether the run
// directory's disk has room, and whether every node can still write its history. A
// condition that makes the record untrustworthy ends the run (fatal), promptly.
type monitor struct {
	r        *runner
	interval time.Duration

	mu sync.Mutex
	// redisFault is set while a Redis fault of the schedule is in force, and until
	// Redis first answers after its heal: outages then are the harness's own.
	redisFault bool
	healed     bool
	outage     *outage
	seq        int

	err   atomic.Pointer[error] // the first condition that ends the run
	fatal chan error            // receives that condition too, to cancel the run at once; buffered
	done  chan struct{}
	wg    sync.WaitGroup
}

type outage struct {
	id    string
	start time.Time
}

func newMonitor(r *runner) *monitor {
	iv := r.cfg.MonitorInterval
	return &monitor{r: r, interval: iv, fatal: make(chan error, 1), done: make(chan struct{})}
}

// start runs the monitor until stop is called.
func (m *monitor) start() {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		t := time.NewTicker(m.interval)
		defer t.Stop()
		for {
			m.probe()
			select {
			case <-m.done:
				return
			case <-t.C:
			}
		}
	}()
}

// stop ends the monitor and closes an outage still open, as unknown: Redis had not
// answered again when the run stopped watching. Idempotent.
func (m *monitor) stop() {
	select {
	case <-m.done:
		return
	default:
	}
	close(m.done)
	m.wg.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	if o := m.outage; o != nil {
		m.outage = nil
		m.r.faults.Record(history.Event{ID: o.id, Type: history.Info, Kind: history.KindFault, Node: nemesis.AimRedis,
			Fault: RedisUnavailable, Reason: fmt.Sprintf("not injected by the harness: Redis still unavailable after %v", time.Since(o.start).Round(time.Millisecond))})
	}
}

// redisFaultInjected tells the monitor that the schedule takes Redis down now.
func (m *monitor) redisFaultInjected() {
	m.mu.Lock()
	m.redisFault, m.healed = true, false
	m.mu.Unlock()
}

// redisFaultHealed tells the monitor that the schedule's Redis fault was healed: the
// first answer of Redis after this ends the harness's own outage.
func (m *monitor) redisFaultHealed() {
	m.mu.Lock()
	m.healed = true
	m.mu.Unlock()
}

// fail reports a condition that ends the run; only the first one is kept.
func (m *monitor) fail(err error) {
	if m.err.CompareAndSwap(nil, &err) {
		m.r.log.Error("run-cannot-continue", slog.Any("error", err))
		m.fatal <- err
	}
}

// failure is the condition that ended the run, or nil.
func (m *monitor) failure() error {
	if p := m.err.Load(); p != nil {
		return *p
	}
	return nil
}

func (m *monitor) probe() {
	ctx, cancel := context.WithTimeout(context.Background(), m.interval+500*time.Millisecond)
	defer cancel()
	sent := time.Now()
	up := backend.PingRedis(ctx, m.r.c.RedisAddr()) == nil
	m.mu.Lock()
	switch {
	case up && m.redisFault && m.healed:
		m.redisFault = false
	case up && m.outage != nil:
		o := m.outage
		m.outage = nil
		d := time.Since(o.start).Round(time.Millisecond)
		m.r.faults.Record(history.Event{ID: o.id, Type: history.OK, Kind: history.KindFault, Node: nemesis.AimRedis,
			Fault: RedisUnavailable, Reason: fmt.Sprintf("not injected by the harness: Redis unavailable %v", d)})
		m.r.log.Warn("redis-available-again", slog.Duration("unavailable", d))
	case !up && !m.redisFault && m.outage == nil:
		m.seq++
		m.outage = &outage{id: fmt.Sprintf("outage-%d", m.seq), start: sent}
		// The outage began at the latest when the failed probe was sent.
		m.r.faults.Record(history.Event{ID: m.outage.id, Type: history.Invoke, Kind: history.KindFault, Node: nemesis.AimRedis,
			Fault: RedisUnavailable, Time: sent.UnixNano()})
		m.r.log.Warn("redis-unavailable", slog.String("why", "not injected by the harness"))
	}
	m.mu.Unlock()

	if err := m.r.faults.Err(); err != nil {
		m.fail(fmt.Errorf("writing %s: %w", history.FaultsFile, err))
	}
	if min := m.r.cfg.MinFreeDisk; min > 0 {
		if free, err := freeBytes(m.r.cfg.Dir); err == nil && free < min {
			m.fail(fmt.Errorf("the run directory's disk is full (%d bytes free, need %d): the histories cannot be trusted", free, min))
		}
	}
	for _, id := range m.r.c.Nodes() {
		// A short bound: a paused node does not answer, and must not delay the probes.
		nctx, ncancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		st, err := m.r.c.NodeStatus(nctx, id)
		ncancel()
		if err == nil && st.HistoryError != "" {
			m.fail(fmt.Errorf("node %s cannot write its history: %s", id, st.HistoryError))
		}
	}
}

// freeBytes is the space left to an unprivileged writer on dir's filesystem.
func freeBytes(dir string) (int64, error) {
	var s syscall.Statfs_t
	if err := syscall.Statfs(dir, &s); err != nil {
		return 0, err
	}
	return int64(s.Bavail) * s.Bsize, nil
}
