//go:build !chaos

package main

import "io"

// chaosBuild: the harness (chaos, validate, soak, ...) is not in a default build: it
// embeds the toxiproxy server and the broken variants, which a production binary must
// not carry. cli.Program answers its commands with one line saying which binary has them.
const chaosBuild = false

var runChaos, runValidate, runSoak, runSoakReport, runTargets, runShrink, runNodeCheck, runTopologies, runBusRelay, runMutants func([]string, io.Writer, io.Writer) int
