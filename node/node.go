package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/listener"
	"github.com/fenceline/fenceline/node/redisconn"
	"github.com/fenceline/fenceline/source"
	"github.com/fenceline/fenceline/targets"
	"github.com/fenceline/fenceline/workloads/ledger"
)

// Check is `fenceline node --check`: everything a node would find wrong with its
// settings at start, found without connecting to Redis or the source, so that the
// harness can refuse a run before it begins. Its errors wrap ErrUsage.
func Check(cfg Config) error {
	if err := cfg.ready(); err != nil {
		return err
	}
	return usage(check(cfg))
}

func check(cfg Config) error {
	if cfg.HistoryPath != "" {
		// The file is opened as the node would open it; one that did not exist is
		// removed again.
		_, statErr := os.Stat(cfg.HistoryPath)
		hf, err := os.OpenFile(cfg.HistoryPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("--history: %w", err)
		}
		hf.Close()
		if errors.Is(statErr, os.ErrNotExist) {
			os.Remove(cfg.HistoryPath)
		}
	}
	ctl, err := net.Listen("tcp", cfg.Control)
	if err != nil {
		return fmt.Errorf("--control: %w", err)
	}
	ctl.Close()
	// A client that keeps idle connections dials them as it is made: the check's
	// connects nowhere.
	opts := *cfg.Redis
	opts.MinIdleConns = 0
	client, err := redisconn.NewClient(&opts, cfg.RedisTarget)
	if err != nil {
		return err
	}
	defer client.Close()
	if cfg.Workload == WorkloadListener {
		if cfg.Store == StorePostgres {
			if _, err := poolConfig(cfg.Postgres); err != nil {
				return err
			}
		} else if _, err := targetStore(cfg, client, storeConfig(cfg, cfg.ID, nil)); err != nil {
			return err
		}
		if _, err := ledger.NewHTTPSource(ledger.HTTPSourceConfig{BaseURL: cfg.Source}); err != nil {
			return err
		}
	}
	if isEtcd(cfg) {
		_, closeClient, err := newEtcdElector(cfg, election.SystemClock(), nil, nil, nil)
		if err == nil {
			closeClient()
		}
		return err
	}
	if isTarget(cfg) {
		_, err = targetElector(cfg, client, election.SystemClock(), nil, nil, nil)
		return err
	}
	_, err = election.New(client, election.Config{
		InstanceID: cfg.ID, Name: cfg.Election, LeaseTTL: cfg.Lease, RenewInterval: cfg.Renew, RetryInterval: cfg.Retry,
		TakeoverOnDisconnect: cfg.Takeover,
	})
	return err
}

// isTarget reports whether the node elects with a lock library (package targets) rather
// than with package election.
func isTarget(cfg Config) bool { return cfg.Target != "" && cfg.Target != targets.Reference }

// isEtcd reports whether the node's target elects through etcd (package
// targets/etcdelect, chaos build only).
func isEtcd(cfg Config) bool {
	t, err := targets.ByName(cfg.Target)
	return err == nil && t.Etcd
}

// targetStore is the cursor store of the node's target: the variant's store for the
// reference, the fenced store for a -fenced target, the plain write (chaos build only)
// for an unfenced one.
func targetStore(cfg Config, client redis.UniversalClient, sc listener.RedisConfig[source.Event]) (listener.Store[source.Event], error) {
	if !isTarget(cfg) {
		return newStore(cfg.Variant, client, sc)
	}
	if t, err := targets.ByName(cfg.Target); err != nil || !t.Fenced {
		return plainStore(cfg.Target, client, sc)
	}
	return listener.NewRedisStore(client, sc)
}

// targetElector is the elector of a target other than the reference: a lock library's
// (package targets) or, in a chaos build, client-go's (package targets/clientgo, which
// reads the system clock: client-go takes no clock). h, if not nil, hears of every
// answer from Redis that rec is not told about (client-go's reads of its record).
func targetElector(cfg Config, client redis.UniversalClient, clock election.Clock, logger *slog.Logger, rec election.Recorder, h *health) (electorRunner, error) {
	if t, err := targets.ByName(cfg.Target); err == nil && t.Library == targets.ClientGoLibrary {
		return clientGoElector(cfg, client, logger, rec, h)
	}
	e, err := targets.New(client, targets.Config{Target: cfg.Target, InstanceID: cfg.ID, Name: cfg.Election,
		LeaseTTL: cfg.Lease, RenewInterval: cfg.Renew, RetryInterval: cfg.Retry, Clock: clock, Logger: logger,
		Recorder: rec})
	if err != nil {
		return nil, err
	}
	return e, nil
}

// electorRunner is what a node runs: package election's Elector or a target's.
type electorRunner interface {
	leaderView
	Run(ctx context.Context, lead func(context.Context, election.Term)) error
}

// Run runs the node until ctx is done, logging JSON lines to stderr. It blocks. It
// returns nil after a clean stop; an error wrapping ErrUsage for bad settings (also the
// election's and the listener's config errors); any other error for what the node met
// (a history it cannot write, a control address it cannot bind).
func Run(ctx context.Context, cfg Config, stderr io.Writer) error {
	if err := cfg.ready(); err != nil {
		return err
	}
	err := run(ctx, cfg, stderr)
	var ce *election.ConfigError
	if errors.As(err, &ce) || errors.Is(err, listener.ErrInvalidConfig) {
		return usage(err)
	}
	return err
}

