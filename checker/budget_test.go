package checker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseBudgets(t *testing.T) {
	got, err := ParseBudgets(" kill.p99=2.5s, stop.max=50ms ")
	want := []Budget{{"kill", "p99", 2500 * time.Millisecond}, {"stop", "max", 50 * time.Millisecond}}
	if err != nil || len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("ParseBudgets = %v, %v; want %v", got, err, want)
	}
	if got, err := ParseBudgets(""); err != nil || got != nil {
		t.Errorf("empty: %v, %v", got, err)
	}
	for _, bad := range []string{"kill", "kill.p99", "kill.p77=1s", ".p99=1s", "kill.p99=0s", "kill.p99=fast"} {
		if _, err := ParseBudgets(bad); !errors.Is(err, ErrBadBudget) {
			t.Errorf("ParseBudgets(%q) = %v, want ErrBadBudget", bad, err)
		}
	}
}

// A budget is judged against the failover windows: one that a window exceeds makes the
// run invalid, dated at that window's first commit; a generous one passes.
func TestFailoverBudget(t *testing.T) {
	run := newSim(simConfig{Seed: 3, Ops: 3000, FaultEvery: 100, Faults: []string{"kill"}}).run()
	strict, _ := ParseBudgets("kill.p99=1ms")
	res, err := Check(context.Background(), run, Options{Budgets: strict})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Check(CheckFailoverBudget)
	if len(res.Windows) == 0 || c == nil || c.Verdict != Invalid || res.Verdict != Invalid ||
		c.FirstViolation != res.Windows[0].FirstNew || !strings.Contains(c.Offending[0], "budget kill.p99=1ms exceeded") {
		t.Fatalf("strict budget: %+v (windows %d)", c, len(res.Windows))
	}
	generous, _ := ParseBudgets("kill.p99=1h,stop.max=1ns") // no stop window: nothing to judge
	res, err = Check(context.Background(), run, Options{Budgets: generous})
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Check(CheckFailoverBudget); c == nil || c.Verdict != Valid {
		t.Fatalf("generous budget: %+v", c)
	}
	if res, _ := Check(context.Background(), run, Options{}); res.Check(CheckFailoverBudget) != nil {
		t.Error("the budget check ran without a budget")
	}
}

// A budget over fewer than FewSamples windows is judged, and says what it stood on; a
// budget with no window of its kind says it judged nothing.
func TestFailoverBudgetSaysHowManyWindows(t *testing.T) {
	res := &Result{Failover: []FailoverStats{{Fault: "kill", ToNewToken: Distribution{Count: 2, P50: time.Second, P99: 3 * time.Second, Max: 3 * time.Second}}},
		Windows: []Window{{Fault: "kill", ToNewToken: 3 * time.Second, FirstNew: 42}}}
	strict, _ := ParseBudgets("kill.p99=2s")
	if c := failoverBudget(res, strict); c.Verdict != Invalid || !strings.Contains(c.Offending[0], "p99 of the kill windows is 3s (only 2 windows, fewer than 5)") {
		t.Errorf("a breach on 2 windows: %+v", c)
	}
	loose, _ := ParseBudgets("kill.p99=5s,pause.p99=1s")
	c := failoverBudget(res, loose)
	if c.Verdict != Valid || !strings.Contains(c.Message, "kill.p99=5s 3s (only 2 windows, fewer than 5)") ||
		!strings.Contains(c.Message, "pause.p99=1s not judged (no pause window)") {
		t.Errorf("met on 2 windows, none of pause: %+v", c)
	}
}
