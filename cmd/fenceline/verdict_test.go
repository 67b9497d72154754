package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
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

// Runs started in the same second with the same seed and the same --out get a
// directory each, created exclusively; latest points at one of them.
func TestRunDirsAreExclusive(t *testing.T) {
	out := t.TempDir()
	const n = 16
	dirs := make(chan string, n)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := newRunDir(out, 42)
			if err != nil {
				errs <- err
				return
			}
			dirs <- d
		}()
	}
	wg.Wait()
	close(dirs)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	seen := map[string]bool{}
	for d := range dirs {
		if seen[d] {
			t.Errorf("directory %s handed out twice", d)
		}
		seen[d] = true
	}
	if len(seen) != n {
		t.Errorf("%d directories for %d runs", len(seen), n)
	}
	target, err := os.Readlink(filepath.Join(out, "latest"))
	if err != nil || !seen[filepath.Join(out, target)] {
		t.Errorf("latest -> %q (%v), not one of the runs", target, err)
	}
	left, _ := filepath.Glob(filepath.Join(out, ".latest-*"))
	if len(left) > 0 {
		t.Errorf("temporary links left behind: %v", left)
	}
}

// Values that used to become defaults silently, and inputs found bad only once a run had
// started, are usage errors before any run directory exists.
func TestChaosRejectsBadSettings(t *testing.T) {
	out := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--duration", "0"}, "need --duration > 0"},
		{[]string{"--lease-ttl", "0"}, "need --lease-ttl >= 100ms"},
		{[]string{"--nemesis", ""}, "--nemesis is empty"},
		{[]string{"--nodes", "1000"}, "at most 32 nodes"},
		{[]string{"--binary", "/nonexistent/fenceline"}, "not an executable file"},
		{[]string{"--binary", t.TempDir()}, "not an executable file"},
	} {
		args := append([]string{"chaos", "--out", out}, tc.args...)
		code, _, stderr := runCmd(args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("fenceline %s: exit %d, stderr %q; want exit 2 and %q", strings.Join(args, " "), code, stderr, tc.want)
		}
	}
	if left, _ := os.ReadDir(out); len(left) > 0 {
		t.Errorf("rejected runs left %d entries in --out", len(left))
	}
}

// Without redis-server in PATH the local backend cannot run: a usage error that says
// what to install.
func TestChaosWithoutRedisServer(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCmd("chaos", "--out", t.TempDir(), "--binary", bin, "--backend", "local")
	if code != exitUsage || !strings.Contains(stderr, "apt-get install -y redis-server") {
		t.Fatalf("exit %d, stderr %q; want 2 naming the package", code, stderr)
	}
}

// helperBinary is an executable that runs this test binary as fenceline (through
// TestHelperProcess), for --binary.
func helperBinary(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fenceline")
	script := "#!/bin/sh\nFENCELINE_HELPER_PROCESS=1 exec '" + os.Args[0] + "' -test.run='^TestHelperProcess$' -- \"$@\"\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// Settings the nodes would reject at start are found by `fenceline node --check` before
// the run: a usage error with the node's own message, and no run directory.
func TestChaosNodeRejectsSettings(t *testing.T) {
	out := t.TempDir()
	code, _, stderr := runCmd("chaos", "--out", out, "--binary", helperBinary(t), "--lease-ttl", "1000500us")
	if code != exitUsage || !strings.Contains(stderr, "whole number of milliseconds") {
		t.Fatalf("exit %d, stderr %q; want 2 with the node's message", code, stderr)
	}
	if left, _ := os.ReadDir(out); len(left) > 0 {
		t.Errorf("a rejected run left %d entries in --out", len(left))
	}
	code, _, stderr = runCmd("chaos", "--out", out, "--binary", "/bin/false")
	if code != exitUsage || !strings.Contains(stderr, "does not accept the nodes' settings") {
		t.Fatalf("--binary /bin/false: exit %d, stderr %q; want 2", code, stderr)
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
