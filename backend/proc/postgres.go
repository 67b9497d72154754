package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/internal/pgserver"
)

// PostgresDir is the run directory's subdirectory of PostgreSQL: its log stays, its data
// directory is removed when the cluster closes.
const PostgresDir = "postgres"

// startPostgres starts the cluster's PostgreSQL in the run directory (initdb, a free
// port) and one proxy per node to it.
func (l *Backend) startPostgres(ctx context.Context) error {
	pg, err := pgserver.Start(ctx, pgserver.Options{Dir: filepath.Join(l.cfg.Dir, PostgresDir)})
	if err != nil {
		return err
	}
	l.pg = pg
	for _, id := range l.ids {
		addr, err := l.links.CreateProxy(ctx, backend.PostgresProxyName(id), "127.0.0.1:0", pg.Addr())
		if err != nil {
			return err
		}
		l.nodes[id].postgres = pgserver.URLFor(addr)
	}
	return nil
}

// PostgresURL is the connection URL of the cluster's PostgreSQL as the runner reaches
// it, bypassing every proxy; "" when the nodes keep the cursor in Redis.
func (l *Backend) PostgresURL() string {
	if l.pg == nil {
		return ""
	}
	return l.pg.URL()
}

// KillPostgres crashes PostgreSQL (an immediate shutdown).
func (l *Backend) KillPostgres(ctx context.Context) error {
	if l.pg == nil {
		return errors.New("cluster: no PostgreSQL in this cluster")
	}
	l.pg.Kill()
	return nil
}

// StartPostgres starts PostgreSQL again if it is not running.
func (l *Backend) StartPostgres(ctx context.Context) error {
	if l.pg == nil {
		return nil
	}
	if err := pgserver.Ping(ctx, l.pg.URL()); err == nil {
		return nil
	}
	return l.pg.Restart(ctx)
}

// AddPostgresToxic adds t to node id's link to PostgreSQL.
func (l *Backend) AddPostgresToxic(ctx context.Context, id string, t backend.Toxic) error {
	if l.pg == nil {
		return errors.New("cluster: no PostgreSQL in this cluster")
	}
	return l.links.AddToxic(ctx, backend.PostgresProxyName(id), t)
}

// RemovePostgresToxics removes the named toxics from node id's link to PostgreSQL.
func (l *Backend) RemovePostgresToxics(ctx context.Context, id string, names ...string) error {
	if l.pg == nil {
		return nil
	}
	return l.links.RemoveToxics(ctx, backend.PostgresProxyName(id), names...)
}

// closePostgres stops PostgreSQL and removes its data directory (the run keeps the log
// and the final read in store.json).
func (l *Backend) closePostgres() error {
	if l.pg == nil {
		return nil
	}
	l.pg.Kill()
	data := l.pg.DataDir()
	if filepath.Dir(data) != filepath.Join(l.cfg.Dir, PostgresDir) {
		data = filepath.Dir(data) // a directory of its own, outside the run
	}
	if err := os.RemoveAll(data); err != nil {
		return fmt.Errorf("cluster: remove PostgreSQL's data: %w", err)
	}
	return nil
}
