//go:build chaos

package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/fenceline/fenceline/experiment/chaosrun"
)

func runChaos(args []string, stdout, stderr io.Writer) int {
	st := chaosrun.Settings{Spec: chaosrun.Spec{Cmd: "chaos"}}
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	st.AddFlags(fs)
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	spec, err := st.Resolve(fs)
	if err != nil {
		fmt.Fprintf(stderr, "fenceline chaos: %v\n", err)
		return exitUsage
	}
	// Ctrl-C cancels the run; the harness still heals, stops the nodes, reads the store
	// and writes what was recorded. A second Ctrl-C is ignored until cleanup is done.
	ctx, stop := interruptible()
	defer stop()
	return spec.Run(ctx, stdout, stderr).Code
}
