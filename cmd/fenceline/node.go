package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/internal/skewclock"
	"github.com/fenceline/fenceline/listener"
	"github.com/fenceline/fenceline/variants"
)

// nodeFlags are the settings of one `fenceline node`.
type nodeFlags struct {
	id, redisAddr, password, source, election, control, historyPath string
	addrFile                                                        string
	variant, workload                                               string
	tls, chaos                                                      bool
	lease, renew, retry                                             time.Duration
	batch, clients                                                  int
}

func runNode(args []string, stdout, stderr io.Writer) int {
	var f nodeFlags
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	fs.StringVar(&f.id, "id", "", "instance id, unique among the nodes and stable across restarts (required)")
	fs.StringVar(&f.redisAddr, "redis", "127.0.0.1:6379", "Redis address (host:port)")
	fs.StringVar(&f.password, "redis-password", os.Getenv("FENCELINE_REDIS_PASSWORD"), "Redis password (default $FENCELINE_REDIS_PASSWORD)")
	fs.BoolVar(&f.tls, "redis-tls", false, "connect to Redis over TLS")
	fs.StringVar(&f.source, "source", "http://127.0.0.1:8000", "event source URL")
	fs.StringVar(&f.election, "election", election.DefaultName, "election name: the hash tag of every key")
	fs.DurationVar(&f.lease, "lease-ttl", 2*time.Second, "lease TTL")
	fs.DurationVar(&f.renew, "renew-interval", 0, "time between renewals (default lease-ttl/3)")
	fs.DurationVar(&f.retry, "retry-interval", 0, "longest wait of a standby between acquire attempts (default lease-ttl/4)")
	fs.IntVar(&f.batch, "batch", listener.DefaultBatchSize, "events per commit")
	fs.StringVar(&f.control, "control", "127.0.0.1:9100", "control endpoint address (/status, /metrics, /health)")
	fs.StringVar(&f.addrFile, "addr-file", "", "write the control endpoint's bound address to this file (for --control 127.0.0.1:0)")
	fs.StringVar(&f.historyPath, "history", "", "append the operation history (JSON lines, docs/history.md) to this file")
	fs.BoolVar(&f.chaos, "chaos", false, "enable fault hooks on the control endpoint (POST /fault/clock): for the chaos harness only")
	fs.StringVar(&f.variant, "variant", variants.Reference, variantHelp())
	fs.StringVar(&f.workload, "workload", "listener", "listener (elect, then ingest) or register (concurrent fenced clients, for the harness)")
	fs.IntVar(&f.clients, "clients", 3, "register workload: concurrent clients")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if f.id == "" {
		fmt.Fprintln(stderr, "fenceline node: --id is required")
		return exitUsage
	}
	if err := checkVariant(f.variant); err != nil {
		fmt.Fprintf(stderr, "fenceline node: %v\n", err)
		return exitUsage
	}
	if f.variant != variants.Reference && !f.chaos {
		// A broken design must never run by accident outside the harness.
		fmt.Fprintf(stderr, "fenceline node: variant %q is broken on purpose and runs only with --chaos\n", f.variant)
		return exitUsage
	}
	if f.workload != "listener" && f.workload != "register" {
		fmt.Fprintf(stderr, "fenceline node: unknown workload %q (listener, register)\n", f.workload)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := runNodeWith(ctx, f, stderr); err != nil {
		fmt.Fprintf(stderr, "fenceline node: %v\n", err)
		var ce *election.ConfigError
		if errors.As(err, &ce) || errors.Is(err, listener.ErrInvalidConfig) {
			return exitUsage
		}
		return exitUnknown
	}
	return exitOK
}

func runNodeWith(ctx context.Context, f nodeFlags, stderr io.Writer) error {
	logger := slog.New(slog.NewJSONHandler(stderr, nil)).With(slog.String("node", f.id))

	var rec *history.Recorder
	if f.historyPath != "" {
		hf, err := os.OpenFile(f.historyPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		defer hf.Close()
		rec = history.NewRecorder(hf)
	}

	opts := election.ClientOptions(f.redisAddr)
	opts.Password = f.password
	if f.tls {
		opts.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	client := redis.NewClient(opts)
	defer client.Close()
	variants.WrapClient(f.variant, client)

	reg := prometheus.NewRegistry()
	var clock election.Clock = election.SystemClock()
	var skew *skewclock.Clock
	if f.chaos {
		skew = skewclock.New()
		clock = skew
	}
	st := &nodeState{id: f.id, variant: f.variant, chaos: f.chaos}

	ctl, err := net.Listen("tcp", f.control)
	if err != nil {
		return fmt.Errorf("control endpoint: %w", err)
	}
	if err := writeAddrFile(f.addrFile, ctl.Addr().String()); err != nil {
		ctl.Close()
		return err
	}
	srv := &http.Server{Handler: controlHandler(st, reg, skew), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ctl) }()
	defer srv.Close()
	logger.Info("node-started", slog.String("control", ctl.Addr().String()),
		slog.String("variant", f.variant), slog.String("workload", f.workload))

	if f.workload == "register" {
		return runRegister(ctx, f, client, rec, st, logger)
	}

	store, err := variants.Store(f.variant, client, listener.StoreConfig{Name: f.election, Node: f.id, Recorder: rec})
	if err != nil {
		return err
	}
	tracked := &trackingStore{CursorStore: store, st: st}
	src, err := listener.NewHTTPSource(listener.HTTPSourceConfig{BaseURL: f.source})
	if err != nil {
		return err
	}
	lmetrics, err := listener.NewPrometheusMetrics(reg)
	if err != nil {
		return err
	}
	l, err := listener.New(listener.Config{
		Store: tracked, Source: src, BatchSize: f.batch, Logger: logger, Metrics: lmetrics,
	})
	if err != nil {
		return err
	}
	emetrics := election.NewMetrics(reg)
	el, err := election.New(client, election.Config{
		InstanceID: f.id, Name: f.election, LeaseTTL: f.lease, RenewInterval: f.renew,
		RetryInterval: f.retry, Clock: clock, Logger: logger, Metrics: emetrics,
		Recorder: newElectionRecorder(rec, f.id),
	})
	if err != nil {
		return err
	}
	st.elector = el
	err = el.Run(ctx, func(tctx context.Context, t election.Term) {
		if err := l.Run(tctx, t.Token); errors.Is(err, listener.ErrStaleToken) {
			emetrics.FencingRejected()
		}
	})
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	if rerr := rec.Err(); rerr != nil && err == nil {
		err = rerr
	}
	logger.Info("node-stopped")
	return err
}
