package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/internal/etcdserver"
)

// EtcdDir is the run directory's subdirectory of the etcd members: each has its own,
// e1, e2..., whose etcd.log stays and whose data directory is removed when the cluster
// closes.
const EtcdDir = "etcd"

var errNoEtcd = errors.New("cluster: no etcd in this cluster (--etcd-members)")

// startEtcd starts the cluster's etcd members in the run directory and, per node, one
// proxy to each member.
func (l *Backend) startEtcd(ctx context.Context) error {
	ec, err := etcdserver.Start(ctx, etcdserver.Options{Dir: filepath.Join(l.cfg.Dir, EtcdDir), Members: l.cfg.EtcdMembers})
	if err != nil {
		return err
	}
	l.etcd = ec
	for _, id := range l.ids {
		for _, m := range ec.Members() {
			addr, err := l.links.CreateProxy(ctx, backend.EtcdProxyName(id, m.Name()), "127.0.0.1:0", m.Addr())
			if err != nil {
				return err
			}
			l.nodes[id].etcd = append(l.nodes[id].etcd, addr)
		}
	}
	return nil
}

// EtcdMembers lists the etcd members' names (e1, e2...); none when the cluster runs no etcd.
func (l *Backend) EtcdMembers() []string {
	if l.etcd == nil {
		return nil
	}
	return backend.EtcdMemberNames(len(l.etcd.Members()))
}

// EtcdAddr is member m's client address as the runner reaches it, bypassing every proxy.
func (l *Backend) EtcdAddr(m string) string {
	if mb, err := l.etcdMember(m); err == nil {
		return mb.Addr()
	}
	return ""
}

// EtcdProxyAddr is the address node id reaches member m at: its proxy's.
func (l *Backend) EtcdProxyAddr(id, m string) string {
	n, ok := l.nodes[id]
	if !ok || l.etcd == nil {
		return ""
	}
	for i, mb := range l.etcd.Members() {
		if mb.Name() == m && i < len(n.etcd) {
			return n.etcd[i]
		}
	}
	return ""
}

func (l *Backend) etcdMember(m string) (*etcdserver.Member, error) {
	if l.etcd == nil {
		return nil, errNoEtcd
	}
	for _, mb := range l.etcd.Members() {
		if mb.Name() == m {
			return mb, nil
		}
	}
	return nil, fmt.Errorf("cluster: no etcd member %q", m)
}

// EtcdLeader names the member that is the raft leader now, by the members' own status.
func (l *Backend) EtcdLeader(ctx context.Context) (string, error) {
	if l.etcd == nil {
		return "", errNoEtcd
	}
	ms := l.etcd.Members()
	i, err := etcdserver.Leader(ctx, l.etcd.Endpoints())
	if err != nil {
		return "", err
	}
	return ms[i].Name(), nil
}

// KillEtcd kills member m (SIGKILL); its data directory stays for StartEtcd.
func (l *Backend) KillEtcd(ctx context.Context, m string) error {
	mb, err := l.etcdMember(m)
	if err != nil {
		return err
	}
	mb.Kill()
	return nil
}

// PauseEtcd stops member m with SIGSTOP; StartEtcd continues it.
func (l *Backend) PauseEtcd(ctx context.Context, m string) error {
	mb, err := l.etcdMember(m)
	if err != nil {
		return err
	}
	return mb.Pause()
}

// StartEtcd continues every paused member and starts every member that is down, with
// its data, waiting until each is healthy (which needs a quorum of the cluster). It does
// nothing when the cluster runs no etcd.
func (l *Backend) StartEtcd(ctx context.Context) error {
	if l.etcd == nil {
		return nil
	}
	var errs []error
	for _, mb := range l.etcd.Members() {
		if mb.Running() {
			errs = append(errs, mb.Resume()) // a no-op on a member that is not paused
			continue
		}
		errs = append(errs, mb.Restart(ctx))
	}
	return errors.Join(errs...)
}

// AddEtcdToxic adds t to node id's links to every etcd member.
func (l *Backend) AddEtcdToxic(ctx context.Context, id string, t backend.Toxic) error {
	if l.etcd == nil {
		return errNoEtcd
	}
	if _, err := l.node(id); err != nil {
		return err
	}
	for _, m := range l.EtcdMembers() {
		if err := l.links.AddToxic(ctx, backend.EtcdProxyName(id, m), t); err != nil {
			return err
		}
	}
	return nil
}

// RemoveEtcdToxics removes the named toxics from node id's links to every etcd member.
func (l *Backend) RemoveEtcdToxics(ctx context.Context, id string, names ...string) error {
	if l.etcd == nil {
		return nil
	}
	if _, err := l.node(id); err != nil {
		return err
	}
	var errs []error
	for _, m := range l.EtcdMembers() {
		errs = append(errs, l.links.RemoveToxics(ctx, backend.EtcdProxyName(id, m), names...))
	}
	return errors.Join(errs...)
}

// closeEtcd kills every member and removes their data directories (the run keeps their
// logs).
func (l *Backend) closeEtcd() error {
	if l.etcd == nil {
		return nil
	}
	l.etcd.Kill()
	var errs []error
	for _, mb := range l.etcd.Members() {
		if err := os.RemoveAll(filepath.Join(mb.Dir(), "data")); err != nil {
			errs = append(errs, fmt.Errorf("cluster: remove etcd's data: %w", err))
		}
	}
	return errors.Join(errs...)
}
