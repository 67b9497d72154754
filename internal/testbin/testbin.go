// Package testbin builds the fenceline command once per test process, for tests that
// run real node processes. It builds the chaos build (-tags chaos,failpoints): the
// harness starts its nodes with --chaos, and only a chaos build has the fault hooks,
// the failpoints and the variants.
package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	once sync.Once
	path string
	err  error
	out  []byte
)

// Fenceline returns the path of a freshly built fenceline binary (a chaos build). The binary lives in a
// directory removed when the test process exits through TestMain's Cleanup.
func Fenceline(tb testing.TB) string {
	tb.Helper()
	once.Do(func() {
		dir, e := os.MkdirTemp("", "fenceline-bin-")
		if e != nil {
			err = e
			return
		}
		path = filepath.Join(dir, "fenceline")
		cmd := exec.Command("go", "build", "-tags", "chaos,failpoints", "-o", path, "github.com/fenceline/fenceline/cmd/fenceline")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err = cmd.CombinedOutput()
	})
	if err != nil {
		tb.Fatalf("build fenceline: %v\n%s", err, out)
	}
	return path
}

// Main is the whole TestMain of a package whose tests use Fenceline: it runs the tests,
// removes the binary (Cleanup) and exits with the tests' code.
func Main(m *testing.M) {
	code := m.Run()
	Cleanup()
	os.Exit(code)
}

// Cleanup removes the binary; call it from TestMain after m.Run (Main does).
func Cleanup() {
	if path != "" {
		os.RemoveAll(filepath.Dir(path))
	}
}
