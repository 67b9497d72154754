package checker

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
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
func TestWriteBigRun(t *testing.T) {
	dir := os.Getenv("FENCELINE_WRITE_RUN")
	if dir == "" {
		t.Skip("FENCELINE_WRITE_RUN not set")
	}
	n, err := strconv.Atoi(os.Getenv("FENCELINE_OPS"))
	if err != nil {
		t.Fatal("FENCELINE_OPS:", err)
	}
	run := bigRun(n)
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
		res.Verdict, len(run.Events), t1.Sub(t0).Round(time.Millisecond), loadPeak>>20, live>>20,
		t3.Sub(t2).Round(time.Millisecond), checkPeak>>20, rssBefore>>20, peakRSS()>>20)
	if res.Verdict != Valid {
		t.Errorf("verdict %s", res.Verdict)
	}
}
