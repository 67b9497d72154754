package checker

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/fenceline/fenceline/source"
	"testing"
	"time"

	"github.com/fenceline/fenceline/history"
)

// benchFaults are the scenarios of the large generated histories: leader failovers of
// every kind, faults on followers, and commits of unknown outcome.
var benchFaults = []string{"kill", "pause", "stop", "partition", "follower-kill", "redis-restart"}

func bigRun(ops int) *history.Run {
	return newSim(simConfig{Seed: 99, Ops: ops, FaultEvery: 2000, Faults: benchFaults}).run()
}

// peakRSS returns the process's peak resident set (VmHWM) in bytes, 0 if unknown.
func peakRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmHWM:")); ok {
			kb, _ := strconv.ParseInt(string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte("kB")))), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// resetPeakRSS makes VmHWM start again from the current RSS (Linux clear_refs 5).
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// heapSampler records the peak of the Go heap (live and not yet swept objects) while
// it runs. It reads runtime/metrics, which does not stop the world.
type heapSampler struct {
	peak atomic.Uint64
	stop chan struct{}
	wg   sync.WaitGroup
}

func startHeapSampler() *heapSampler {
	h := &heapSampler{stop: make(chan struct{})}
	h.wg.Go(func() {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > h.peak.Load() {
				h.peak.Store(v)
			}
			select {
			case <-h.stop:
				return
			case <-t.C:
			}
		}
	})
	return h
}

func (h *heapSampler) Stop() uint64 {
	close(h.stop)
	h.wg.Wait()
	return h.peak.Load()
}

func liveHeap() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func benchCheck(b *testing.B, ops int) {
	run := bigRun(ops)
	runtime.GC()
	b.ResetTimer()
	var peakHeap uint64
	var peakRes int64
	for b.Loop() {
		resetPeakRSS()
		h := startHeapSampler()
		res, err := Check(context.Background(), run, Options{ExpectedBalances: testBalances})
		peakHeap = max(peakHeap, h.Stop())
		peakRes = max(peakRes, peakRSS())
		if err != nil {
			b.Fatal(err)
		}
		if res.Verdict != Valid {
			for _, c := range res.Checks {
				b.Logf("%s %s: %s %q", c.Name, c.Verdict, c.Message, c.Offending)
			}
			b.Fatalf("verdict %s", res.Verdict)
		}
		if c := res.Check(CheckLinearizability); c != nil {
			b.ReportMetric(float64(c.Stats["ops"]), "store-ops")
			b.ReportMetric(float64(c.Stats["pieces"]), "pieces")
		}
	}
	b.ReportMetric(float64(peakHeap)/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(peakRes)/(1<<20), "peak-RSS-MB")
}

// BenchmarkCheck100k checks a generated valid history of 100,000 store operations.
func BenchmarkCheck100k(b *testing.B) { benchCheck(b, 100_000) }

// BenchmarkCheck1M checks a generated valid history of 1,000,000 store operations.
func BenchmarkCheck1M(b *testing.B) { benchCheck(b, 1_000_000) }

// BenchmarkLinearizabilityRegister measures the linearizability check on a history
// with concurrency everywhere (the register workload: 4 clients, 10,000 operations),
// where porcupine, not the sequential replay, does the work.
func BenchmarkLinearizabilityRegister(b *testing.B) {
	run := registerRun(5, 4, 10_000)
	p, err := parse(run)
	if err != nil {
		b.Fatal(err)
	}
	opts, _ := Options{Checks: []string{CheckLinearizability}}.withDefaults(0)
	for b.Loop() {
		ops := linOps(p)
		lr := checkLinearizable(context.Background(), ops, regState{}, opts)
		if lr.verdict != Valid {
			b.Fatal(lr.verdict)
		}
		b.ReportMetric(float64(lr.largest), "largest-piece")
	}
}

// TestWriteBigRun writes a generated run directory for measuring a full check from
// disk (see TestCheckRunDir): FENCELINE_WRITE_RUN=dir FENCELINE_OPS=1000000.
func TestWriteBigRun(t *testing.T) { writeGenerated(t, "FENCELINE_WRITE_RUN", bigRun) }

