//go:build chaos

package soak

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fenceline/fenceline/election"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/reports"
)

// TestRun describes a synthetic finished run, for tests of what reads soaks.
type TestRun struct {
	// Verdict is the checker's verdict. Default Valid.
	Verdict checker.Verdict
	// StartCursor is where the run's cursor began (a boundary start); Cursor the final
	// cursor; Sink the sink (default: events StartCursor+1..Cursor once each).
	StartCursor int64
	Cursor      int64
	Sink        []int64
	// LeaderChanges and Failover are the checker's figures.
	LeaderChanges int
	Failover      []checker.FailoverStats
	// Interrupted marks the run as stopped early.
	Interrupted string
	// RedisPeakMemory is recorded in run.json.
	RedisPeakMemory int64
}

// WriteTestRun writes run directory dir of a synthetic run with seed: run.json and a
// results.json rendered by package reports from tr.
func WriteTestRun(tb testing.TB, dir string, seed int64, tr TestRun) {
	tb.Helper()
	if tr.Verdict == "" {
		tr.Verdict = checker.Valid
	}
	sink := tr.Sink
	if sink == nil {
		for i := tr.StartCursor + 1; i <= tr.Cursor; i++ {
			sink = append(sink, i)
		}
	}
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano()
	run := &history.Run{Dir: dir,
		Info: history.RunInfo{Seed: seed, Nodes: []string{"n1", "n2", "n3"}, Workload: "listener", Backend: "local",
			Nemeses: []string{"kill"}, LeaseTTL: election.DefaultLeaseTTL, Duration: 5 * time.Second, Start: start,
			HealTime: start + int64(5*time.Second), End: start + int64(6*time.Second), Persistence: true,
			Election: "fenceline", Interrupted: tr.Interrupted, RedisPeakMemory: tr.RedisPeakMemory,
			StartCursor: tr.StartCursor},
		Store: &history.Store{Cursor: tr.Cursor, MaxToken: 2, TokenCounter: 2, Sink: sink, Balances: map[string]int64{}},
	}
	eo := checker.CheckResult{Name: checker.CheckExactlyOnce, Verdict: tr.Verdict, Message: "synthetic"}
	res := &checker.Result{Verdict: tr.Verdict, Checks: []checker.CheckResult{eo}, Failover: tr.Failover,
		LeaderChanges: tr.LeaderChanges, Start: start}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := history.WriteJSON(filepath.Join(dir, history.RunInfoFile), run.Info); err != nil {
		tb.Fatal(err)
	}
	var b bytes.Buffer
	if err := reports.WriteResults(&b, run, res); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ResultsFile), b.Bytes(), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// WriteTestSlot writes run index of a soak of planned runs with base seed seed0 into
// out/run-NNN as the soak leaves it: the run directory and, when marker is set, the
// marker written after the run. It returns the slot.
func WriteTestSlot(tb testing.TB, out string, index, planned int, seed0 int64, tr TestRun, marker bool) string {
	tb.Helper()
	seed := SeedOf(seed0, index)
	slot := filepath.Join(out, slotName(index))
	dir := filepath.Join(slot, fmt.Sprintf("20260102T030405Z-%d", seed))
	WriteTestRun(tb, dir, seed, tr)
	if marker {
		r := unknownRun(index, seed)
		r.Planned, r.Seed0, r.ExitCode, r.Dir = planned, seed0, 0, rel(out, dir)
		switch tr.Verdict {
		case checker.Invalid:
			r.ExitCode = 1
		case checker.Unknown:
			r.ExitCode = 3
		}
		r.RunnerPeakRSS = 40e6 + int64(index)*1e6
		r.fill(dir)
		if err := writeMarker(slot, r); err != nil {
			tb.Fatal(err)
		}
	}
	return slot
}
