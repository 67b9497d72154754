// Package testbin builds the fenceline command once per test process, for tests that
// run real node processes. It builds the chaos build (-tags chaos,failpoints): the
// harness starts its nodes with --chaos, and only a chaos build has the fault hooks,
// the failpoints and the variants. Its Main and MainWith are whole TestMains, for those
// tests and for tests that share one server.
package testbin

import (
	"fmt"
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

// MainWith is the whole TestMain of a test binary whose tests share one server (its
// examples, which take no testing.TB, among them): start starts the server in a fresh
// temporary directory and returns what stops it. After the tests the server is
// stopped, the directory and the binary removed, and the process exits with the tests'
// code. A server that does not start fails the binary: it is never skipped.
func MainWith(m *testing.M, start func(dir string) (stop func(), err error)) {
	dir, err := os.MkdirTemp("", "fenceline-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	stop, err := start(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	stop()
	os.RemoveAll(dir)
	Cleanup()
	os.Exit(code)
}

// Cleanup removes the binary; call it from TestMain after m.Run (Main does).
func Cleanup() {
	if path != "" {
		os.RemoveAll(filepath.Dir(path))
	}
}
