//go:build chaos

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/fenceline/fenceline/backend"
)

// relayFlags collects --relay NAME=LISTEN>UPSTREAM, repeatable.
type relayFlags []backend.RelaySpec

func (r *relayFlags) String() string { return fmt.Sprint(*r) }

func (r *relayFlags) Set(v string) error {
	name, rest, ok1 := strings.Cut(v, "=")
	listen, upstream, ok2 := strings.Cut(rest, ">")
	if !ok1 || !ok2 || name == "" || listen == "" || upstream == "" {
		return fmt.Errorf("want NAME=LISTEN>UPSTREAM, got %q", v)
	}
	*r = append(*r, backend.RelaySpec{Name: name, Listen: listen, Upstream: upstream})
	return nil
}

// runBusRelay serves the docker backend's cluster relays (the harness runs it in a
// container of the run's network): TCP relays, each of which can hold back what one
// sender sends, and their cuts over HTTP.
func runBusRelay(args []string, _, stderr io.Writer) int {
	fs := flag.NewFlagSet("bus-relay", flag.ContinueOnError)
	var relays relayFlags
	fs.Var(&relays, "relay", "a relay: NAME=LISTEN>UPSTREAM (repeatable)")
	control := fs.String("control", "127.0.0.1:7000", "address of the HTTP API of the cuts")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if len(relays) == 0 {
		fmt.Fprintln(stderr, "fenceline bus-relay: no --relay given")
		return exitUsage
	}
	srv, err := backend.NewRelayServer(relays)
	if err != nil {
		fmt.Fprintf(stderr, "fenceline bus-relay: %v\n", err)
		return exitUsage
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", *control)
	if err != nil {
		fmt.Fprintf(stderr, "fenceline bus-relay: %v\n", err)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		_ = hs.Close()
	}()
	fmt.Fprintf(stderr, "fenceline bus-relay: %d relays, control on %s\n", len(relays), ln.Addr())
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "fenceline bus-relay: %v\n", err)
		return exitUsage
	}
	return exitOK
}
