package fenced_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/listener"
	"github.com/fenceline/fenceline/listener/fenced"
)

// exampleClient starts a redis-server of the example's own (redis-server must be on PATH)
// on a free loopback port, without persistence, and returns a client of it made as the
// election and the store need it: election.NewClient, which never re-sends a command.
// stop closes the client and kills the server.
func exampleClient() (client *redis.Client, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	addr := ln.Addr().(*net.TCPAddr)
	ln.Close()
	dir, err := os.MkdirTemp("", "fenced-example")
	if err != nil {
		return nil, nil, err
	}
	srv := exec.Command("redis-server", "--port", fmt.Sprint(addr.Port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir)
	// Killed with the test binary too, when a failed example never calls stop.
	srv.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := srv.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	client = election.NewClient(addr.String())
	stop = func() {
		client.Close()
		srv.Process.Kill()
		srv.Wait()
		os.RemoveAll(dir)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if err = client.Ping(context.Background()).Err(); err == nil {
			return client, stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			return nil, nil, fmt.Errorf("redis-server on %s: %w", addr, err)
		}
	}
}

// ExampleRedis is a singleton job, fenced: each instance names the election once, holds
// the lock (the lock API: Acquire, Release) and writes under its token. A holder that
// lost the lock (paused past its lease, say) and writes afterwards is refused whole.
func ExampleRedis() {
	client, stop, err := exampleClient() // a redis-server of the example's own
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()
	ctx := context.Background()
	instance := func(id string) (*election.Elector, *listener.RedisFence) {
		el, fence, err := fenced.Redis(client, election.Config{Name: "payouts", InstanceID: id}, listener.FenceConfig{})
		if err != nil {
			panic(err) // only a bad config: a programmer's error
		}
		return el, fence
	}
	el1, fence1 := instance("node-1")
	el2, fence2 := instance("node-2")

	lock, err := el1.Acquire(ctx) // blocks until held
	if err != nil {
		fmt.Println(err)
		return
	}
	// Work under lock.Context() (done if the lease is lost), with lock.Token().
	fmt.Println("node-1:", fence1.Write(lock.Context(), lock.Token(), listener.HIncrBy("paid", "acct-1", 100)))
	old := lock.Token()
	fmt.Println("released:", lock.Release(ctx)) // a standby's Acquire takes over at once

	lock2, err := el2.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("node-2:", fence2.Write(lock2.Context(), lock2.Token(), listener.HIncrBy("paid", "acct-1", 50)))
	// node-1 writes again under its old token, as a paused holder would: refused, whole.
	err = fence1.Write(ctx, old, listener.HIncrBy("paid", "acct-1", 100))
	fmt.Println("node-1 late:", errors.Is(err, listener.ErrStaleToken))
	_ = lock2.Release(ctx)
	fmt.Println(client.HGetAll(ctx, "{payouts}:paid").Val())
	// Output:
	// node-1: <nil>
	// released: <nil>
	// node-2: <nil>
	// node-1 late: true
	// map[acct-1:150]
}
