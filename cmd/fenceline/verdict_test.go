package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
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
	// Interrupted before a node recorded anything: still the harness's own record of
	// an unfinished run, so unknown; the same directory not marked interrupted is bad
	// input.
	if err := os.RemoveAll(filepath.Join(dir, history.HistoryDir)); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCmd("check", dir); code != exitUnknown {
		t.Errorf("check of an interrupted run with no history: exit %d, want 3 (%s)", code, stderr)
	}
	info.Interrupted = ""
	if err := history.WriteJSON(p, info); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCmd("check", dir); code != exitUsage {
		t.Errorf("check of a run with no history: exit %d, want 2 (%s)", code, stderr)
	}
}

// fenceline node --check finds what a node would find at start, without connecting.
func TestNodeCheck(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string // "" = accepted
	}{
		{[]string{"--history", filepath.Join(dir, "h.jsonl")}, ""},
		{[]string{"--history", filepath.Join(dir, "missing", "h.jsonl")}, "--history"},
		{[]string{"--control", "127.0.0.1:99999"}, "--control"},
		{[]string{"--lease-ttl", "0"}, "need --lease-ttl > 0"},
		{[]string{"--batch", "0"}, "--batch >= 1"},
		{[]string{"--lease-ttl", "2s", "--renew-interval", "3s"}, "RenewInterval"},
	} {
		args := append([]string{"node", "--id", "n1", "--control", "127.0.0.1:0", "--check"}, tc.args...)
		code, _, stderr := runCmd(args...)
		switch {
		case tc.want == "" && code != exitOK:
			t.Errorf("%v: exit %d (%s), want 0", tc.args, code, stderr)
		case tc.want != "" && (code != exitUsage || !strings.Contains(stderr, tc.want)):
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "h.jsonl")); err == nil {
		t.Error("--check left the history file it created")
	}
}
