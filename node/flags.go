package node

import (
	"flag"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/listener"
	"github.com/fenceline/fenceline/node/redisconn"
	"github.com/fenceline/fenceline/targets"
)

// AddFlags registers the flags of `fenceline node` on fs: one per Config field, with the
// defaults of a node, and the Redis connection's (package redisconn). The flags of the
// fault hooks, the failpoints, the variants, the register workload and the boundary
// starts exist in a chaos build only: a default build does not list them in -h and
// refuses them in one line. Once fs is parsed, Config.WithConnection joins the two.
func AddFlags(fs *flag.FlagSet) (*Config, *redisconn.Flags) {
	c := &Config{Variant: Reference, Clients: 3}
	fs.StringVar(&c.ID, "id", "", "instance id, unique among the nodes and stable across restarts (required)")
	conn := redisconn.Add(fs)
	conn.AddWait(fs)
	fs.StringVar(&c.Source, "source", "http://127.0.0.1:8000", "event source URL")
	fs.StringVar(&c.Election, "election", election.DefaultName, "election name: the hash tag of every key (no braces)")
	fs.DurationVar(&c.Lease, "lease-ttl", election.DefaultLeaseTTL, "lease TTL")
	fs.DurationVar(&c.Renew, "renew-interval", 0, "time between renewals (0: lease-ttl/3); for a client-go target, its RenewDeadline (0: lease-ttl×10/15, as client-go's 10s of 15s), with --lease-ttl its LeaseDuration")
	fs.DurationVar(&c.Retry, "retry-interval", 0, "longest wait of a standby between acquire attempts (0: lease-ttl/4); for a client-go target, its RetryPeriod (0: lease-ttl×2/15, as client-go's 2s of 15s)")
	fs.BoolVar(&c.Takeover, "takeover-on-disconnect", false, "a standby takes the lease as soon as the leader's connection to Redis is closed (its process died), not when the lease expires; safe only with the fenced store (go doc election.Config.TakeoverOnDisconnect)")
	fs.IntVar(&c.Batch, "batch", listener.DefaultBatchSize, "events per commit")
	fs.StringVar(&c.Control, "control", "127.0.0.1:9100", "control endpoint address (/status, /metrics, /health)")
	fs.StringVar(&c.AddrFile, "addr-file", "", "write the control endpoint's bound address to this file (for --control 127.0.0.1:0)")
	fs.StringVar(&c.HistoryPath, "history", "", "append the operation history (JSON lines, docs/history.md) to this file")
	fs.StringVar(&c.Target, "target", targets.Reference, "the election and store to run: a lock library instead of the reference (the unfenced ones run only under the chaos harness):"+targets.Describe())
	addEtcdFlag(fs, c)
	fs.StringVar(&c.Workload, "workload", WorkloadListener, workloadHelp)
	fs.StringVar(&c.Store, "store", StoreRedis, "where the cursor and the ledger live: redis (next to the lease) or postgres (--postgres)")
	fs.StringVar(&c.Postgres, "postgres", "", "PostgreSQL connection URL, for --store postgres (postgres://user@host:port/db)")
	fs.Int64Var(&c.AuditMaxLen, "audit-max-len", listener.DefaultAuditMaxLen, "keep about this many entries of the store's audit (0: all)")
	addChaosFlags(fs, c)
	return c, conn
}
