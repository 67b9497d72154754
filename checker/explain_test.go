package checker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/history"
)

// staleCoarseRun is a coarse-clock register run in which a load late in the run returns
// the state an early load saw: not linearizable, and buried in concurrency.
func staleCoarseRun(t *testing.T) (*history.Run, history.Event) {
	t.Helper()
	run := coarseRegisterRun(7, 8, 4_000, 16*time.Millisecond)
	return run, staleRead(t, run)
}

// staleRead makes the first ok load past the middle of run return what its first ok
// load of a cursor above 0 returned, and returns the corrupted load.
func staleRead(t *testing.T, run *history.Run) history.Event {
	t.Helper()
	evs := run.Events.All()
	var early, stale *history.Event
	for i := range evs {
		e := &evs[i]
		if e.Kind != history.KindLoad || e.Type != history.OK || e.Cursor == 0 {
			continue
		}
		if early == nil {
			early = e
		} else if i > len(evs)/2 {
			e.Cursor, e.Token = early.Cursor, early.Token
			stale = e
			break
		}
	}
	if stale == nil {
		t.Fatal("no load to corrupt")
	}
	run.Events = history.Pack(evs)
	return *stale
}

// TestChainViolationExplained: when the chain decision proves a violation that porcupine
// cannot confirm (here every concurrent piece is too large for it), the result still
// names the operations that cannot be ordered and carries porcupine's visualization of
// a small piece around them.
func TestChainViolationExplained(t *testing.T) {
	run, stale := staleCoarseRun(t)
	dir := t.TempDir()
	res, err := Check(context.Background(), run, Options{Checks: []string{CheckLinearizability}, OutDir: dir, PieceOps: 1, MaxPieceOps: 1})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Check(CheckLinearizability)
	if c.Verdict != Invalid || !strings.Contains(c.Message, "porcupine's verdict on the pieces: unknown") {
		t.Fatalf("%s: %s", c.Verdict, c.Message)
	}
	want := fmt.Sprintf(" load %s: cursor=%d token=%d ", stale.ID, stale.Cursor, stale.Token)
	if !strings.Contains(strings.Join(c.Offending, "\n"), want) {
		t.Errorf("offending %q does not name the stale load (%q)", c.Offending, want)
	}
	if !strings.Contains(c.Message, "Porcupine finds the ") || !strings.Contains(c.Message, "not linearizable.") {
		t.Errorf("message does not say what porcupine found in the window: %s", c.Message)
	}
	t.Log(c.Message)
	if c.Visualization != chainVisualization {
		t.Fatalf("visualization %q, want %q (message: %s)", c.Visualization, chainVisualization, c.Message)
	}
	b, err := os.ReadFile(filepath.Join(dir, c.Visualization))
	if err != nil || !strings.Contains(string(b), "<html") {
		t.Errorf("visualization file: %v, %d bytes", err, len(b))
	}
}

// TestChainViolationUnwritable: a visualization that cannot be written is said so in
// the message, and the verdict and the offending operations stand.
func TestChainViolationUnwritable(t *testing.T) {
	run, _ := staleCoarseRun(t)
	res, err := Check(context.Background(), run, Options{Checks: []string{CheckLinearizability},
		OutDir: filepath.Join(t.TempDir(), "missing"), PieceOps: 1, MaxPieceOps: 1})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Check(CheckLinearizability)
	if c.Verdict != Invalid || c.Visualization != "" || len(c.Offending) == 0 || !strings.Contains(c.Message, "visualization not written") {
		t.Errorf("%s, visualization %q, offending %q: %s", c.Verdict, c.Visualization, c.Offending, c.Message)
	}
}
