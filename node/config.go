package node

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/node/redisconn"
	"github.com/fenceline/fenceline/targets"
)

// Workloads a node runs.
const (
	WorkloadListener = "listener" // elect, then ingest the event source
	WorkloadRegister = "register" // concurrent fenced clients outside the election (chaos only)
)

// Stores a node keeps its cursor in.
const (
	StoreRedis    = "redis"    // RedisStore, next to the lease
	StorePostgres = "postgres" // pgstore.Store in the PostgreSQL at Config.Postgres
)

// Reference is the name of the reference design, the only one a default build runs.
const Reference = "reference"

// ChaosBuildHint says how to get a chaos build, for the messages that need one.
const ChaosBuildHint = "use a chaos build: bin/fenceline-chaos (make build), or go build -tags chaos ./cmd/fenceline"

// Config is one node's settings. Every field is required unless it says otherwise; zero
// is no setting (Validate rejects it rather than falling back to a default).
type Config struct {
	ID       string // instance id, unique among the nodes and stable across restarts
	Source   string // event source URL (listener workload)
	Election string // election name: the hash tag of every key
	Control  string // control endpoint address
	// AddrFile, if set, receives the control endpoint's bound address.
	AddrFile string
	// HistoryPath, if set, is the history file the node appends to (docs/history.md).
	HistoryPath string
	// Variant is the design to run: Reference, or (chaos build) a broken one.
	Variant string
	// RedlockServers are the addresses of the Redis servers the redlock-majority variant
	// locks on besides Redis (a chaos build, that variant only).
	RedlockServers []string
	// Target is the election and store to run (package targets): Reference, a -fenced
	// lock library, or (with Chaos) an unfenced one. Only with the reference variant.
	// "" is Reference.
	Target string
	// Workload is WorkloadListener or (with Chaos) WorkloadRegister.
	Workload string
	// Chaos enables the fault hooks on the control endpoint (a chaos build only).
	Chaos bool
	// Failpoints are armed at start, each "NAME=ACTION" (package internal/failpoint;
	// with Chaos only). Optional.
	Failpoints []string
	// RemoteControl allows a Chaos node a control address that is not loopback.
	RemoteControl bool
	// Lease is the lease TTL (> 0); Renew and Retry the election's intervals (0: the
	// election's defaults).
	Lease, Renew, Retry time.Duration
	// Takeover is election.Config.TakeoverOnDisconnect (the reference election only).
	Takeover bool
	// Batch is the number of events per commit; Clients the register workload's clients.
	Batch, Clients int
	// StartToken and StartCursor seed an empty store (with Chaos only): the token
	// counter, if it does not exist, is set to StartToken, and the cursor record, if it
	// does not exist, to cursor StartCursor and token 0. The harness's boundary starts.
	// Default 0: a fresh store.
	StartToken, StartCursor int64
	// Etcd are the etcd members' client addresses (host:port): required for a target that
	// elects through etcd (targets.Target.Etcd), refused for any other. Redis still holds
	// the cursor.
	Etcd []string
	// Store is StoreRedis (also when empty) or StorePostgres; Postgres is the
	// PostgreSQL connection URL of StorePostgres.
	Store, Postgres string
	// AuditMaxLen caps the store's audit (about that many entries; 0: every entry). A
	// Chaos node keeps every entry: the checker reads them all.
	AuditMaxLen int64
	// Redis are the client options (see election.ClientOptions).
	Redis *redis.Options
	// RedisTarget says how the client finds the primary (Sentinels or cluster seeds,
	// address map) and whether each script waits for replicas (WAIT). Optional: zero is
	// one Redis at Redis.Addr.
	RedisTarget redisconn.Target
}

// ErrUsage is wrapped by every error of Validate and Check, and by errors of Run that
// come from the settings rather than from what the node met.
var ErrUsage = errors.New("node: bad settings")

// Validate checks the settings without touching anything (Redis is not needed yet). Its errors wrap ErrUsage and
// are one line.
func (c Config) Validate() error {
	return usage(c.validate())
}

// usageError is an error of the settings: it wraps ErrUsage and keeps its message.
type usageError struct{ err error }

func (e usageError) Error() string   { return e.err.Error() }
func (e usageError) Unwrap() []error { return []error{ErrUsage, e.err} }

// usage marks err, if any, as an error of the settings.
func usage(err error) error {
	if err == nil {
		return nil
	}
	return usageError{err}
}

