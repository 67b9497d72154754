//go:build chaos

package validate

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/internal/exitcode"
	"github.com/fenceline/fenceline/variants"
)

func TestSummarizeZoo(t *testing.T) {
	vs := []variants.Variant{mustVariant(t, variants.StaleObservedRecord), mustVariant(t, variants.NeverTold)}
	runs := append(fakeRuns(variants.StaleObservedRecord, variants.StaleObservedRecord, 20, 20, 0),
		fakeRuns(variants.NeverTold, variants.NeverTold, 20, 19, 0)...)
	runs = append(runs, fakeRuns(variants.Reference, zooUnder, 20, 0, 0)...)
	rep := summarizeZoo(vs, runs)
	so, nt := rep.Variants[0], rep.Variants[1]
	// fakeRuns times detection i at 10s+i: 20 of them, median (nearest rank) 19s, p95 (the 19th) 28s.
	if so.Detected != 20 || so.Runs != 20 || so.Median != 19*time.Second || so.P95 != 28*time.Second ||
		so.CaughtBy[checker.CheckStaleWrite] != 20 || so.Status != statusSlow || !strings.HasPrefix(so.Source, "kubernetes/kubernetes#67651") {
		t.Errorf("stale-observed-record row %+v: caught 20 of 20, but a median of 19 s is SLOW", so)
	}
	if nt.Detected != 19 || nt.Status != statusFail {
		t.Errorf("never-told row %+v: 19 of 20 fails", nt)
	}
	if rep.Reference.Runs != 20 || rep.Reference.Valid != 20 || rep.Reference.Status != statusPass {
		t.Errorf("reference %+v", rep.Reference)
	}
	if rep.Outcome != statusFail || rep.exitCode() != exitcode.Invalid {
		t.Errorf("outcome %s, exit %d", rep.Outcome, rep.exitCode())
	}

	// Found in every run within the bar (median 10 s, p95 60 s) passes; a p95 beyond it
	// is SLOW, and fails the zoo.
	fast := fakeRuns(variants.StaleObservedRecord, variants.StaleObservedRecord, 20, 20, 0)
	for i := range fast {
		fast[i].FirstViolation.AfterStart = time.Duration(i+1) * 500 * time.Millisecond
	}
	ref := fakeRuns(variants.Reference, zooUnder, 20, 0, 0)
	if rep := summarizeZoo(vs[:1], append(slices.Clone(fast), ref...)); rep.Variants[0].Status != statusPass || rep.Outcome != statusPass || rep.exitCode() != exitcode.OK {
		t.Errorf("median 5 s, p95 9.5 s: %+v, outcome %s", rep.Variants[0], rep.Outcome)
	}
	fast[18].FirstViolation.AfterStart, fast[19].FirstViolation.AfterStart = 70*time.Second, 70*time.Second
	if rep := summarizeZoo(vs[:1], append(fast, ref...)); rep.Variants[0].Status != statusSlow || rep.Outcome != statusSlow || rep.exitCode() != exitcode.Invalid {
		t.Errorf("p95 70 s: %+v, outcome %s, exit %d", rep.Variants[0], rep.Outcome, rep.exitCode())
	}

	// A false alarm of the reference fails the zoo even when every bug is caught.
	runs = append(fakeRuns(variants.StaleObservedRecord, variants.StaleObservedRecord, 2, 2, 0), fakeRuns(variants.Reference, zooUnder, 2, 1, 0)...)
	if rep := summarizeZoo(vs[:1], runs); rep.Outcome != statusFail || rep.Reference.FalseAlarms != 1 || !strings.Contains(rep.Reference.Note, "FALSE ALARM") {
		t.Errorf("false alarm: %+v", rep.Reference)
	}

	dir := t.TempDir()
	rep.Command = "fenceline validate --zoo"
	if err := rep.save(dir); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, ZooMarkdown))
	if err != nil || !strings.Contains(string(md), "| stale-observed-record | kubernetes/kubernetes#67651") || !strings.Contains(string(md), "19.0 s") {
		t.Errorf("zoo.md (%v):\n%s", err, md)
	}
	if _, err := os.Stat(filepath.Join(dir, ZooJSONFile)); err != nil {
		t.Error(err)
	}
}

func TestNearestRank(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3}
	if got := nearestRank(ds, 0.95); got != 5 {
		t.Errorf("p95 of 1..5: %v", got)
	}
	if got := nearestRank(ds, 0.5); got != 3 {
		t.Errorf("p50 of 1..5: %v", got)
	}
	if nearestRank(nil, 0.95) != 0 || ds[0] != 5 {
		t.Error("empty, or the input was sorted in place")
	}
}

func TestZooNamesAreVariants(t *testing.T) {
	vs, err := PickVariants(strings.Join(ZooNames(), ","))
	if err != nil || len(vs) != len(variants.Zoo()) {
		t.Fatalf("%d variants, %v", len(vs), err)
	}
}
