//go:build chaos

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/fenceline/fenceline/backend"
)

// runBusRelay serves the docker backend's cluster relays (the harness runs it in a
// container of the run's network): TCP relays, each of which can hold back what one
// sender sends, and their cuts over HTTP.
func runBusRelay(args []string, _, stderr io.Writer) int {
	fs := flag.NewFlagSet("bus-relay", flag.ContinueOnError)
	var relays []backend.RelaySpec
	fs.Func("relay", "a relay: NAME=LISTEN>UPSTREAM (repeatable)", func(v string) error {
		name, rest, ok1 := strings.Cut(v, "=")
		listen, upstream, ok2 := strings.Cut(rest, ">")
		if !ok1 || !ok2 || name == "" || listen == "" || upstream == "" {
			return fmt.Errorf("want NAME=LISTEN>UPSTREAM, got %q", v)
		}
		relays = append(relays, backend.RelaySpec{Name: name, Listen: listen, Upstream: upstream})
		return nil
	})
	control := fs.String("control", "127.0.0.1:7000", "address of the HTTP API of the cuts")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if len(relays) == 0 {
		fmt.Fprintln(stderr, "fenceline bus-relay: no --relay given")
		return exitUsage
	}
	srv, err := backend.NewRelayServer(relays)
	var ln net.Listener
	if err == nil {
		defer srv.Close()
		ln, err = net.Listen("tcp", *control)
	}
	if err == nil {
		ctx, stop := interruptible()
		defer stop()
		hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 5 * time.Second}
		go func() {
			<-ctx.Done()
			_ = hs.Close()
		}()
		fmt.Fprintf(stderr, "fenceline bus-relay: %d relays, control on %s\n", len(relays), ln.Addr())
		if err = hs.Serve(ln); errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "fenceline bus-relay: %v\n", err)
		return exitUsage
	}
	return exitOK
}
