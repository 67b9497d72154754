package proc

import (
	"context"
	"testing"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/internal/testbin"
)

// StartT starts a local cluster for a test, from a freshly built fenceline binary,
// in spec.Dir (default: a temporary directory), and closes it when the test ends.
func StartT(tb testing.TB, spec backend.Spec) *Backend {
	tb.Helper()
	if spec.Dir == "" {
		spec.Dir = tb.TempDir()
	}
	spec.Node.Chaos = true
	l, err := Start(context.Background(), Config{Spec: spec, Binary: testbin.Fenceline(tb)})
	if err != nil {
		tb.Fatalf("start local cluster: %v", err)
	}
	tb.Cleanup(func() { _ = l.Close(context.Background()) })
	return l
}
