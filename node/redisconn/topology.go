package redisconn

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/election"
)

// Target says how the client finds the Redis it writes to, beyond the single address of
// Options: through Sentinel, with the addresses it is told translated, and whether each
// write must reach replicas before it counts. The zero value is one Redis at Options.Addr.
type Target struct {
	// Sentinels are the Sentinels' addresses (host:port). Empty: no Sentinel, the client
	// talks to Options.Addr. With Sentinels the client asks them for the primary of
	// Master and follows a promotion (go-redis FailoverClient).
	Sentinels []string
	// Master is the name the Sentinels monitor the primary under. Required with Sentinels.
	Master string
	// Cluster are seed addresses (host:port) of a Redis Cluster. Not empty: the client is
	// a go-redis ClusterClient, which learns the cluster's nodes from CLUSTER SLOTS and
	// follows MOVED on the next call (never on the same one: see NewClient). Exclusive
	// with Sentinels.
	Cluster []string
	// AddrMap translates a Redis address the client is told (by a Sentinel, or by a
	// cluster node in CLUSTER SLOTS and MOVED) into the
	// address it dials, as a NAT would: Sentinel announces one address per server, and
	// a client behind its own proxy (the chaos harness gives each node one) or a port
	// forward reaches it elsewhere. An address not in the map is dialled as told.
	AddrMap map[string]string
	// Wait, when positive, sends WAIT Wait WaitTimeout after every script (the
	// election's acquire, renew, adoption and release, the store's commit), in the same
	// pipeline and so on the same connection (election.AddWait): a script whose writes
	// did not reach Wait replicas within WaitTimeout returns an error wrapping
	// election.ErrWaitMissed. The write did happen on the primary, so its outcome is
	// unknown, never a success. Default 0.
	Wait int
	// WaitTimeout bounds each WAIT. Required (> 0) with Wait; it must leave room within
	// the request deadline of the election (RenewInterval/2 by default).
	WaitTimeout time.Duration
}

// Validate says what is wrong with t, in the words of the flags.
func (t Target) Validate() error {
	switch {
	case len(t.Sentinels) > 0 && t.Master == "":
		return errors.New("--redis-sentinels needs --redis-master")
	case len(t.Sentinels) > 0 && len(t.Cluster) > 0:
		return errors.New("--redis-sentinels and --redis-cluster exclude each other")
	case t.Wait < 0:
		return fmt.Errorf("--redis-wait %d: want >= 0", t.Wait)
	case t.Wait > 0 && t.WaitTimeout <= 0:
		return fmt.Errorf("--redis-wait %d needs --redis-wait-timeout > 0", t.Wait)
	case t.Wait > 0 && t.WaitTimeout%time.Millisecond != 0:
		return fmt.Errorf("--redis-wait-timeout %v: want whole milliseconds", t.WaitTimeout)
	}
	for from, to := range t.AddrMap {
		if _, _, err := net.SplitHostPort(from); err != nil {
			return fmt.Errorf("--redis-addr-map %q: want host:port=host:port", from)
		}
		if _, _, err := net.SplitHostPort(to); err != nil {
			return fmt.Errorf("--redis-addr-map %q: want host:port=host:port", to)
		}
	}
	for _, s := range t.Sentinels {
		if _, _, err := net.SplitHostPort(s); err != nil {
			return fmt.Errorf("--redis-sentinels %q: want host:port,...", s)
		}
	}
	for _, s := range t.Cluster {
		if _, _, err := net.SplitHostPort(s); err != nil {
			return fmt.Errorf("--redis-cluster %q: want host:port,...", s)
		}
	}
	return nil
}

// NewClient returns the client for t, built on base (election.ClientOptions plus
// credentials and TLS; its MaxRetries, timeouts, idle connections and TLS carry over to every connection,
// a Sentinel's included). The caller closes it. It fails only if t's Wait options are
// invalid (see Target.Validate).
func NewClient(base *redis.Options, t Target) (redis.UniversalClient, error) {
	c := newClient(base, t)
	if t.Wait > 0 {
		if err := election.AddWait(c, t.Wait, t.WaitTimeout); err != nil {
			_ = c.Close()
			return nil, err
		}
	}
	return c, nil
}

