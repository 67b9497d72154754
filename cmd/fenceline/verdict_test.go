package main

import (
	"encoding/json"
	"os"
	"path/filepath"
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
