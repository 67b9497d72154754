//go:build chaos

package main

import "testing"

// Bad flags of fenceline topologies are usage errors that say what is wrong, before any
// run starts.
func TestTopologiesUsageErrors(t *testing.T) {
	wantUsage(t, []string{"topologies", "--out", t.TempDir()}, false, []usageCase{
		{[]string{"--backend", "k8s"}, `unknown --backend "k8s"`},
		{[]string{"--topology", "ring"}, `unknown --topology "ring"`},
		{[]string{"--only", "no-such-row"}, `no row matches --only "no-such-row"`},
		{[]string{"--seeds", "0", "--only", "cluster-none-redis-failover"}, "need --seeds >= 1"},
	})
}
