package workloads

import (
	"maps"
	"slices"
	"testing"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/source"
)

// The checks per workload: every check for listener and for a workload this build does
// not know (nothing skipped silently), all but leadership overlap for register.
func TestCheckerOptions(t *testing.T) {
	if o := CheckerOptions(history.RunInfo{Workload: "listener"}, "d"); o.Checks != nil || o.OutDir != "d" || o.ExpectedBalances == nil {
		t.Errorf("listener: %+v", o)
	}
	if o := CheckerOptions(history.RunInfo{Workload: "kv"}, "d"); o.Checks != nil {
		t.Errorf("unknown workload: checks %v, want all", o.Checks)
	}
	reg := CheckerOptions(history.RunInfo{Workload: "register"}, "d").Checks
	if len(reg) == 0 || slices.Contains(reg, checker.CheckLeadershipOverlap) || !slices.Contains(reg, checker.CheckLinearizability) {
		t.Errorf("register: checks %v", reg)
	}
	reg[0] = "changed"
	if CheckerOptions(history.RunInfo{Workload: "register"}, "d").Checks[0] == "changed" {
		t.Error("CheckerOptions shares its slice")
	}
}

// A run that started at a boundary cursor is judged from there: the sink must hold the
// events after it, and the balances are theirs alone.
func TestCheckerOptionsStartCursor(t *testing.T) {
	const start = 1<<53 - 3
	o := CheckerOptions(history.RunInfo{Workload: "listener", StartCursor: start}, "d")
	if o.InitialCursor != start {
		t.Errorf("InitialCursor %d, want %d", o.InitialCursor, start)
	}
	want := map[string]int64{}
	for _, e := range []source.Event{source.At(start + 1), source.At(start + 2)} {
		want[e.From] -= e.Amount
		want[e.To] += e.Amount
	}
	if got := o.ExpectedBalances(start + 2); !maps.Equal(got, want) {
		t.Errorf("balances of events %d..%d: %v, want %v", start+1, start+2, got, want)
	}
}
