//go:build chaos

package chaosrun

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

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
			d, err := NewRunDir(out, 42)
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
