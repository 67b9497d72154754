package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"github.com/fenceline/fenceline/cluster"
	"github.com/fenceline/fenceline/harness"
	"github.com/fenceline/fenceline/nemesis"
	"github.com/fenceline/fenceline/workloads"
)

func runChaos(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	duration := fs.Duration("duration", 60*time.Second, "length of the chaos phase")
	nodes := fs.Int("nodes", 3, "number of nodes")
	nem := fs.String("nemesis", "all", "faults, comma-separated: "+fmt.Sprint(nemesis.Known)+", partition (both flavours), all, none")
	seed := fs.Int64("seed", time.Now().UnixNano()%1_000_000, "seed of the fault schedule")
	workload := fs.String("workload", "listener", "what the nodes do: listener or register")
	backend := fs.String("backend", "local", "where the nodes run: local (processes on 127.0.0.1)")
	lease := fs.Duration("lease-ttl", 2*time.Second, "lease TTL of the election")
	variant := fs.String("variant", "reference", "node variant (deliberately broken designs for self-validation; see 'fenceline node -h')")
	out := fs.String("out", "reports/runs", "directory that receives the run directory")
	binary := fs.String("binary", "", "fenceline binary to run as nodes (default: this executable)")
	quiet := fs.Bool("quiet", false, "print only the summary")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	kinds, err := nemesis.ParseList(*nem)
	if err != nil {
		fmt.Fprintf(stderr, "fenceline chaos: %v\n", err)
		return exitUsage
	}
	wl, err := workloads.ByName(*workload)
	if err != nil {
		fmt.Fprintf(stderr, "fenceline chaos: %v\n", err)
		return exitUsage
	}
	if *nodes < 1 || *duration < 0 || *lease < 100*time.Millisecond {
		fmt.Fprintln(stderr, "fenceline chaos: need --nodes >= 1, --duration >= 0 and --lease-ttl >= 100ms")
		return exitUsage
	}
	if err := checkVariant(*variant); err != nil {
		fmt.Fprintf(stderr, "fenceline chaos: %v\n", err)
		return exitUsage
	}
	bin := *binary
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			fmt.Fprintf(stderr, "fenceline chaos: %v\n", err)
			return exitUsage
		}
	}
	start, backendName, err := pickBackend(*backend, bin)
	if err != nil {
		fmt.Fprintf(stderr, "fenceline chaos: %v\n", err)
		return exitUsage
	}

	dir, err := newRunDir(*out, *seed)
	if err != nil {
		fmt.Fprintf(stderr, "fenceline chaos: %v\n", err)
		return exitUsage
	}
	logLevel := slog.LevelInfo
	if *quiet {
		logLevel = slog.LevelWarn
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: logLevel}))
	cfg := harness.Config{
		Dir: dir, Seed: *seed, Duration: *duration, Nodes: *nodes, Nemeses: kinds,
		Workload: wl, Backend: backendName, Start: start, Logger: logger,
		Node:     cluster.NodeOptions{LeaseTTL: *lease, Variant: variantArg(*variant)},
		Versions: map[string]string{"fenceline": version(), "go": runtime.Version()},
	}
	// Ctrl-C cancels the run; the harness still heals, stops the nodes, reads the store
	// and writes what was recorded. A second Ctrl-C is ignored until cleanup is done.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(stderr, "fenceline chaos: run directory %s (seed %d)\n", dir, *seed)
	runErr := harness.Run(ctx, cfg)
	if runErr != nil && !errors.Is(runErr, harness.ErrIncomplete) {
		fmt.Fprintf(stderr, "fenceline chaos: %v\n", runErr)
		return exitUsage
	}
	if runErr != nil {
		fmt.Fprintf(stderr, "fenceline chaos: %v\n", runErr)
	}
	code := checkAndReport(dir, stdout, stderr)
	if runErr != nil && code == exitOK {
		// A run that could not be completed is never a pass.
		code = exitUnknown
	}
	return code
}

// pickBackend returns the function that starts the chosen backend.
func pickBackend(name, bin string) (func(context.Context, cluster.Spec) (cluster.Cluster, error), string, error) {
	switch name {
	case "local":
		return func(ctx context.Context, spec cluster.Spec) (cluster.Cluster, error) {
			return cluster.StartLocal(ctx, cluster.LocalConfig{Spec: spec, Binary: bin})
		}, "local", nil
	case "docker":
		return nil, "", errors.New("the docker backend is not built yet; use --backend local")
	}
	return nil, "", fmt.Errorf("unknown backend %q (local)", name)
}

// newRunDir creates <out>/<UTC timestamp>-<seed> and points <out>/latest at it.
func newRunDir(out string, seed int64) (string, error) {
	name := fmt.Sprintf("%s-%d", time.Now().UTC().Format("20060102T150405Z"), seed)
	dir := filepath.Join(out, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	latest := filepath.Join(out, "latest")
	_ = os.Remove(latest)
	if err := os.Symlink(name, latest); err != nil {
		return "", err
	}
	return dir, nil
}
