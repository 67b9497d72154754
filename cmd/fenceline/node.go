package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/fenceline/fenceline/node"
)

func runNode(args []string, stdout, stderr io.Writer) int {
	ctx, stop := interruptible()
	defer stop()
	return runNodeContext(ctx, args, stderr)
}

// runNodeContext is runNode until ctx is done.
func runNodeContext(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	flags, conn := node.AddFlags(fs)
	check := fs.Bool("check", false, "check the flags and the configuration (and that --control can be bound and --history written) without connecting to anything; exit 0 or 2")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	c, err := flags.WithConnection(conn)
	switch {
	case err != nil:
	case *check:
		err = node.Check(c)
	default:
		err = node.Run(ctx, c, stderr)
	}
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "fenceline node: %v\n", err)
	if errors.Is(err, node.ErrUsage) {
		return exitUsage
	}
	return exitUnknown
}
