//go:build chaos && failpoints

package validate_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/internal/testbin"
	"github.com/fenceline/fenceline/variants"
)

func TestMain(m *testing.M) { testbin.Main(m) }

// The zoo's short cases, each through the real binary as the zoo runs it (stopped at
// the first violation), side by side:
//
//   - cilium#42920's work that goes on a lease TTL past its term, at the default settings
//     (60 s, every fault, the probes first), must be caught, and the run must end soon
//     after: the load-race probe catches it at about t+5.4s on seed 1 and the whole run
//     takes about 11 s instead of two minutes.
//     (stale-observed-record, caught by lease-exclusion, was caught here at t+14.2s by an
//     overlap of 105 ms, too close to the 100 ms tolerance for a test that must not
//     flake.)
//   - Redlock over three servers under its own fault alone (redlock-restart), 10 s: the
//     probe's fault strikes within the first lease and must be caught by lease-exclusion
//     or lease-grant; with no fault the same deployment must be valid, so that it is the
//     restart, not the Redlock servers, that breaks it, and must run its course.
func TestZooCaseCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos runs of up to 20 s and the probes")
	}
	bin := testbin.Fenceline(t)
	for _, c := range []struct {
		name, variant, duration, nemesis string
		want                             int
		checks                           []string // the checks that may find it first; nil: any
	}{
		{"work-after-deadline", variants.WorkAfterDeadline, "60s", "all", 1, nil},
		{"redlock-restart", variants.RedlockMajority, "10s", "redlock-restart", 1, []string{checker.CheckLeaseExclusion, checker.CheckLeaseGrant}},
		{"redlock-no-fault", variants.RedlockMajority, "10s", "none", 0, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			zooCase(t, bin, c.variant, c.duration, c.nemesis, c.want, c.checks)
		})
	}
}

func zooCase(t *testing.T, bin, variant, duration, nemesis string, want int, checks []string) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "chaos", "--variant", variant, "--duration", duration, "--nemesis", nemesis,
		"--seed", "1", "--quiet", "--stop-at-violation", "--out", out)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if code != want {
		t.Fatalf("fenceline chaos --variant %s --nemesis %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", variant, nemesis, code, want, stdout.String(), stderr.String())
	}
	b, err := os.ReadFile(filepath.Join(out, "latest", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Run struct {
			Stopped  string        `json:"stopped_at_violation"`
			Duration time.Duration `json:"duration_ns"`
			HealAt   time.Duration `json:"heal_at_ns"`
		} `json:"run"`
		Verdict        checker.Verdict `json:"verdict"`
		FirstViolation *struct {
			Check       string `json:"check"`
			At          int64  `json:"at_ns"`
			Description string `json:"description"`
		} `json:"first_violation"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if want == 0 {
		if res.Run.Stopped != "" {
			t.Errorf("a valid run was stopped at a violation: %s", res.Run.Stopped)
		}
		return
	}
	if res.Run.Stopped == "" || res.Run.HealAt >= res.Run.Duration {
		t.Errorf("not stopped at its violation: stopped %q, final heal at %v of a %v chaos phase", res.Run.Stopped, res.Run.HealAt, res.Run.Duration)
	}
	if res.Verdict != checker.Invalid || res.FirstViolation == nil {
		t.Fatalf("results.json: verdict %s, first violation %+v", res.Verdict, res.FirstViolation)
	}
	if checks != nil && !slices.Contains(checks, res.FirstViolation.Check) {
		t.Errorf("first caught by %s, want one of %v: %s", res.FirstViolation.Check, checks, res.FirstViolation.Description)
	}
	t.Logf("caught by %s at t+%.1fs (stopped at %s, final heal at t+%.1fs): %s", res.FirstViolation.Check, float64(res.FirstViolation.At)/1e9,
		res.Run.Stopped, res.Run.HealAt.Seconds(), res.FirstViolation.Description)
}
