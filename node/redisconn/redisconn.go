// Package redisconn holds the Redis connection flags of the commands that talk to Redis
// (node, status): address, ACL user, password (from a variable rather than the command
// line), TLS. One set of flags, one way to build the client.
package redisconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/election"
)

// PasswordEnv is the environment variable a Redis password is read from. It is preferred
// over --redis-password, which any user of the machine can read in ps.
const PasswordEnv = "FENCELINE_REDIS_PASSWORD"

// Flags holds the connection options every subcommand that talks to Redis takes (node,
// status): one set of flags, one way to build the client.
type Flags struct {
	Addr, User                string
	password                  string
	tls                       bool
	caFile, certFile, keyFile string
	serverName                string
	passwordSet               bool // --redis-password was given (even empty)
	// Target is how the client finds its Redis (Sentinels, address map, WAIT).
	Target Target
}

// Add registers the connection flags on fs. The password's default is never printed: -h
// and a flag typo print the flag set's defaults, and they end up in logs.
func Add(fs *flag.FlagSet) *Flags {
	c := &Flags{}
	fs.StringVar(&c.Addr, "redis", "127.0.0.1:6379", "Redis address (host:port)")
	fs.StringVar(&c.User, "redis-user", "", "Redis ACL username (default: Redis's default user)")
	fs.Func("redis-password", "Redis `password` (default $"+PasswordEnv+"). Prefer the variable: a command line is visible to every user in ps",
		func(s string) error { c.password, c.passwordSet = s, true; return nil })
	fs.BoolVar(&c.tls, "redis-tls", false, "connect to Redis over TLS (implied by the --redis-tls-* files)")
	fs.StringVar(&c.caFile, "redis-tls-ca", "", "PEM file of the CA(s) that sign Redis's certificate (default: the system's roots)")
	fs.StringVar(&c.certFile, "redis-tls-cert", "", "PEM client certificate, for Redis's tls-auth-clients (with --redis-tls-key)")
	fs.StringVar(&c.keyFile, "redis-tls-key", "", "PEM key of --redis-tls-cert")
	fs.StringVar(&c.serverName, "redis-tls-server-name", "", "name to verify Redis's certificate against (default: the host of --redis)")
	addTarget(fs, &c.Target)
	return c
}

// Options returns the go-redis options: election.ClientOptions (no retries, context
// deadlines honoured) plus the user, password and TLS settings. The password comes from
// --redis-password if given, else from $FENCELINE_REDIS_PASSWORD. Errors are one line and
// never contain the password.
func (c *Flags) Options() (*redis.Options, error) {
	host, _, err := net.SplitHostPort(c.Addr)
	if err != nil || c.Addr == "" {
		return nil, fmt.Errorf("--redis %q: want host:port", c.Addr)
	}
	opts := election.ClientOptions(c.Addr)
	opts.Username = c.User
	opts.Password = c.password
	if !c.passwordSet {
		opts.Password = os.Getenv(PasswordEnv)
	}
	if c.User != "" && opts.Password == "" {
		return nil, fmt.Errorf("--redis-user %q needs a password (--redis-password or $%s)", c.User, PasswordEnv)
	}
	if (c.certFile == "") != (c.keyFile == "") {
		return nil, errors.New("--redis-tls-cert and --redis-tls-key go together")
	}
	if !c.tlsOn() {
		return opts, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.serverName}
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	if c.caFile != "" {
		pem, err := os.ReadFile(c.caFile)
		if err != nil {
			return nil, fmt.Errorf("--redis-tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--redis-tls-ca %s: no PEM certificate in it", c.caFile)
		}
		cfg.RootCAs = pool
	}
	if c.certFile != "" {
		cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
		if err != nil {
			return nil, fmt.Errorf("--redis-tls-cert/--redis-tls-key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	opts.TLSConfig = cfg
	return opts, nil
}

// tlsOn reports whether the connection uses TLS: --redis-tls or any TLS file or name.
func (c *Flags) tlsOn() bool {
	return c.tls || c.caFile != "" || c.certFile != "" || c.serverName != ""
}

// Client returns a go-redis client built from Options and Target (see NewClient). The
// caller closes it.
func (c *Flags) Client() (redis.UniversalClient, error) {
	opts, err := c.Options()
	if err != nil {
		return nil, err
	}
	if err := c.Target.Validate(); err != nil {
		return nil, err
	}
	return NewClient(opts, c.Target)
}

// Discard silences go-redis's own log lines, for a one-shot command whose error line
// already carries the cause (a second, plain-text line would only repeat it).
type Discard struct{}

// Printf does nothing.
func (Discard) Printf(context.Context, string, ...any) {}
