package judge

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenceline/fenceline/history"
)

// runSoFar copies the stored run src into a directory as a running run looks: no final
// read (store.json, audit.jsonl) and run.json still marked unfinished. It returns the
// directory and the store src had, whose audit stream SoFar is given as the harness's
// snapshot.
func runSoFar(t *testing.T, src string) (string, *history.Store) {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	full, err := history.LoadRun(dst)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{history.StoreFile, history.AuditFile, "expected.json"} {
		if err := os.Remove(filepath.Join(dst, f)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	var info history.RunInfo
	b, err := os.ReadFile(filepath.Join(dst, history.RunInfoFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &info); err != nil {
		t.Fatal(err)
	}
	info.End, info.HealTime, info.Interrupted = 0, 0, "the run did not finish"
	if err := history.WriteJSON(filepath.Join(dst, history.RunInfoFile), info); err != nil {
		t.Fatal(err)
	}
	return dst, full.Store
}

// TestSoFar: the check of a running run finds a stale write the store accepted, also
// when the run's final store is far behind (it is not judged), finds nothing in the
// reference's run, and stays silent on a directory with no history yet and on a
// violation only the final read shows (a lost event).
func TestSoFar(t *testing.T) {
	ctx := context.Background()
	dir, st := runSoFar(t, "../../checker/testdata/real/no-fence-delay-invalid")
	if got := SoFar(ctx, dir, st); !strings.Contains(got, " at t+") {
		t.Errorf("no-fence-delay-invalid: %q, want a violation and its time", got)
	}
	if got := SoFar(ctx, dir, nil); got != "" {
		// Without the audit stream its stale write is a commit of unknown outcome.
		t.Errorf("no-fence-delay-invalid without the audit stream: %q, want nothing", got)
	}
	dir, st = runSoFar(t, "../../checker/testdata/real/reference-valid")
	if got := SoFar(ctx, dir, st); got != "" {
		t.Errorf("reference-valid: %q, want nothing", got)
	}
	// A snapshot read early in the run: its cursor and token counter are behind what
	// the histories acknowledge since, which is no violation while the run goes on.
	early := *st
	early.Cursor, early.MaxToken, early.TokenCounter = 0, 0, 0
	if got := SoFar(ctx, dir, &early); got != "" {
		t.Errorf("reference-valid with an early store: %q, want nothing", got)
	}
	dir, st = runSoFar(t, "../../checker/testdata/lost-event")
	if got := SoFar(ctx, dir, st); got != "" {
		t.Errorf("lost-event (exactly-once, which needs the final read): %q, want nothing", got)
	}
	if got := SoFar(ctx, t.TempDir(), nil); got != "" {
		t.Errorf("empty directory: %q, want nothing", got)
	}
}
