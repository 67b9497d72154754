package checker_test

import (
	"context"
	"strings"
	"testing"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/history"
)

// TestNoFenceIsNotApplicable: a run of a target without a fence gets no-stale-write
// "not applicable", never a pass, and the other checks still judge it: the stale write
// of testdata/stale-write still makes it invalid.
func TestNoFenceIsNotApplicable(t *testing.T) {
	for dir, want := range map[string]checker.Verdict{
		"testdata/clean-failovers": checker.Valid,
		"testdata/stale-write":     checker.Invalid,
	} {
		run, err := history.LoadRun(dir)
		if err != nil {
			t.Fatal(err)
		}
		run.Info.NoFence, run.Info.Target = true, "redsync"
		res, err := checker.Check(context.Background(), run, checker.Options{})
		if err != nil {
			t.Fatal(err)
		}
		sw := res.Check(checker.CheckStaleWrite)
		if sw == nil || sw.Verdict != checker.NotApplicable || !strings.Contains(sw.Message, "not applicable, no fence") {
			t.Errorf("%s: no-stale-write = %+v, want not applicable, no fence", dir, sw)
		}
		if res.Verdict != want {
			t.Errorf("%s: verdict %s, want %s", dir, res.Verdict, want)
		}
	}
	if v := checker.Combine(checker.NotApplicable, checker.Valid); v != checker.Valid {
		t.Errorf("Combine(not-applicable, valid) = %s, want valid", v)
	}
}
