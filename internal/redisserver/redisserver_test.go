package redisserver

import (
	"context"
	"testing"
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
