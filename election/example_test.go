package election_test

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
)

func ExampleLockKey() {
	fmt.Println(election.LockKey(""), election.TokenKey(""), election.ReleaseChannel(""))
	fmt.Println(election.LockKey("ledger"), election.LockValue("node-1", 7))
	// Output:
	// {fenceline}:lock {fenceline}:token {fenceline}:released
	// {ledger}:lock node-1:7
}

// exampleClient starts a redis-server of the example's own (redis-server must be on PATH)
// on a free loopback port, without persistence, and returns a client of it made as a
// user would: election.NewClient, which never re-sends a command. stop closes the
// client and kills the server.
func exampleClient() (client *redis.Client, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	addr := ln.Addr().(*net.TCPAddr)
	ln.Close()
	dir, err := os.MkdirTemp("", "election-example")
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

func ExampleElector_Run() {
	client, stop, err := exampleClient() // a redis-server of the example's own
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()
	e, err := election.New(client, election.Config{InstanceID: "node-1"})
	if err != nil {
		fmt.Println(err)
		return
	}

	ctx, cancel := context.WithCancel(context.Background())
	err = e.Run(ctx, func(ctx context.Context, t election.Term) {
		fmt.Println("leading with token", t.Token)
		// Write to the fenced store with t.Token until ctx is done. Here: stop at once.
		cancel()
		<-ctx.Done()
	})
	fmt.Println("Run returned", err)

	info, err := election.Leader(context.Background(), client, "")
	fmt.Println("held:", info.Held, "counter:", info.Counter, err)
	// Output:
	// leading with token 1
	// Run returned <nil>
	// held: false counter: 1 <nil>
}

// OnNewLeader tells an elector's user about each new lock holder without polling Status,
// and Check is the health check to serve on a liveness endpoint.
func ExampleElector_Check() {
	client, stop, err := exampleClient()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()
	e, err := election.New(client, election.Config{
		InstanceID: "node-1",
		// Called from Run's goroutine: keep it short.
		OnNewLeader: func(id string, token int64) { fmt.Println("new leader:", id, token) },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	_ = e.Run(ctx, func(ctx context.Context, t election.Term) {
		fmt.Println("healthy while leading:", e.Check(2*time.Second) == nil)
		cancel()
		<-ctx.Done()
	})
	fmt.Println("healthy after Run:", e.Check(0) == nil)
	// Output:
	// new leader: node-1 1
	// healthy while leading: true
	// healthy after Run: true
}

// Acquire serves a job that must run once at a time, fenced: hold the lock, do the work
// under its context with its token, release it.
func ExampleElector_Acquire() {
	client, stop, err := exampleClient()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()
	e, err := election.New(client, election.Config{InstanceID: "node-1"})
	if err != nil {
		fmt.Println(err)
		return
	}

	lock, err := e.Acquire(context.Background()) // blocks until held
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("holding with token", lock.Token())
	// Do the work under lock.Context(), passing lock.Token() with every write; the
	// context ends if the lease is lost. Here: nothing.
	fmt.Println("released:", lock.Release(context.Background()))

	_, err = e.TryAcquire(context.Background()) // one attempt, now free again
	fmt.Println("again:", err)
	// Output:
	// holding with token 1
	// released: <nil>
	// again: <nil>
}

// TryAcquire makes one attempt: it fails at once while another instance holds the lease.
func ExampleElector_TryAcquire() {
	client, stop, err := exampleClient()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()
	a, _ := election.New(client, election.Config{InstanceID: "node-1"})
	b, _ := election.New(client, election.Config{InstanceID: "node-2"})

	la, err := a.TryAcquire(context.Background())
	fmt.Println("node-1:", err)
	_, err = b.TryAcquire(context.Background())
	fmt.Println("node-2 held out:", errors.Is(err, election.ErrLeaseHeld))
	_ = la.Release(context.Background())
	lb, err := b.TryAcquire(context.Background())
	fmt.Println("node-2 after the release:", err, "token", lb.Token())
	_ = lb.Release(context.Background())
	// Output:
	// node-1: <nil>
	// node-2 held out: true
	// node-2 after the release: <nil> token 2
}
