package container

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"time"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/docker"
)

// Config configures a docker cluster.
type Config struct {
	backend.Spec
	// RunID names the run: every container and the network carry the label
	// fenceline.run=<RunID> and their names start with fenceline-<RunID>-. Lower-case
	// letters, digits and dashes. Default: 8 random hex digits.
	RunID string
	// StopGrace is how long StopNode waits after SIGTERM before it sends SIGKILL.
	// Default 10s.
	StopGrace time.Duration
	// StartTimeout bounds the wait for one container to answer after it starts (the
	// node's /health, Redis's PING, toxiproxy's /version, the source's /health).
	// Default 30s.
	StartTimeout time.Duration
	// RedisImage is the image of Redis: the single server, or the sentinel topology's
	// data nodes and Sentinels (run as `redis-server CONF --sentinel`). Default
	// docker.ImageRedis.
	RedisImage string
	// PostgresImage is the image of the run's PostgreSQL, for a store in PostgreSQL. It
	// must serve the superuser postgres without a password on port 5432. Default
	// docker.ImagePostgres.
	PostgresImage string
	// EtcdImage is the image of the etcd members, for a cluster that runs etcd: etcd
	// itself as the entrypoint, given every flag. Default docker.ImageEtcd.
	EtcdImage string
	// Logger receives the backend's own events (container started, killed...). Default:
	// discard.
	Logger *slog.Logger
}

var runIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,39}$`)

// defaults fills in the defaults and validates the configuration.
func (c *Config) defaults() error {
	spec, err := c.Spec.WithDefaults()
	if err != nil {
		return fmt.Errorf("docker: %w", err)
	}
	c.Spec = spec
	if c.Nodes > 900 {
		return fmt.Errorf("docker: %d nodes (1..900)", c.Nodes)
	}
	if c.RunID == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		c.RunID = hex.EncodeToString(b[:])
	}
	if !runIDPattern.MatchString(c.RunID) {
		return fmt.Errorf("docker: run id %q: want lower-case letters, digits and dashes", c.RunID)
	}
	if c.StopGrace == 0 {
		c.StopGrace = 10 * time.Second
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = 30 * time.Second
	}
	if c.StopGrace < 0 || c.StartTimeout < 0 {
		return errors.New("docker: negative StopGrace or StartTimeout")
	}
	if c.RedisImage == "" {
		c.RedisImage = docker.ImageRedis
	}
	if c.PostgresImage == "" {
		c.PostgresImage = docker.ImagePostgres
	}
	if c.EtcdImage == "" {
		c.EtcdImage = docker.ImageEtcd
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}
