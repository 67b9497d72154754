package container

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/internal/pgserver"
)

// The PostgreSQL of a run: its port in the container, and the ports of the nodes'
// proxies to it in the toxiproxy container (node i: postgresProxyBase+i).
const (
	postgresPort      = "5432/tcp"
	postgresProxyBase = 12000
)

var errNoPostgres = errors.New("docker: no PostgreSQL in this cluster (--store postgres)")

// postgresArgs are node i's (0-based) arguments to reach PostgreSQL through its proxy.
func postgresArgs(i int) []string {
	return []string{"--postgres", pgserver.URLFor("toxiproxy:" + strconv.Itoa(postgresProxyBase+i+1))}
}

// createPostgresProxies creates each node's proxy to PostgreSQL.
func (c *Backend) createPostgresProxies(ctx context.Context) error {
	for i, id := range c.ids {
		if _, err := c.links.CreateProxy(ctx, backend.PostgresProxyName(id),
			"0.0.0.0:"+strconv.Itoa(postgresProxyBase+i+1), "postgres:"+portNum(postgresPort)); err != nil {
			return fmt.Errorf("docker: %w", err)
		}
	}
	return nil
}

// PostgresURL is the connection URL of the run's PostgreSQL as the runner reaches it
// (its published port on 127.0.0.1), bypassing every proxy; "" when the nodes keep the
// cursor in Redis. It changes when PostgreSQL is restarted.
func (c *Backend) PostgresURL() string {
	if c.postgres == nil {
		return ""
	}
	if addr := c.addr(c.postgres); addr != "" {
		return pgserver.URLFor(addr)
	}
	return ""
}

// KillPostgres crashes PostgreSQL: SIGQUIT to the postmaster, an immediate shutdown
// without a checkpoint that ends every backend (as the local backend does), and SIGKILL
// if the container has not exited within 10s. Its data stays in the container's
// writable layer.
func (c *Backend) KillPostgres(ctx context.Context) error {
	b := c.postgres
	if b == nil {
		return errNoPostgres
	}
	b.op.Lock()
	defer b.op.Unlock()
	exited, _, ok, _ := c.state(b)
	if !ok {
		return nil
	}
	if err := c.kill(ctx, b, "QUIT"); err != nil {
		return err
	}
	if waitClosed(ctx, exited, 10*time.Second) {
		return nil
	}
	return c.killWait(ctx, b)
}

// StartPostgres starts the same PostgreSQL container again if it is not running, and
// waits until it accepts connections (after replaying its write-ahead log).
func (c *Backend) StartPostgres(ctx context.Context) error {
	b := c.postgres
	if b == nil {
		return nil
	}
	b.op.Lock()
	defer b.op.Unlock()
	if _, _, ok, _ := c.state(b); ok {
		return nil
	}
	return c.start(ctx, b)
}

// AddPostgresToxic adds t to node id's link to PostgreSQL.
func (c *Backend) AddPostgresToxic(ctx context.Context, id string, t backend.Toxic) error {
	if c.postgres == nil {
		return errNoPostgres
	}
	if _, err := c.node(id); err != nil {
		return err
	}
	return c.links.AddToxic(ctx, backend.PostgresProxyName(id), t)
}

// RemovePostgresToxics removes the named toxics from node id's link to PostgreSQL.
func (c *Backend) RemovePostgresToxics(ctx context.Context, id string, names ...string) error {
	if c.postgres == nil {
		return nil
	}
	if _, err := c.node(id); err != nil {
		return err
	}
	return c.links.RemoveToxics(ctx, backend.PostgresProxyName(id), names...)
}

// probePostgres answers nil when PostgreSQL at addr runs SELECT 1.
func probePostgres(ctx context.Context, addr string) error {
	return pgserver.Ping(ctx, pgserver.URLFor(addr))
}
