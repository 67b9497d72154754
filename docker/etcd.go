package docker

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
)

// ImageEtcd is Debian's etcd server FROM scratch: the members of a run whose target
// elects through etcd. BuildImages builds it when BuildOptions.Etcd is set; Start needs
// it only for a cluster that runs etcd.
const ImageEtcd = "fenceline-etcd:dev"

// ErrEtcdNotInstalled is returned by BuildImages when no etcd binary is found.
var ErrEtcdNotInstalled = errors.New("docker: etcd not found (install Debian's etcd-server: apt-get install -y etcd-server)")

// etcdImagePath is where the image keeps etcd (etcd.Dockerfile's entrypoint).
const etcdImagePath = "/usr/bin/etcd"

// etcdRootfs assembles the image's context in dir: rootfs/ with etcd and its libraries.
func etcdRootfs(ctx context.Context, dir string) error {
	bin, err := exec.LookPath("etcd")
	if err != nil {
		return ErrEtcdNotInstalled
	}
	bin, err = filepath.EvalSymlinks(bin)
	if err != nil {
		return err
	}
	root := filepath.Join(dir, "rootfs")
	libs, err := lddLibs(ctx, bin)
	if err != nil {
		return err
	}
	if err := copyFile(bin, filepath.Join(root, etcdImagePath), 0o755); err != nil {
		return err
	}
	for _, l := range libs {
		if err := copyFile(l, filepath.Join(root, l), 0o755); err != nil {
			return err
		}
	}
	return nil
}
