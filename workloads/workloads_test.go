package workloads

import (
	"slices"
	"testing"

	"github.com/fenceline/fenceline/checker"
)

// The checks per workload: every check for listener and for a workload this build does
// not know (nothing skipped silently), all but leadership overlap for register.
func TestCheckerOptions(t *testing.T) {
	if o := CheckerOptions("listener", "d"); o.Checks != nil || o.OutDir != "d" || o.ExpectedBalances == nil {
		t.Errorf("listener: %+v", o)
	}
	if o := CheckerOptions("kv", "d"); o.Checks != nil {
		t.Errorf("unknown workload: checks %v, want all", o.Checks)
	}
	reg := CheckerOptions("register", "d").Checks
	if len(reg) == 0 || slices.Contains(reg, checker.CheckLeadershipOverlap) || !slices.Contains(reg, checker.CheckLinearizability) {
		t.Errorf("register: checks %v", reg)
	}
	reg[0] = "changed"
	if CheckerOptions("register", "d").Checks[0] == "changed" {
		t.Error("CheckerOptions shares its slice")
	}
}
