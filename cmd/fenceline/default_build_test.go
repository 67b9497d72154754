//go:build !chaos

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fenceline/fenceline/internal/failpoint"
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
		{"node", "--id", "n1", "--chaos", "--failpoint", "election/renew-before-send=block"},
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

// A default build carries no failpoint: no symbol of the package, no hook (election's
// hit is inlined away with its branch), not even a point's name among the binary's
// bytes. The same command built with -tags chaos,failpoints has all three, so the check
// can fail.
func TestDefaultBuildHasNoFailpoints(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command twice")
	}
	dir := t.TempDir()
	for _, b := range []struct {
		tags string
		want bool
	}{{"", false}, {"chaos,failpoints", true}} {
		bin := filepath.Join(dir, "fenceline"+strings.ReplaceAll(b.tags, ",", "-"))
		args := []string{"build", "-o", bin}
		if b.tags != "" {
			args = append(args, "-tags", b.tags)
		}
		if out, err := exec.Command("go", append(args, ".")...).CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		nm, err := exec.Command("go", "tool", "nm", bin).Output()
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		symbols := strings.Contains(string(nm), "internal/failpoint.")
		hook := strings.Contains(string(nm), "election.hit")
		names := slices.ContainsFunc(failpoint.Points(), func(p failpoint.Point) bool {
			return bytes.Contains(data, []byte(p.Name))
		})
		if symbols != b.want || names != b.want || (hook && !b.want) {
			t.Errorf("build with tags %q: failpoint symbols %v, election.hit %v, point names %v; want %v",
				b.tags, symbols, hook, names, b.want)
		}
	}
}
