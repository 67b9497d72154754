// Command images builds the docker backend's images from this checkout (`make images`):
// fenceline:dev, fenceline-toxiproxy:dev and fenceline-redis:dev (with -postgres also
// fenceline-postgres:dev), all FROM scratch, nothing pulled. An image whose inputs did not change is not rebuilt. With -prune it
// instead removes the containers and networks that runs left behind (a runner killed
// with SIGKILL cannot clean up, and there is no Ryuk); images are kept.
//
// Exit codes: 0 done, 1 failed, 2 usage.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/fenceline/fenceline/docker"
)

func main() {
	fs := flag.NewFlagSet("images", flag.ContinueOnError)
	force := fs.Bool("force", false, "build every image even if its inputs did not change")
	verbose := fs.Bool("v", false, "print Docker's build output")
	postgres := fs.Bool("postgres", false, "also build fenceline-postgres:dev (Debian's PostgreSQL 15, for --store postgres)")
	etcd := fs.Bool("etcd", false, "also build fenceline-etcd:dev (Debian's etcd, for the targets etcd and etcd-fenced)")
	prune := fs.Bool("prune", false, "remove every container and network of every fenceline run, in progress or not, instead of building (images are kept)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if err == flag.ErrHelp {
			os.Exit(0)
		}
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *prune {
		n, err := docker.RemoveRuns(ctx, "")
		if err != nil {
			fmt.Fprintf(os.Stderr, "images: %v\n", err)
			os.Exit(1)
		}
		fmt.Printf("removed %d containers and networks\n", n)
		return
	}
	var log io.Writer = io.Discard
	if *verbose {
		log = os.Stderr
	}
	t0 := time.Now()
	res, err := docker.BuildImages(ctx, docker.BuildOptions{Force: *force, BuildLog: log, Postgres: *postgres, Etcd: *etcd})
	for _, r := range res {
		if r.Hash == "" {
			continue
		}
		what := "up to date"
		if r.Built {
			what = "built"
		}
		fmt.Printf("%-26s %-10s %s  %v\n", r.Image, what, r.Hash[:12], r.Took.Round(10*time.Millisecond))
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "images: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("images ready in %v\n", time.Since(t0).Round(10*time.Millisecond))
}
