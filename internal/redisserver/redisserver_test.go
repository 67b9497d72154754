package redisserver

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestStartKillRestart(t *testing.T) {
	s := New(t)
	ctx := context.Background()
	if err := Ping(ctx, s.Addr()); err != nil {
		t.Fatal(err)
	}
	s.Kill()
	if err := Ping(ctx, s.Addr()); err == nil {
		t.Fatal("ping after kill succeeded")
	}
	if err := s.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := Ping(ctx, s.Addr()); err != nil {
		t.Fatal(err)
	}
}

func TestMissingBinary(t *testing.T) {
	_, err := Start(context.Background(), Options{Dir: t.TempDir(), Binary: "no-such-redis-server"})
	if err != ErrNotInstalled {
		t.Fatalf("err = %v, want ErrNotInstalled", err)
	}
}

// A relative data directory works: redis-server changes into it before opening its log.
func TestRelativeDir(t *testing.T) {
	t.Chdir(t.TempDir())
	s := NewWith(t, Options{Dir: "data"})
	if err := Ping(context.Background(), s.Addr()); err != nil {
		t.Fatal(err)
	}
}

// Every write Redis acknowledged survives a kill -9 and a restart: the harness's Redis
// writes and syncs its append-only file before it answers (appendfsync always).
func TestAcknowledgedWritesSurviveKill(t *testing.T) {
	s := New(t)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer c.Close()
	if got, err := c.ConfigGet(ctx, "appendfsync").Result(); err != nil || got["appendfsync"] != "always" {
		t.Fatalf("appendfsync = %v (%v), want always", got, err)
	}
	var last int64
	for range 2000 {
		n, err := c.Incr(ctx, "counter").Result()
		if err != nil {
			t.Fatal(err)
		}
		last = n
	}
	s.Kill()
	if err := s.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := c.Get(ctx, "counter").Int64()
	if err != nil || got != last {
		t.Fatalf("counter %d (%v) after kill -9, want the acknowledged %d", got, err, last)
	}
}
