package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/listener"
	"github.com/fenceline/fenceline/node"
	"github.com/fenceline/fenceline/node/redisconn"
	"github.com/fenceline/fenceline/targets"
)

func runNode(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runNodeContext(ctx, args, stderr)
}

// runNodeContext is runNode until ctx is done.
func runNodeContext(ctx context.Context, args []string, stderr io.Writer) int {
	var c node.Config
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	fs.StringVar(&c.ID, "id", "", "instance id, unique among the nodes and stable across restarts (required)")
	conn := redisconn.Add(fs)
	conn.AddWait(fs)
	fs.StringVar(&c.Source, "source", "http://127.0.0.1:8000", "event source URL")
	fs.StringVar(&c.Election, "election", election.DefaultName, "election name: the hash tag of every key")
	fs.DurationVar(&c.Lease, "lease-ttl", 2*time.Second, "lease TTL")
	fs.DurationVar(&c.Renew, "renew-interval", 0, "time between renewals (0: lease-ttl/3)")
	fs.DurationVar(&c.Retry, "retry-interval", 0, "longest wait of a standby between acquire attempts (0: lease-ttl/4)")
	fs.IntVar(&c.Batch, "batch", listener.DefaultBatchSize, "events per commit")
	fs.StringVar(&c.Control, "control", "127.0.0.1:9100", "control endpoint address (/status, /metrics, /health)")
	fs.StringVar(&c.AddrFile, "addr-file", "", "write the control endpoint's bound address to this file (for --control 127.0.0.1:0)")
	fs.StringVar(&c.HistoryPath, "history", "", "append the operation history (JSON lines, docs/history.md) to this file")
	fs.BoolVar(&c.Chaos, "chaos", false, "enable fault hooks on the control endpoint (POST /fault/clock): for the chaos harness only, in a chaos build")
	fs.Func("failpoint", "with --chaos: arm a failpoint at start, NAME=ACTION, the action [N*]sleep(D), block, error or exit[(CODE)] (repeatable; the names are in internal/failpoint)", func(v string) error {
		c.Failpoints = append(c.Failpoints, v)
		return nil
	})
	fs.BoolVar(&c.RemoteControl, "chaos-allow-remote-control", false, "with --chaos, allow a --control address that is not loopback (the fault hooks take no authentication)")
	fs.StringVar(&c.Variant, "variant", node.Reference, node.VariantHelp())
	fs.StringVar(&c.Target, "target", targets.Reference, "the election and store to run: a lock library instead of the reference (the unfenced ones need --chaos):"+targets.Describe())
	fs.StringVar(&c.Workload, "workload", node.WorkloadListener, "listener (elect, then ingest) or register (concurrent fenced clients outside the election: with --chaos only)")
	fs.StringVar(&c.Store, "store", node.StoreRedis, "where the cursor and the ledger live: redis (next to the lease) or postgres (--postgres)")
	fs.StringVar(&c.Postgres, "postgres", "", "PostgreSQL connection URL, for --store postgres (postgres://user@host:port/db)")
	fs.Int64Var(&c.AuditMaxLen, "audit-max-len", listener.DefaultAuditMaxLen, "keep about this many entries of the store's audit (0: all); a --chaos node keeps all, for the checker")
	fs.Int64Var(&c.StartToken, "start-token", 0, "with --chaos: seed an empty store's token counter with this value (the first token is one more)")
	fs.Int64Var(&c.StartCursor, "start-cursor", 0, "with --chaos: seed an empty store's cursor record with this cursor (and token 0)")
	fs.IntVar(&c.Clients, "clients", 3, "register workload: concurrent clients")
	check := fs.Bool("check", false, "check the flags and the configuration (and that --control can be bound and --history written) without connecting to anything; exit 0 or 2")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	err := c.Validate()
	if err == nil {
		c.Redis, err = conn.Options()
		c.RedisTarget = conn.Target
	}
	switch {
	case err != nil:
	case *check:
		err = node.Check(c)
	default:
		err = node.Run(ctx, c, stderr)
	}
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "fenceline node: %v\n", err)
	if errors.Is(err, node.ErrUsage) || c.Redis == nil {
		return exitUsage
	}
	return exitUnknown
}
