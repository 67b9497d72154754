package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"

	"github.com/fenceline/fenceline/node"
	"github.com/fenceline/fenceline/source"
)

func runSource(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("source", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:8000", "address to serve the feed on")
	rate := fs.Float64("rate", 0, "events per second (0: every event available at once)")
	backlog := fs.Int64("backlog", 0, "events available at start")
	addrFile := fs.String("addr-file", "", "write the bound address to this file (for --listen 127.0.0.1:0)")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	logger := slog.New(slog.NewJSONHandler(stderr, nil))
	srv, err := source.NewServer(source.Config{Rate: *rate, Backlog: *backlog, Logger: logger})
	var ln net.Listener
	if err == nil {
		ln, err = net.Listen("tcp", *listen)
	}
	if err == nil {
		err = node.WriteAddrFile(*addrFile, ln.Addr().String())
	}
	if err == nil {
		logger.Info("source-listening", slog.String("addr", ln.Addr().String()), slog.Float64("rate", *rate))
		ctx, stop := interruptible()
		defer stop()
		err = srv.Serve(ctx, ln)
	}
	if err != nil {
		fmt.Fprintf(stderr, "fenceline source: %v\n", err)
		return exitUsage
	}
	return exitOK
}
