package proc

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/fenceline/fenceline/backend"
)

// ignoresTerm starts a process that ignores SIGTERM, as a node that hangs in its
// shutdown does.
func ignoresTerm(t *testing.T) *process {
	t.Helper()
	p, err := startProcess("sh", []string{"-c", "trap '' TERM; exec sleep 60"}, filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.wait(context.Background(), 0) })
	time.Sleep(100 * time.Millisecond) // the trap is set before the signal comes
	return p
}

// A node that outlives its grace after SIGTERM is killed, and StopNode says so in a
// *backend.StopTimeoutError, which the mutants' stop-hang kill reads; the wait cut by its
// context says that instead.
func TestStopNodeHung(t *testing.T) {
	t.Parallel()
	l := &Backend{nodes: map[string]*localNode{"n1": {id: "n1", proc: ignoresTerm(t)}}}
	began := time.Now()
	err := l.StopNode(context.Background(), "n1")
	var hung *backend.StopTimeoutError
	if !errors.As(err, &hung) || hung.Node != "n1" || hung.Grace != stopGrace {
		t.Fatalf("StopNode: %v (%T), want a StopTimeoutError of n1", err, err)
	}
	if took := time.Since(began); took < stopGrace {
		t.Errorf("StopNode returned after %v, before its grace %v", took, stopGrace)
	}
	if l.Running("n1") {
		t.Error("n1 still runs after StopNode")
	}

	p := ignoresTerm(t)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err = p.wait(ctx, time.Minute)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errGraceOver) {
		t.Errorf("wait cut by its context: %v, want the context's error", err)
	}
}