func (c Config) validate() error {
	if c.ID == "" {
		return errors.New("--id is required")
	}
	if err := CheckElection(c.Election); err != nil {
		return err
	}
	if err := checkVariant(c.Variant); err != nil {
		return err
	}
	if c.Variant != Reference && !c.Chaos {
		// A broken design must never run by accident outside the harness.
		return fmt.Errorf("variant %q is broken on purpose and runs only with --chaos", c.Variant)
	}
	if err := checkRedlock(c.Variant, c.RedlockServers); err != nil {
		return err
	}
	if err := c.validateTarget(); err != nil {
		return err
	}
	if c.Workload != WorkloadListener && c.Workload != WorkloadRegister {
		return fmt.Errorf("unknown workload %q (listener, register)", c.Workload)
	}
	if c.Workload == WorkloadRegister && !c.Chaos {
		// It takes tokens outside the election and commits synthetic events: on a live
		// store it deposes the leader and corrupts the cursor, sink and balances.
		return errors.New("the register workload commits synthetic events with tokens of its own and runs only with --chaos (the harness), never on a live store")
	}
	if len(c.Failpoints) > 0 && !c.Chaos {
		return errors.New("--failpoint needs --chaos: failpoints are fault hooks")
	}
	if (c.StartToken != 0 || c.StartCursor != 0) && !c.Chaos {
		return errors.New("--start-token and --start-cursor need --chaos: they seed the store of a harness's run")
	}
	if c.StartToken < 0 || c.StartCursor < 0 {
		return fmt.Errorf("--start-token %d and --start-cursor %d must be >= 0", c.StartToken, c.StartCursor)
	}
	if err := checkFailpoints(c.Failpoints); err != nil {
		return err
	}
	if c.Chaos {
		if err := chaosAvailable(); err != nil {
			return err
		}
		if !c.RemoteControl && !isLoopback(c.Control) {
			return fmt.Errorf("--chaos serves unauthenticated fault hooks on --control %q, which is not a loopback address; use 127.0.0.1, or add --chaos-allow-remote-control", c.Control)
		}
	}
	if err := c.RedisTarget.Validate(); err != nil {
		return err
	}
	switch {
	case c.Store != "" && c.Store != StoreRedis && c.Store != StorePostgres:
		return fmt.Errorf("unknown --store %q (redis, postgres)", c.Store)
	case c.Store == StorePostgres && c.Postgres == "":
		return errors.New("--store postgres needs --postgres URL")
	case c.Store == StorePostgres && c.Target != "" && c.Target != targets.Reference:
		return fmt.Errorf("--store postgres runs the reference target only (not %q)", c.Target)
	}
	if c.Takeover && c.Target != "" && c.Target != targets.Reference {
		return fmt.Errorf("--takeover-on-disconnect is an option of the reference election, not of --target %s", c.Target)
	}
	if c.Lease <= 0 || c.Batch < 1 || c.Clients < 1 || c.Renew < 0 || c.Retry < 0 || c.AuditMaxLen < 0 {
		return fmt.Errorf("need --lease-ttl > 0, --batch >= 1, --clients >= 1, --audit-max-len >= 0 and no negative interval (got %v, %d, %d, %d, %v, %v)",
			c.Lease, c.Batch, c.Clients, c.AuditMaxLen, c.Renew, c.Retry)
	}
	return nil
}

// validateTarget checks Target against the other settings.
func (c Config) validateTarget() error {
	t, err := targets.ByName(cmp.Or(c.Target, targets.Reference))
	if err != nil {
		return err
	}
	if !t.Etcd && len(c.Etcd) > 0 {
		return fmt.Errorf("--etcd is for the targets that elect through etcd (%s, %s), not --target %s", targets.Etcd, targets.EtcdFenced, t.Name)
	}
	if t.Name == targets.Reference {
		return nil
	}
	if c.Variant != Reference {
		return fmt.Errorf("--target %s and --variant %s: a variant is a change of the reference, not of a target", t.Name, c.Variant)
	}
	if c.Workload != WorkloadListener {
		return fmt.Errorf("--target %s runs the listener workload only", t.Name)
	}
	if t.Etcd {
		if err := checkEtcd(t.Name, c.Etcd); err != nil {
			return err
		}
	}
	if t.ChaosOnly {
		if err := chaosTarget(t.Name); err != nil {
			return err
		}
		if !c.Chaos {
			return fmt.Errorf("target %q runs only with --chaos: its lock is a stand-in for the Kubernetes API server's Lease, there for the harness to measure client-go's election", t.Name)
		}
	}
	if !t.Fenced && !c.Chaos {
		// Its plain write loses or duplicates events under faults: never by accident.
		return fmt.Errorf("target %q writes the cursor without a fence and runs only with --chaos, for the harness to measure", t.Name)
	}
	return nil
}

// WithConnection returns c with the Redis client options and target of conn's flags,
// once c is valid: the node's settings as `fenceline node` assembles them. Its errors
// wrap ErrUsage.
func (c Config) WithConnection(conn *redisconn.Flags) (Config, error) {
	if err := c.Validate(); err != nil {
		return c, err
	}
	opts, err := conn.Options()
	if err != nil {
		return c, usage(err)
	}
	c.Redis, c.RedisTarget = opts, conn.Target
	return c, nil
}

// CheckElection checks an election name: it is the hash tag of every key, so it cannot
// hold a brace (election.Config's rule, checked before anything starts).
func CheckElection(name string) error {
	if strings.ContainsAny(name, "{}") {
		return fmt.Errorf("--election %q: a name must not contain '{' or '}' (it is the keys' hash tag)", name)
	}
	return nil
}

// ready is Validate plus what Check and Run need besides: the Redis options, and a
// --control address that resolves (a port out of range, a host that does not exist are
// settings, not what the node met).
func (c Config) ready() error {
	if err := c.Validate(); err != nil {
		return err
	}
	if c.Redis == nil {
		return usage(errors.New("no Redis options"))
	}
	if _, err := net.ResolveTCPAddr("tcp", c.Control); err != nil {
		return usage(fmt.Errorf("--control %q: %w", c.Control, err))
	}
	return nil
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
