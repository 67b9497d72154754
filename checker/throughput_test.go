package checker

import (
	"context"
	"strings"
	"testing"
	"time"
)

// throughputRun: n1 commits every 50 ms for 2 s, a kill fault on n2 from 2 s to 2.5 s,
// then n1 commits every `every` until 12 s.
func throughputRun(t *testing.T, every time.Duration) *Throughput {
	t.Helper()
	s := newSim(simConfig{Seed: 5})
	s.token = s.acquire(0)
	s.cursor, _ = s.load(0)
	s.some(10) // the first catch-up, back to back
	for s.now < s.start+int64(2*time.Second) {
		s.adv(50 * time.Millisecond)
		s.some(1)
	}
	id := s.injectFault("kill", "n2")
	s.adv(500 * time.Millisecond)
	s.healFault(id)
	for s.now < s.start+int64(12*time.Second) {
		s.adv(every)
		s.some(1)
	}
	res, err := Check(context.Background(), s.run(), Options{Checks: []string{CheckProgress}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Throughput == nil {
		t.Fatal("no throughput measured")
	}
	return res.Throughput
}

func TestThroughput(t *testing.T) {
	tp := throughputRun(t, 50*time.Millisecond)
	if r, ok := tp.Ratio(); !ok || r < 0.8 || r > 1.25 {
		t.Errorf("steady run: ratio %v %v (%+v), want about 1", r, ok, tp)
	}
	if tp.Warmup < 1500*time.Millisecond || tp.Outside < 7*time.Second {
		t.Errorf("spans: warm-up %v, outside %v", tp.Warmup, tp.Outside)
	}
	if why, slow := tp.Slow(); slow {
		t.Errorf("steady run flagged: %s", why)
	}
	// A quarter of the rate away from any fault: flagged.
	tp = throughputRun(t, 200*time.Millisecond)
	if r, ok := tp.Ratio(); !ok || r > 0.35 {
		t.Errorf("slowed run: ratio %v %v, want about 0.25", r, ok)
	}
	if why, slow := tp.Slow(); !slow || !strings.Contains(why, "outside fault windows") {
		t.Errorf("slowed run not flagged: %q", why)
	}
	// Both spans at a steady pace, but below half the source's rate: flagged.
	tp = throughputRun(t, 50*time.Millisecond)
	tp.SourceRate = 5 * tp.WarmupRate()
	if why, slow := tp.Slow(); !slow || !strings.Contains(why, "falls behind the feed") {
		t.Errorf("a leader behind its source not flagged: %q", why)
	}
}
