package main

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

// passwordEnv is the environment variable a Redis password is read from. It is preferred
// over --redis-password, which any user of the machine can read in ps.
const passwordEnv = "FENCELINE_REDIS_PASSWORD"

// redisConn holds the connection options every subcommand that talks to Redis takes (node,
// status): one set of flags, one way to build the client.
type redisConn struct {
	addr, user, password      string
	tls                       bool
	caFile, certFile, keyFile string
	serverName                string
	passwordSet               bool // --redis-password was given (even empty)
}

// addRedisFlags registers the connection flags on fs. The password's default is never
// printed: -h and a flag typo print the flag set's defaults, and they end up in logs.
func addRedisFlags(fs *flag.FlagSet) *redisConn {
	c := &redisConn{}
	fs.StringVar(&c.addr, "redis", "127.0.0.1:6379", "Redis address (host:port)")
	fs.StringVar(&c.user, "redis-user", "", "Redis ACL username (default: Redis's default user)")
	fs.Func("redis-password", "Redis `password` (default $"+passwordEnv+"). Prefer the variable: a command line is visible to every user in ps",
		func(s string) error { c.password, c.passwordSet = s, true; return nil })
	fs.BoolVar(&c.tls, "redis-tls", false, "connect to Redis over TLS (implied by the --redis-tls-* files)")
	fs.StringVar(&c.caFile, "redis-tls-ca", "", "PEM file of the CA(s) that sign Redis's certificate (default: the system's roots)")
	fs.StringVar(&c.certFile, "redis-tls-cert", "", "PEM client certificate, for Redis's tls-auth-clients (with --redis-tls-key)")
	fs.StringVar(&c.keyFile, "redis-tls-key", "", "PEM key of --redis-tls-cert")
	fs.StringVar(&c.serverName, "redis-tls-server-name", "", "name to verify Redis's certificate against (default: the host of --redis)")
	return c
}

// options returns the go-redis options: election.ClientOptions (no retries, context
// deadlines honoured) plus the user, password and TLS settings. The password comes from
// --redis-password if given, else from $FENCELINE_REDIS_PASSWORD. Errors are one line and
// never contain the password.
func (c *redisConn) options() (*redis.Options, error) {
	host, _, err := net.SplitHostPort(c.addr)
	if err != nil || c.addr == "" {
		return nil, fmt.Errorf("--redis %q: want host:port", c.addr)
	}
	opts := election.ClientOptions(c.addr)
	opts.Username = c.user
	opts.Password = c.password
	if !c.passwordSet {
		opts.Password = os.Getenv(passwordEnv)
	}
	if c.user != "" && opts.Password == "" {
		return nil, fmt.Errorf("--redis-user %q needs a password (--redis-password or $%s)", c.user, passwordEnv)
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
func (c *redisConn) tlsOn() bool {
	return c.tls || c.caFile != "" || c.certFile != "" || c.serverName != ""
}

// client returns a go-redis client built from options. The caller closes it.
func (c *redisConn) client() (*redis.Client, error) {
	opts, err := c.options()
	if err != nil {
		return nil, err
	}
	return redis.NewClient(opts), nil
}

// discardRedisLog silences go-redis's own log lines, for a one-shot command whose error
// line already carries the cause (a second, plain-text line would only repeat it).
type discardRedisLog struct{}

func (discardRedisLog) Printf(context.Context, string, ...any) {}
