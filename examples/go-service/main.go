// Command go-service is a fenced singleton job: the library's quick start, a program to
// copy. Several copies run at once; a Redis lease elects one, and only that one runs the
// job, with every write fenced by the lease's token, so that a copy that was paused,
// partitioned or slow can never write after a newer holder has.
//
// The job here takes the next page of an event feed (`fenceline source`) and applies it
// to a ledger in Redis, in one fenced step with the feed's cursor. Replace job with your
// own work and keep the rest.
//
// This file and job.go are the part to copy. protocol.go, chaos_on.go and chaos_off.go
// exist so that fenceline's chaos harness can run, break and judge the program
// (docs/node-protocol.md); a service of your own drops them. See README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/listener"
	"github.com/fenceline/fenceline/listener/fenced"
	"github.com/fenceline/fenceline/source"
)

// options are the service's settings: flags, or the harness's environment (protocol.go).
type options struct {
	redis    string        // Redis host:port
	feed     string        // the event feed's base URL
	name     string        // the election's name: the hash tag of every key
	id       string        // this instance: unique, stable across restarts
	listen   string        // where /healthz and /metrics are served
	lease    time.Duration // the lease's TTL
	batch    int           // events per fenced commit
	unfenced bool          // the broken twin: writes without the fence (chaos_on.go)
}

func main() {
	host, _ := os.Hostname()
	var o options
	flag.StringVar(&o.redis, "redis", "127.0.0.1:6379", "Redis `host:port`")
	flag.StringVar(&o.feed, "source", "http://127.0.0.1:8000", "the event feed's base `URL` (fenceline source)")
	flag.StringVar(&o.name, "name", "go-service", "the election's `name`: every key is {name}:...")
	flag.StringVar(&o.id, "id", fmt.Sprintf("%s-%d", host, os.Getpid()), "this instance's `id`: unique among the copies")
	flag.StringVar(&o.listen, "listen", "127.0.0.1:8080", "`address` of /healthz and /metrics")
	flag.DurationVar(&o.lease, "lease", election.DefaultLeaseTTL, "the lease's TTL, a whole number of milliseconds")
	flag.IntVar(&o.batch, "batch", 100, "events per fenced commit")
	addChaosFlags(&o) // --unfenced, in a chaos build only
	flag.Parse()

	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	// Under the chaos harness its environment overrides the flags (protocol.go).
	h, err := fromHarness(&o)
	if err != nil {
		logger.Error("harness-setup-failed", slog.String("error", err.Error()))
		os.Exit(2)
	}
	logger = logger.With(slog.String("instance", o.id))

	// SIGTERM (a rolling deploy, `kill`) hands the lock over at once.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, o, h, logger); err != nil {
		logger.Error("stopped", slog.String("error", err.Error()))
		os.Exit(1)
	}
	logger.Info("stopped")
}

// run wires the election, the fenced store and the job, serves /healthz and /metrics,
// and holds the lock until ctx is done. It blocks.
func run(ctx context.Context, o options, h *harness, logger *slog.Logger) error {
	// MaxRetries -1: a command that timed out may still run, so it is never re-sent
	// behind the library's back (election.New refuses a client that retries).
	client := election.NewClient(o.redis)
	defer client.Close()

	reg := prometheus.NewRegistry()
	emetrics, err := election.NewPrometheusMetrics(reg, nil)
	if err != nil {
		return err
	}
	lmetrics, err := listener.NewPrometheusMetrics(reg, nil) // counts the fence's rejections too
	if err != nil {
		return err
	}
	ecfg := election.Config{Name: o.name, InstanceID: o.id, LeaseTTL: o.lease, Logger: logger, Metrics: emetrics}
	scfg := listener.RedisConfig[source.Event]{Effects: ledgerEffects, Metrics: lmetrics}
	h.configure(&ecfg, &scfg)
	// One constructor, names typed once: the store's keys share the election's hash tag
	// and its audit names this instance.
	el, store, err := fenced.RedisStore(client, ecfg, scfg)
	if err != nil {
		return err
	}
	work, err := newJob(h.store(client, store, o), o, logger, lmetrics)
	if err != nil {
		return err
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		// Fails for a holder stuck past its lease deadline: let the supervisor restart it.
		if err := el.Check(2 * o.lease); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	h.handle(mux, el)
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return err
	}
	if err := h.announce(ln.Addr().String()); err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	defer func() {
		srv.Close()
		<-served
	}()
	logger.Info("started", slog.String("listen", ln.Addr().String()), slog.String("name", o.name))

	err = holdAndRun(ctx, el, o.lease/4, logger, work.Run)
	return errors.Join(err, h.err())
}

// holdAndRun takes the lock, runs job under it with its fencing token until the lease
// ends or job returns, releases it, and campaigns again, until ctx is done. It blocks. A
// job that returns while the lease still holds (it gave up: a batch the store refuses, a
// newer token seen) is not run again before retry has passed, as Run waits its
// RetryInterval: it would likely fail again at once.
//
// job must stop when its ctx is done: the lease is lost then (a pause, a partition, a
// slow clock), and another instance may already hold it. Its writes must carry token:
// that is what makes the ones it sends after losing the lease harmless.
func holdAndRun(ctx context.Context, el *election.Elector, retry time.Duration, logger *slog.Logger,
	job func(ctx context.Context, token int64) error) error {
	for {
		lock, err := el.Acquire(ctx) // blocks while another instance holds the lease
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err // the client was closed
		}
		logger.Info("job-started", slog.Int64("token", lock.Token()))
		done := make(chan error, 1)
		go func() { done <- job(lock.Context(), lock.Token()) }()
		var jobErr error
		gaveUp := false
		select {
		case <-ctx.Done(): // SIGTERM: release now, so a standby takes over within a round trip
		case jobErr = <-done:
			done = nil
			gaveUp = lock.Context().Err() == nil
		}
		// Release ends lock.Context (stopping the job) and deletes the lease, waking the
		// standbys. Its own deadline is the election's RequestTimeout.
		relErr := lock.Release(context.WithoutCancel(ctx))
		if done != nil {
			jobErr = <-done
		}
		logger.Info("job-ended", slog.Int64("token", lock.Token()),
			slog.Any("cause", context.Cause(lock.Context())), slog.Any("job_error", jobErr),
			slog.Any("release_error", relErr))
		if ctx.Err() != nil {
			return nil
		}
		if gaveUp {
			t := time.NewTimer(retry)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
		}
	}
}
