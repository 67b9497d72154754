//go:build chaos

package main

import (
	"strings"
	"testing"
)

// Bad flags of fenceline topologies are usage errors that say what is wrong, before any
// run starts.
func TestTopologiesUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--backend", "k8s"}, `unknown --backend "k8s"`},
		{[]string{"--topology", "ring"}, `unknown --topology "ring"`},
		{[]string{"--only", "no-such-row"}, `no row matches --only "no-such-row"`},
		{[]string{"--seeds", "0", "--only", "cluster-none-redis-failover"}, "need --seeds >= 1"},
	} {
		code, _, stderr := runCmd(append([]string{"topologies", "--out", t.TempDir()}, tc.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("fenceline topologies %s: exit %d, stderr %q; want 2 and %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
}