// writeGenerated writes the run gen makes of FENCELINE_OPS operations into the
// directory named by the environment variable env; the test is skipped without it.
func writeGenerated(t *testing.T, env string, gen func(ops int) *history.Run) {
	dir := os.Getenv(env)
	if dir == "" {
		t.Skip(env + " not set")
	}
	n, err := strconv.Atoi(os.Getenv("FENCELINE_OPS"))
	if err != nil {
		t.Fatal("FENCELINE_OPS:", err)
	}
	run := gen(n)
	// The simulated ledger stands in for the event source inside this package's tests;
	// a run written for `fenceline check` carries the balances the real source implies.
	run.Store.Balances = source.Balances(run.Store.Cursor)
	writeRun(t, run, dir)
}

// TestCheckRunDir loads and checks FENCELINE_RUN_DIR and reports time and memory; run
// the test binary under /usr/bin/time -v for the peak RSS of the whole process.
func TestCheckRunDir(t *testing.T) {
	dir := os.Getenv("FENCELINE_RUN_DIR")
	if dir == "" {
		t.Skip("FENCELINE_RUN_DIR not set")
	}
	h := startHeapSampler()
	t0 := time.Now()
	run, err := history.LoadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	t1 := time.Now()
	loadPeak := h.Stop()
	live := liveHeap()
	resetPeakRSS()
	rssBefore := peakRSS()
	h = startHeapSampler()
	t2 := time.Now()
	// TestWriteBigRun writes the balances the real source implies.
	res, err := Check(context.Background(), run, Options{ExpectedBalances: source.Balances})
	if err != nil {
		t.Fatal(err)
	}
	t3 := time.Now()
	checkPeak := h.Stop()
	for _, c := range res.Checks {
		t.Logf("%s %s: %s", c.Name, c.Verdict, c.Message)
	}
	t.Logf("verdict %s; %d events; LoadRun %v (peak heap %d MB); run in memory %d MB; Check %v (peak heap %d MB, RSS %d MB before, peak RSS %d MB)",
		res.Verdict, run.Events.Len(), t1.Sub(t0).Round(time.Millisecond), loadPeak>>20, live>>20,
		t3.Sub(t2).Round(time.Millisecond), checkPeak>>20, rssBefore>>20, peakRSS()>>20)
	if res.Verdict != Valid {
		t.Errorf("verdict %s", res.Verdict)
	}
}

