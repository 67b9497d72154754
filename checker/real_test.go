package checker_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/source"
)

// Real recorded runs, as porcupine replays real Jepsen logs: each directory under
// testdata/real was written by `fenceline chaos` (8 s of chaos, 3 local nodes, lease
// 2 s) and trimmed to what the checker reads (no logs, no Redis files, no report):
//
//	reference-valid            --seed 1 (every fault kind; a kill and a pause ran)
//	no-fence-delay-invalid     --seed 1 --variant no-fence --nemesis pause,delay
//	unknown-outcomes-resolved  --seed 3 --nemesis partition-blackhole,delay
//
// They pin the checker's verdicts on histories no simulator wrote.
type realRun struct {
	name    string
	verdict checker.Verdict
	// invalid lists the checks that must find a violation, notApplicable those that do
	// not apply; every other check is valid.
	invalid, notApplicable []string
	// unknownCommits is how many commits of unknown outcome the history has; every one
	// must be resolved by the audit stream.
	unknownCommits int
}

// withoutTakeover: the stored runs' nodes did not take over on disconnect.
var withoutTakeover = []string{checker.CheckTakeoverWindow}

var realRuns = []realRun{
	{name: "reference-valid", verdict: checker.Valid, notApplicable: withoutTakeover},
	{name: "no-fence-delay-invalid", verdict: checker.Invalid, unknownCommits: 1, notApplicable: withoutTakeover,
		invalid: []string{checker.CheckLinearizability, checker.CheckStaleWrite, checker.CheckExactlyOnce, checker.CheckCursorMonotonic}},
	{name: "unknown-outcomes-resolved", verdict: checker.Valid, unknownCommits: 2, notApplicable: withoutTakeover},
}

func TestRealRuns(t *testing.T) {
	for _, rr := range realRuns {
		t.Run(rr.name, func(t *testing.T) {
			t.Parallel()
			run, err := history.LoadRun(filepath.Join("testdata", "real", rr.name))
			if err != nil {
				t.Fatal(err)
			}
			if run.Store == nil || run.Events.Len() == 0 || len(run.Warnings) > 0 {
				t.Fatalf("store %v, %d events, warnings %v", run.Store != nil, run.Events.Len(), run.Warnings)
			}
			res, err := checker.Check(context.Background(), run, checker.Options{ExpectedBalances: source.Balances, OutDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict != rr.verdict {
				t.Errorf("verdict %s, want %s", res.Verdict, rr.verdict)
			}
			bad := map[string]bool{}
			for _, c := range rr.invalid {
				bad[c] = true
			}
			for _, c := range res.Checks {
				want := checker.Valid
				switch {
				case bad[c.Name]:
					want = checker.Invalid
				case slices.Contains(rr.notApplicable, c.Name):
					want = checker.NotApplicable
				}
				if c.Verdict != want {
					t.Errorf("%s: %s (%s), want %s", c.Name, c.Verdict, c.Message, want)
				}
				if c.Verdict == checker.Invalid && len(c.Offending) == 0 {
					t.Errorf("%s is invalid with no violation named", c.Name)
				}
			}
			if res.Ops.UnknownCommits != rr.unknownCommits || res.Ops.ResolvedByAudit != rr.unknownCommits {
				t.Errorf("%d unknown commits, %d resolved by the audit stream; want %d, all resolved",
					res.Ops.UnknownCommits, res.Ops.ResolvedByAudit, rr.unknownCommits)
			}
		})
	}
}