func newClient(base *redis.Options, t Target) redis.UniversalClient {
	if len(t.Cluster) > 0 {
		return newClusterClient(base, t)
	}
	var c *redis.Client
	if len(t.Sentinels) == 0 {
		opts := *base
		if len(t.AddrMap) > 0 {
			opts.Dialer = mapDialer(base, t.AddrMap)
		}
		c = redis.NewClient(&opts)
	} else {
		c = redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName:            t.Master,
			SentinelAddrs:         t.Sentinels,
			Dialer:                mapDialer(base, t.AddrMap),
			Username:              base.Username,
			Password:              base.Password,
			MaxRetries:            base.MaxRetries,
			DialTimeout:           base.DialTimeout,
			DialerRetries:         base.DialerRetries,
			ReadTimeout:           base.ReadTimeout,
			WriteTimeout:          base.WriteTimeout,
			ContextTimeoutEnabled: base.ContextTimeoutEnabled,
			PoolSize:              base.PoolSize,
			MinIdleConns:          base.MinIdleConns,
			PoolFIFO:              base.PoolFIFO,
			TLSConfig:             base.TLSConfig,
		})
	}
	return c
}

// newClusterClient is NewClient for a Redis Cluster. MaxRedirects is -1 (none): go-redis
// sends a command again after MOVED, but also after an EOF or a timeout on the same
// connection, that is after a command that may have run. With none, a MOVED (the
// command did not run) is an error to the caller, and the client reloads the slots for
// the next call. Each node's client gets the address map (and NewClient's WAIT hook).
func newClusterClient(base *redis.Options, t Target) *redis.ClusterClient {
	c := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                 t.Cluster,
		Dialer:                mapDialer(base, t.AddrMap),
		Username:              base.Username,
		Password:              base.Password,
		MaxRetries:            base.MaxRetries,
		MaxRedirects:          -1,
		DialTimeout:           base.DialTimeout,
		DialerRetries:         base.DialerRetries,
		ReadTimeout:           base.ReadTimeout,
		WriteTimeout:          base.WriteTimeout,
		ContextTimeoutEnabled: base.ContextTimeoutEnabled,
		PoolSize:              base.PoolSize,
		MinIdleConns:          base.MinIdleConns,
		PoolFIFO:              base.PoolFIFO,
		TLSConfig:             base.TLSConfig,
		Protocol:              base.Protocol,
	})
	return c
}

// mapDialer dials m[addr] for addr (addr itself when not in m), with base's timeout and
// TLS. The connection reports addr as its remote address: go-redis's FailoverClient
// drops the connections to a demoted primary by comparing that address with what
// Sentinel announced.
func mapDialer(base *redis.Options, m map[string]string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		to, ok := m[addr]
		if !ok {
			to = addr
		}
		d := net.Dialer{Timeout: base.DialTimeout}
		conn, err := d.DialContext(ctx, network, to)
		if err != nil {
			return nil, err
		}
		if base.TLSConfig != nil {
			cfg := base.TLSConfig.Clone()
			if cfg.ServerName == "" {
				cfg.ServerName, _, _ = net.SplitHostPort(addr)
			}
			conn = tls.Client(conn, cfg)
		}
		if !ok {
			return conn, nil
		}
		ra, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			return conn, nil
		}
		return announcedConn{Conn: conn, remote: ra}, nil
	}
}

type announcedConn struct {
	net.Conn
	remote net.Addr
}

func (c announcedConn) RemoteAddr() net.Addr { return c.remote }

// addTarget registers the flags of a Target on fs.
func addTarget(fs *flag.FlagSet, t *Target) {
	fs.Func("redis-sentinels", "find the primary through these Sentinels (host:port,...) instead of --redis", func(s string) error {
		t.Sentinels = splitList(s)
		return nil
	})
	fs.StringVar(&t.Master, "redis-master", "", "with --redis-sentinels: the name the Sentinels monitor the primary under")
	fs.Func("redis-cluster", "Redis Cluster: these nodes (host:port,...) are seeds, the client follows the cluster's slots instead of --redis", func(s string) error {
		t.Cluster = splitList(s)
		return nil
	})
	fs.Func("redis-addr-map", "dial TO when a Sentinel or a cluster node announces FROM (FROM=TO,...), as through a NAT", func(s string) error {
		t.AddrMap = map[string]string{}
		for _, kv := range splitList(s) {
			from, to, ok := strings.Cut(kv, "=")
			if !ok {
				return fmt.Errorf("%q: want FROM=TO", kv)
			}
			t.AddrMap[from] = to
		}
		return nil
	})
}

// AddWait registers --redis-wait and --redis-wait-timeout on fs, for the node.
func (c *Flags) AddWait(fs *flag.FlagSet) {
	fs.IntVar(&c.Target.Wait, "redis-wait", 0, "after every script (acquire, renew, release, commit), WAIT for this many replicas; a miss makes the step fail (its outcome unknown)")
	fs.DurationVar(&c.Target.WaitTimeout, "redis-wait-timeout", 100*time.Millisecond, "how long each --redis-wait WAIT may take")
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
