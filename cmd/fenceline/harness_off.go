//go:build !chaos

package main

import (
	"fmt"
	"io"

	"github.com/fenceline/fenceline/node"
)

// The harness (chaos, validate, soak) is not in a default build: it embeds the toxiproxy
// server and the broken variants, which a production binary must not carry.
const chaosOnly = " (chaos build only)"

var (
	runChaos      = chaosBuildOnly("chaos")
	runValidate   = chaosBuildOnly("validate")
	runSoak       = chaosBuildOnly("soak")
	runSoakReport = chaosBuildOnly("soak-report")
	runTargets    = chaosBuildOnly("targets")
	runShrink     = chaosBuildOnly("shrink")
	runNodeCheck  = chaosBuildOnly("node-check")
	runTopologies = chaosBuildOnly("topologies")
	runBusRelay   = chaosBuildOnly("bus-relay")
)

// chaosBuildOnly is a harness command in a default build: one line saying which binary
// has it, exit 2.
func chaosBuildOnly(name string) func([]string, io.Writer, io.Writer) int {
	return func(_ []string, _, stderr io.Writer) int {
		fmt.Fprintf(stderr, "fenceline %s: the chaos harness is not in this build; %s\n", name, node.ChaosBuildHint)
		return exitUsage
	}
}
