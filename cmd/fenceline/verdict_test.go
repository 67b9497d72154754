package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/fenceline/fenceline/history"
)

// copyRun copies one of the reports package's stored runs into a temporary directory.
func copyRun(t *testing.T, name string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "reports", "testdata", "runs", name))); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A run that was interrupted is never a pass, whichever command judges it: check and
// report exit 3 on it although every check of what was recorded passes.
func TestInterruptedRunIsUnknown(t *testing.T) {
	dir := copyRun(t, "pass")
	p := filepath.Join(dir, history.RunInfoFile)
	var info history.RunInfo
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &info); err != nil {
		t.Fatal(err)
	}
	info.Interrupted = "context canceled"
	if err := history.WriteJSON(p, info); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"check", "report"} {
		code, stdout, stderr := runCmd(cmd, dir)
		if code != exitUnknown {
			t.Errorf("%s of an interrupted run: exit %d, want 3\n%s%s", cmd, code, stdout, stderr)
		}
	}
}
