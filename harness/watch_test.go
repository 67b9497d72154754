package harness

import (
	"context"
	"errors"
	"log"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestWatcherStops: a finding ends the sleep of the chaos phase at once, a poke asks at
// once rather than at the next tick, and close returns the finding that stopped it.
func TestWatcherStops(t *testing.T) {
	var calls atomic.Int32
	w := newWatcher(context.Background(), func(context.Context) string {
		if calls.Add(1) == 2 {
			return "lease-exclusion at t+1.000s"
		}
		return ""
	})
	began := time.Now()
	w.poke()
	for calls.Load() < 1 {
		time.Sleep(time.Millisecond)
	}
	w.poke()
	err := w.sleepUntil(context.Background(), began.Add(time.Minute))
	if !errors.Is(err, errStopped) {
		t.Fatalf("sleepUntil: %v, want errStopped", err)
	}
	if d := time.Since(began); d > watchEvery {
		t.Errorf("stopped after %v: the pokes did not ask at once", d)
	}
	if err := w.sleepUntil(context.Background(), time.Now().Add(time.Minute)); !errors.Is(err, errStopped) {
		t.Errorf("a second sleep: %v, want errStopped", err)
	}
	if got := w.close(); got != "lease-exclusion at t+1.000s" {
		t.Errorf("close: %q", got)
	}
}

// TestWatcherLate: a chaos phase that ran its course was stopped by nothing, even when a
// finding is waiting (the complete check judges it), and close cancels the call still
// running and waits for it.
func TestWatcherLate(t *testing.T) {
	running := make(chan struct{})
	var ended atomic.Bool
	w := newWatcher(context.Background(), func(ctx context.Context) string {
		close(running)
		<-ctx.Done()
		ended.Store(true)
		return "too late"
	})
	w.poke()
	<-running
	if err := w.sleepUntil(context.Background(), time.Now().Add(10*time.Millisecond)); err != nil {
		t.Fatalf("sleepUntil: %v", err)
	}
	if got := w.close(); got != "" {
		t.Errorf("close: %q, want nothing: the phase was not stopped", got)
	}
	if !ended.Load() {
		t.Error("close returned before the running call ended")
	}
}

// TestNoWatcher: without StopAtViolation the chaos phase sleeps as before.
func TestNoWatcher(t *testing.T) {
	var w *watcher
	w.poke()
	if err := w.sleepUntil(context.Background(), time.Now().Add(time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.sleepUntil(ctx, time.Now().Add(time.Minute)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if got := w.close(); got != "" {
		t.Errorf("close: %q", got)
	}
}

// downRedis is a backend whose Redis is down: nothing listens at its address.
type downRedis struct {
	Backend
	addr string
}

func (d downRedis) RedisAddr() string { return d.addr }

// redisLog collects what go-redis logs.
type redisLog struct{ lines atomic.Int32 }

func (l *redisLog) Printf(context.Context, string, ...any) { l.lines.Add(1) }

// stderrLog is go-redis's default, which it gives no way to restore.
type stderrLog struct{}

func (stderrLog) Printf(_ context.Context, format string, v ...any) {
	log.Printf("redis: "+format, v...)
}

// TestStoreSoFarWhileRedisIsDown: the live read of --stop-at-violation during a Redis
// restart gives nothing, at once and without go-redis's log of failed dials on the
// run's stderr (seen five times in twenty zoo seeds before the plain dial).
func TestStoreSoFarWhileRedisIsDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	logged := &redisLog{}
	redis.SetLogger(logged)
	t.Cleanup(func() { redis.SetLogger(stderrLog{}) })
	r := &runner{c: downRedis{addr: addr}}
	began := time.Now()
	if st := r.storeSoFar(context.Background()); st != nil {
		t.Errorf("a store read from %s, where nothing listens", addr)
	}
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("took %v", took)
	}
	if n := logged.lines.Load(); n > 0 {
		t.Errorf("go-redis logged %d lines", n)
	}
}
