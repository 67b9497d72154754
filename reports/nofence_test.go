package reports

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenceline/fenceline/checker"
)

// TestNoFenceReport: a run of an unfenced target shows no-stale-write as not applicable
// in report.md and as <skipped> (with why) in a junit.xml that still validates; the run
// is still invalid because of the other checks.
func TestNoFenceReport(t *testing.T) {
	run, _ := loadStored(t, "fail")
	run.Info.NoFence, run.Info.Target = true, "redsync"
	res, err := checker.Check(context.Background(), run, checker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(run, res); err != nil {
		t.Fatal(err)
	}
	md := string(readFile(t, filepath.Join(run.Dir, MarkdownFile)))
	for _, want := range []string{"– not applicable", "target redsync", "redsync (no fence)", "INVALID"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	path := filepath.Join(run.Dir, JUnitFile)
	validateJUnit(t, path)
	junit := string(readFile(t, path))
	// Four checks do not apply to a target without a fence: no-stale-write, lease-grant
	// (the target's lock is not fenceline's Redis lease), step-down and takeover-window
	// (nor its elector).
	if !strings.Contains(junit, "<skipped>not applicable, no fence") || !strings.Contains(junit, "<skipped>the design under test (redsync)") ||
		!strings.Contains(junit, `skipped="4"`) {
		t.Errorf("junit.xml has not no-stale-write, lease-grant, step-down and takeover-window skipped:\n%s", junit)
	}
}