func run(ctx context.Context, cfg Config, stderr io.Writer) error {
	logger := slog.New(slog.NewJSONHandler(stderr, nil)).With(slog.String("node", cfg.ID))
	// go-redis logs in plain text to stderr by default: keep the node's log JSON.
	redis.SetLogger(redisLogger{logger})

	parent := ctx
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	st := &state{id: cfg.ID, variant: cfg.Variant, target: cmp.Or(cfg.Target, targets.Reference), chaos: cfg.Chaos, lease: cfg.Lease,
		health: newHealth(2*cfg.Lease, logger)}

	var rec *history.Recorder
	if cfg.HistoryPath != "" {
		hf, err := os.OpenFile(cfg.HistoryPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
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

	client, err := redisconn.NewClient(cfg.Redis, cfg.RedisTarget)
	if err != nil {
		return usage(err)
	}
	defer client.Close()

	reg := prometheus.NewRegistry()
	mux := controlHandler(st, reg)
	clock := faultHooks(cfg.Chaos, mux)
	if err := armFailpoints(cfg.Failpoints); err != nil {
		return usage(err)
	}
	ctl, err := net.Listen("tcp", cfg.Control)
	if err != nil {
		return fmt.Errorf("control endpoint: %w", err)
	}
	if err := WriteAddrFile(cfg.AddrFile, ctl.Addr().String()); err != nil {
		ctl.Close()
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ctl) }()
	defer srv.Close()
	go st.health.watch(ctx)
	logger.Info("node-started", slog.String("control", ctl.Addr().String()),
		slog.String("variant", cfg.Variant), slog.String("target", cmp.Or(cfg.Target, targets.Reference)),
		slog.String("workload", cfg.Workload),
		slog.String("redis", cfg.Redis.Addr), slog.String("redis_user", cfg.Redis.Username),
		slog.Bool("redis_tls", cfg.Redis.TLSConfig != nil),
		slog.Any("redis_sentinels", cfg.RedisTarget.Sentinels), slog.Any("redis_cluster", cfg.RedisTarget.Cluster),
		slog.Int("redis_wait", cfg.RedisTarget.Wait), slog.Any("etcd", cfg.Etcd))

	lmetrics, err := listener.NewPrometheusMetrics(reg, nil)
	if err != nil {
		return err
	}
	stores, closeStores, err := makeStores(ctx, cfg, client, rec, lmetrics, logger)
	if err != nil {
		return err
	}
	defer closeStores()
	if err := seedRedis(ctx, cfg, client); err != nil {
		return err
	}
	if cfg.Workload == WorkloadRegister {
		err := runRegister(ctx, cfg, client, stores, rec, st)
		logger.Info("node-stopped")
		if rerr := rec.Err(); rerr != nil && err == nil {
			err = rerr
			lingerForStatus(parent)
		}
		return err
	}

	store, err := stores(cfg.ID)
	if err != nil {
		return err
	}
	tracked := &trackingStore{Store: store, st: st}
	src, err := ledger.NewHTTPSource(ledger.HTTPSourceConfig{BaseURL: cfg.Source})
	if err != nil {
		return err
	}
	l, err := listener.New(listener.Config[source.Event]{
		Store: tracked, Source: src, BatchSize: cfg.Batch, Logger: logger, Metrics: lmetrics,
	})
	if err != nil {
		return err
	}
	emetrics, err := election.NewPrometheusMetrics(reg, nil)
	if err != nil {
		return err
	}
	erec := newElectionRecorder(rec, cfg.ID, st.health)
	var el electorRunner
	switch {
	case isEtcd(cfg):
		var closeClient func()
		el, closeClient, err = newEtcdElector(cfg, clock, logger, erec, st.health)
		if err != nil {
			return err
		}
		defer closeClient()
	case isTarget(cfg):
		el, err = targetElector(cfg, client, clock, logger, erec, st.health)
		if err != nil {
			return usage(err)
		}
	default:
		ref, err := election.New(client, election.Config{
			InstanceID: cfg.ID, Name: cfg.Election, LeaseTTL: cfg.Lease, RenewInterval: cfg.Renew,
			RetryInterval: cfg.Retry, TakeoverOnDisconnect: cfg.Takeover, Clock: clock, Logger: logger, Metrics: emetrics,
			Recorder: erec,
		})
		if err != nil {
			return err
		}
		if err := changeElector(cfg, ref); err != nil {
			return err
		}
		el = ref
	}
	view := leaderView(el)
	st.elector.Store(&view)
	err = el.Run(ctx, func(tctx context.Context, t election.Term) {
		_ = l.Run(tctx, t.Token) // a rejection is the listener's to count and log
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

// storeConfig is the Redis store's configuration for the store client called id (the
// node, or one of its register clients): the demo ledger's effects, the history, and
// the audit's cap (none for a chaos node: the checker reads every entry).
func storeConfig(cfg Config, id string, rec *history.Recorder) listener.RedisConfig[source.Event] {
	c := listener.RedisConfig[source.Event]{Name: cfg.Election, Node: id, Effects: ledger.RedisEffects,
		AuditMaxLen: cfg.AuditMaxLen}
	if cfg.AuditMaxLen == 0 || cfg.Chaos {
		c.AuditMaxLen = listener.AuditUnbounded
	}
	if rec != nil {
		c.Recorder = storeRecorder{rec: rec, node: id}
	}
	return c
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

// WriteAddrFile writes addr to path atomically (a reader never sees half an address).
// An empty path writes nothing.
func WriteAddrFile(path, addr string) error {
	if path == "" {
		return nil
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(addr+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
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
