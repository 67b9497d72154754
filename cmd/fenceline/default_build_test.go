//go:build !chaos

package main

import (
	"strings"
	"testing"
)

// A default build runs the reference only: a broken variant, the fault hooks, the
// register workload and the harness's commands each say, in one line and with exit 2,
// that they need a chaos build.
func TestDefaultBuildRefusesChaosOnly(t *testing.T) {
	t.Setenv(passwordEnv, "")
	for _, args := range [][]string{
		{"node", "--id", "n1", "--variant", "no-fence"},
		{"node", "--id", "n1", "--variant", "no-fence", "--chaos"},
		{"node", "--id", "n1", "--variant", "nonsense", "--chaos"},
		{"node", "--id", "n1", "--chaos"},
		{"node", "--id", "n1", "--chaos", "--workload", "register"},
		{"node", "--id", "n1", "--chaos", "--check"},
		{"chaos", "--duration", "1s"},
		{"validate"},
		{"soak"},
		{"soak-report", "x"},
	} {
		code, stdout, stderr := runCmd(args...)
		line := strings.TrimSpace(stderr)
		if code != exitUsage || !strings.Contains(line, "chaos build") || strings.Contains(line, "\n") || stdout != "" {
			t.Errorf("fenceline %s: exit %d, stderr %q; want 2 and one line naming the chaos build", strings.Join(args, " "), code, stderr)
		}
	}
	// The reference needs no chaos build.
	if code, _, stderr := runCmd("node", "--id", "n1", "--control", "127.0.0.1:0", "--check"); code != exitOK {
		t.Errorf("node --check of the reference: exit %d: %s", code, stderr)
	}
}