// coarseRegisterRun simulates the register workload as nodes with a coarse clock record
// it: nclients clients each acquire a token of their own, then load and commit
// (cursor c → c+1) until told their token is stale, concurrently against one store
// that applies each operation at a random point of its window (0.05–0.5 ms); one commit
// in 20 has an unknown outcome. Every timestamp is then rounded down to a multiple of
// q, so that dozens of operations share each instant.
func coarseRegisterRun(seed uint64, nclients, nops int, q time.Duration) *history.Run {
	s := newSim(simConfig{Nodes: nclients})
	rng := rand.New(rand.NewPCG(seed, 3))
	for i := range s.nodes {
		s.nodes[i] = fmt.Sprintf("c%d", i+1)
	}
	type client struct {
		next          int64
		phase         int // 0 idle, 1 invoked, 2 applied
		inv           int
		tok, cursor   int64
		loaded        bool
		res           history.Event
		typ           history.Type
		unsure, apply bool
	}
	lat := func() int64 { return int64(50+rng.IntN(450)) * int64(time.Microsecond) }
	cs := make([]*client, nclients)
	for i := range cs {
		cs[i] = &client{next: s.now + lat()}
	}
	ops := 0
	for {
		ci := 0
		for i, c := range cs {
			if c.next < cs[ci].next {
				ci = i
			}
		}
		c := cs[ci]
		if c.phase == 0 && ops >= nops {
			if !slices.ContainsFunc(cs, func(c *client) bool { return c.phase != 0 }) {
				break
			}
			c.next = math.MaxInt64
			continue
		}
		s.now = c.next
		switch c.phase {
		case 0:
			switch {
			case c.tok == 0:
				c.inv = s.invoke(ci, history.KindAcquire, history.Event{})
			case !c.loaded:
				c.inv = s.invoke(ci, history.KindLoad, history.Event{})
				ops++
			default:
				c.inv = s.invoke(ci, history.KindCommit, history.Event{Token: c.tok, From: c.cursor, To: c.cursor + 1, Events: 1})
				ops++
			}
			c.phase = 1
		case 1:
			c.typ, c.res, c.unsure = history.OK, history.Event{}, false
			switch e := s.events[c.inv]; e.Kind {
			case history.KindAcquire:
				s.st.counter++
				c.res.Token = s.st.counter
			case history.KindLoad:
				c.res.Cursor, c.res.Token = s.st.cursor, s.st.maxTok
			default:
				c.res = history.Event{Token: e.Token, From: e.From, To: e.To, Events: e.Events}
				c.unsure = rng.IntN(20) == 0
				if c.unsure && rng.IntN(2) == 0 {
					break // never reached the store
				}
				if r := s.apply(c.inv); r != "ok" {
					c.typ, c.res.Error = history.Fail, r
				}
			}
			c.phase = 2
		case 2:
			kind := s.events[c.inv].Kind
			if c.unsure {
				c.typ, c.res.Error = history.Info, "i/o timeout"
			}
			s.complete(c.inv, c.typ, c.res)
			switch {
			case kind == history.KindAcquire:
				c.tok = c.res.Token
			case kind == history.KindLoad:
				c.cursor, c.loaded = c.res.Cursor, true
			case c.typ == history.OK:
				c.cursor = c.res.To
			case c.res.Error == history.ErrStaleToken:
				c.tok, c.loaded = 0, false
			default:
				c.loaded = false
			}
			c.phase = 0
		}
		c.next = s.now + lat()
	}
	round := func(t int64) int64 { return t - t%int64(q) }
	for i := range s.events {
		s.events[i].Time = round(s.events[i].Time)
	}
	history.SortByTime(s.events)
	return &history.Run{
		Info: history.RunInfo{Seed: int64(seed), Nodes: s.nodes, Workload: "register", Backend: "sim",
			Nemeses: []string{}, LeaseTTL: 2 * time.Second, Start: round(s.start), HealTime: round(s.start) + 1,
			End: round(s.now) + int64(q), Persistence: true, Election: "sim"},
		Events: history.Pack(s.events),
		Store:  s.st.final(),
	}
}

// TestWriteCoarseRun writes a coarse-clock register run directory for `make
// bench-checker-coarse`: FENCELINE_WRITE_RUN=dir FENCELINE_OPS=236000.
func TestWriteCoarseRun(t *testing.T) {
	writeGenerated(t, "FENCELINE_WRITE_COARSE_RUN", func(n int) *history.Run { return coarseRegisterRun(7, 8, n, 16*time.Millisecond) })
}

// TestCoarseClockRegister: a register run whose timestamps are rounded to 16 ms is
// decided, and valid, where porcupine on the same operations does not finish.
func TestCoarseClockRegister(t *testing.T) {
	n := 40_000
	if raceEnabled || testing.Short() {
		n = 4_000
	}
	run := coarseRegisterRun(7, 8, n, 16*time.Millisecond)
	t0 := time.Now()
	res, err := Check(context.Background(), run, Options{ExpectedBalances: testBalances, PieceTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Checks {
		if c.Verdict != Valid && c.Verdict != NotApplicable {
			t.Errorf("%s %s: %s %q", c.Name, c.Verdict, c.Message, c.Offending)
		}
	}
	c := res.Check(CheckLinearizability)
	if c.Stats["decided_by_chain"] != 1 {
		t.Fatalf("%s: %s", c.Verdict, c.Message)
	}
	t.Logf("%d operations, 16 ms clock: %s in %v", n, c.Message, time.Since(t0).Round(time.Millisecond))
	// The same run with a stale read is invalid: a load late in the run returns what
	// a load early in the run returned.
	stale := staleRead(t, run)
	res, err = Check(context.Background(), run, Options{Checks: []string{CheckLinearizability}, PieceTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Check(CheckLinearizability); c.Verdict != Invalid || len(c.Offending) != 2 || !strings.Contains(strings.Join(c.Offending, "\n"), fmt.Sprintf(" load %s: cursor=%d token=%d ", stale.ID, stale.Cursor, stale.Token)) {
		t.Errorf("corrupted load: %s: %s %q", c.Verdict, c.Message, c.Offending)
	}
}
