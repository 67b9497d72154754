package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
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
	id, source, election, control, historyPath string
	addrFile                                   string
	variant, workload                          string
	chaos, remoteControl                       bool
	check                                      bool
	lease, renew, retry                        time.Duration
	batch, clients                             int
	redis                                      *redisConn
}

func runNode(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runNodeContext(ctx, args, stderr)
}

// runNodeContext is runNode until ctx is done.
func runNodeContext(ctx context.Context, args []string, stderr io.Writer) int {
	var f nodeFlags
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	fs.StringVar(&f.id, "id", "", "instance id, unique among the nodes and stable across restarts (required)")
	f.redis = addRedisFlags(fs)
	fs.StringVar(&f.source, "source", "http://127.0.0.1:8000", "event source URL")
	fs.StringVar(&f.election, "election", election.DefaultName, "election name: the hash tag of every key")
	fs.DurationVar(&f.lease, "lease-ttl", 2*time.Second, "lease TTL")
	fs.DurationVar(&f.renew, "renew-interval", 0, "time between renewals (0: lease-ttl/3)")
	fs.DurationVar(&f.retry, "retry-interval", 0, "longest wait of a standby between acquire attempts (0: lease-ttl/4)")
	fs.IntVar(&f.batch, "batch", listener.DefaultBatchSize, "events per commit")
	fs.StringVar(&f.control, "control", "127.0.0.1:9100", "control endpoint address (/status, /metrics, /health)")
	fs.StringVar(&f.addrFile, "addr-file", "", "write the control endpoint's bound address to this file (for --control 127.0.0.1:0)")
	fs.StringVar(&f.historyPath, "history", "", "append the operation history (JSON lines, docs/history.md) to this file")
	fs.BoolVar(&f.chaos, "chaos", false, "enable fault hooks on the control endpoint (POST /fault/clock): for the chaos harness only")
	fs.BoolVar(&f.remoteControl, "chaos-allow-remote-control", false, "with --chaos, allow a --control address that is not loopback (the fault hooks take no authentication)")
	fs.StringVar(&f.variant, "variant", variants.Reference, variantHelp())
	fs.StringVar(&f.workload, "workload", "listener", "listener (elect, then ingest) or register (concurrent fenced clients outside the election: with --chaos only)")
	fs.IntVar(&f.clients, "clients", 3, "register workload: concurrent clients")
	fs.BoolVar(&f.check, "check", false, "check the flags and the configuration (and that --control can be bound and --history written) without connecting to anything; exit 0 or 2")
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
	if f.workload == "register" && !f.chaos {
		// It takes tokens outside the election and commits synthetic events: on a live
		// store it deposes the leader and corrupts the cursor, sink and balances.
		fmt.Fprintln(stderr, "fenceline node: the register workload commits synthetic events with tokens of its own and runs only with --chaos (the harness), never on a live store")
		return exitUsage
	}
	if f.chaos && !f.remoteControl && !isLoopback(f.control) {
		fmt.Fprintf(stderr, "fenceline node: --chaos serves unauthenticated fault hooks on --control %q, which is not a loopback address; use 127.0.0.1, or add --chaos-allow-remote-control\n", f.control)
		return exitUsage
	}
	if _, err := f.redis.options(); err != nil {
		fmt.Fprintf(stderr, "fenceline node: %v\n", err)
		return exitUsage
	}
	// Zero is no setting here: the flags' defaults are explicit, and 0 would silently
	// fall back to the library's.
	if f.lease <= 0 || f.batch < 1 || f.clients < 1 || f.renew < 0 || f.retry < 0 {
		fmt.Fprintf(stderr, "fenceline node: need --lease-ttl > 0, --batch >= 1, --clients >= 1 and no negative interval (got %v, %d, %d, %v, %v)\n",
			f.lease, f.batch, f.clients, f.renew, f.retry)
		return exitUsage
	}
	if f.check {
		if err := checkNode(f); err != nil {
			fmt.Fprintf(stderr, "fenceline node: %v\n", err)
			return exitUsage
		}
		return exitOK
	}
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

// checkNode is `fenceline node --check`: everything a node would find wrong with its
// settings at start, found without connecting to Redis or the source, so that the
// harness can refuse a run before it begins. Any error is a usage error.
func checkNode(f nodeFlags) error {
	if f.historyPath != "" {
		// The file is opened as the node would open it; one that did not exist is
		// removed again.
		_, statErr := os.Stat(f.historyPath)
		hf, err := os.OpenFile(f.historyPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("--history: %w", err)
		}
		hf.Close()
		if errors.Is(statErr, os.ErrNotExist) {
			os.Remove(f.historyPath)
		}
	}
	ctl, err := net.Listen("tcp", f.control)
	if err != nil {
		return fmt.Errorf("--control: %w", err)
	}
	ctl.Close()
	client, err := f.redis.client()
	if err != nil {
		return err
	}
	defer client.Close()
	if f.workload == "listener" {
		if _, err := variants.Store(f.variant, client, listener.StoreConfig{Name: f.election, Node: f.id}); err != nil {
			return err
		}
		if _, err := listener.NewHTTPSource(listener.HTTPSourceConfig{BaseURL: f.source}); err != nil {
			return err
		}
	}
	_, err = election.New(client, election.Config{
		InstanceID: f.id, Name: f.election, LeaseTTL: f.lease, RenewInterval: f.renew, RetryInterval: f.retry,
	})
	return err
}

// isLoopback reports whether the host of addr is a loopback address or "localhost". An
// empty host (":9100") listens on every interface.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func runNodeWith(ctx context.Context, f nodeFlags, stderr io.Writer) error {
	logger := slog.New(slog.NewJSONHandler(stderr, nil)).With(slog.String("node", f.id))
	// go-redis logs in plain text to stderr by default: keep the node's log JSON.
	redis.SetLogger(redisLogger{logger})

	parent := ctx
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	st := &nodeState{id: f.id, variant: f.variant, chaos: f.chaos,
		health: newHealth(2*f.lease, logger)}

	var rec *history.Recorder
	if f.historyPath != "" {
		hf, err := os.OpenFile(f.historyPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		defer hf.Close()
		// A history that cannot be written (a full disk) makes the run uncheckable:
		// say so at once, in the log and in /status, and stop.
		rec = history.NewRecorder(&watchedWriter{w: hf, onErr: func(err error) {
			st.setHistoryError(err)
			logger.Error("history-write-failed", slog.String("error", err.Error()))
			cancel(err)
		}})
	}

	client, err := f.redis.client()
	if err != nil {
		return err
	}
	defer client.Close()
	variants.WrapClient(f.variant, client)

	reg := prometheus.NewRegistry()
	var clock election.Clock = election.SystemClock()
	var skew *skewclock.Clock
	if f.chaos {
		skew = skewclock.New()
		clock = skew
	}
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
	go st.health.watch(ctx)
	logger.Info("node-started", slog.String("control", ctl.Addr().String()),
		slog.String("variant", f.variant), slog.String("workload", f.workload),
		slog.String("redis", f.redis.addr), slog.String("redis_user", f.redis.user),
		slog.Bool("redis_tls", f.redis.tlsOn()))

	if f.workload == "register" {
		err := runRegister(ctx, f, client, rec, st, logger)
		if rerr := rec.Err(); rerr != nil && err == nil {
			err = rerr
			lingerForStatus(parent)
		}
		return err
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
		Recorder: newElectionRecorder(rec, f.id, st.health),
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
		lingerForStatus(parent)
	}
	logger.Info("node-stopped")
	return err
}

// historyErrorLinger is how long a node whose history failed keeps serving /status (with
// history_error) after it has stepped down, so that whoever polls it (the harness, every
// 500ms) sees why it is about to exit.
const historyErrorLinger = 2 * time.Second

// lingerForStatus waits historyErrorLinger, or until ctx is done (a signal).
func lingerForStatus(ctx context.Context) {
	t := time.NewTimer(historyErrorLinger)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// watchedWriter calls onErr once, on the first failed write.
type watchedWriter struct {
	w     io.Writer
	once  sync.Once
	onErr func(error)
}

func (w *watchedWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if err != nil {
		w.once.Do(func() { w.onErr(err) })
	}
	return n, err
}

// redisLogger routes go-redis's own log lines through the node's JSON logger.
type redisLogger struct{ l *slog.Logger }

func (r redisLogger) Printf(ctx context.Context, format string, v ...any) {
	r.l.WarnContext(ctx, "redis-client", slog.String("message", fmt.Sprintf(format, v...)))
}
