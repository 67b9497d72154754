package docker

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/fenceline/fenceline/internal/pgserver"
)

// ImagePostgres is Debian's PostgreSQL 15 server FROM scratch, with a database cluster
// made at build time: the store of --store postgres. BuildImages builds it when
// BuildOptions.Postgres is set; Start needs it only for a cluster whose nodes keep the
// cursor in PostgreSQL.
const ImagePostgres = "fenceline-postgres:dev"

// The PostgreSQL of a run: its port in the container, and the ports of the nodes'
// proxies to it in the toxiproxy container (node i: postgresProxyBase+i).
const (
	postgresPort      = "5432/tcp"
	postgresProxyBase = 12000
)

// pgVersionDir is the PostgreSQL installation the image recipe (postgres.Dockerfile)
// is written for: the server finds its share directory from the path it was built for,
// so the image keeps Debian's paths.
const pgVersionDir = "/usr/lib/postgresql/15"

// pgUID is the unprivileged user the server runs as in the image (postgres.Dockerfile).
const pgUID = 70

// pgSettings are appended to the image's postgresql.conf: reachable from the run's
// network, no Unix socket (the directory would not exist), durable commits (the restart
// fault must find every committed transaction), no JIT (its library is not in the image).
const pgSettings = `
listen_addresses = '*'
port = 5432
unix_socket_directories = ''
max_connections = 100
fsync = on
synchronous_commit = on
jit = off
timezone = 'UTC'
log_timezone = 'UTC'
`

// pgHBA lets the superuser in from any address without a password: the server is
// reachable only on the run's private network and on the host's 127.0.0.1.
const pgHBA = "host all all 0.0.0.0/0 trust\nhost all all ::/0 trust\n"

// postgresRootfs assembles the image's context in dir: rootfs/ with the server, its
// libraries, the share directory, the UTC zone and the passwd files. The database
// cluster (pgdata/data) is made by postgresData, only when the image is built: initdb's output
// differs on every run and would change the hash.
func postgresRootfs(ctx context.Context, dir string) error {
	bin, err := pgserver.BinDir()
	if err != nil {
		return err
	}
	if filepath.Dir(bin) != pgVersionDir {
		return fmt.Errorf("PostgreSQL at %s: the image recipe is written for %s (Debian 12's PostgreSQL 15)", bin, pgVersionDir)
	}
	root := filepath.Join(dir, "rootfs")
	server := filepath.Join(bin, "postgres")
	// plpgsql: initdb installs the language in every database; a DO block loads it.
	plpgsql := filepath.Join(pgVersionDir, "lib", "plpgsql.so")
	for _, f := range []string{server, plpgsql} {
		if err := copyWithLibs(ctx, f, root); err != nil {
			return err
		}
	}
	share := "/usr/share/postgresql/15"
	if err := copyTree(share, filepath.Join(root, share)); err != nil {
		return err
	}
	for _, z := range []string{"/usr/share/zoneinfo/UTC", "/usr/share/zoneinfo/Etc/UTC"} {
		if err := copyFile(z, filepath.Join(root, z), 0o644); err != nil {
			return err
		}
	}
	id := strconv.Itoa(pgUID)
	files := map[string]string{
		"etc/passwd": "root:x:0:0:root:/:/nonexistent\npostgres:x:" + id + ":" + id + ":PostgreSQL:/var/lib/postgresql:/nonexistent\n",
		"etc/group":  "root:x:0:\npostgres:x:" + id + ":\n",
	}
	for name, body := range files {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(name)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// postgresData runs initdb on the host (as the postgres user when run as root) and puts
// the database cluster in dir/pgdata/data, with the harness's settings and access rule.
func postgresData(ctx context.Context, dir string) error {
	tmp, err := os.MkdirTemp("", "fenceline-postgres-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	data := filepath.Join(tmp, "data")
	if err := pgserver.InitDB(ctx, data, "--no-sync"); err != nil {
		return err
	}
	if err := appendFile(filepath.Join(data, "postgresql.conf"), pgSettings); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(data, "pg_hba.conf"), []byte(pgHBA), 0o600); err != nil {
		return err
	}
	return copyTree(data, filepath.Join(dir, "pgdata", "data"))
}

// copyWithLibs copies file and every library ldd lists for it below root, at the same
// paths.
func copyWithLibs(ctx context.Context, file, root string) error {
	libs, err := lddLibs(ctx, file)
	if err != nil {
		return err
	}
	for _, f := range append([]string{file}, libs...) {
		if err := copyFile(f, filepath.Join(root, f), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// copyTree copies the directory src to dst: directories, regular files and their
// permission bits (PostgreSQL refuses a data directory open to others); symlinks are
// followed.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		if st.IsDir() {
			if err := os.MkdirAll(to, 0o755); err != nil {
				return err
			}
			return os.Chmod(to, st.Mode().Perm())
		}
		return copyFile(p, to, st.Mode().Perm())
	})
}

func appendFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(s); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// The PostgreSQL of a cluster whose store is PostgreSQL: the abilities the faults
// postgres-restart and partition-postgres of package nemesis find by type assertion.
