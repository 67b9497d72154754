package backend

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/fenceline/fenceline/targets"
)

// EtcdProxyName names node id's proxy to etcd member m (e1, e2...): "n1-etcd-e1".
func EtcdProxyName(id, m string) string { return id + "-etcd-" + m }

// EtcdMemberNames returns the names of an etcd cluster's n members, e1..en, as
// internal/etcdserver names them on the local backend and the docker backend names its
// containers.
func EtcdMemberNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "e" + strconv.Itoa(i+1)
	}
	return out
}

// ValidateEtcdMembers says what is wrong with an etcd cluster size: 0 (no etcd), 1, or 3
// (a majority of 2 survives one member down; an even size would add no fault tolerance).
func ValidateEtcdMembers(n int) error {
	if n != 0 && n != 1 && n != 3 {
		return fmt.Errorf("cluster: %d etcd members (1 or 3)", n)
	}
	return nil
}

// UsesEtcd reports whether the nodes' target elects through etcd, and so takes --etcd.
// A cluster may run etcd for nodes that do not use it (the backends' own tests do): they
// are not given the flag.
func (o NodeOptions) UsesEtcd() bool {
	t, err := targets.ByName(o.Target)
	return err == nil && t.Etcd
}

// EtcdArgs are a node's arguments to reach etcd through its proxies, in member order;
// none when the node does not use etcd or the cluster runs none.
func (o NodeOptions) EtcdArgs(proxies []string) []string {
	if !o.UsesEtcd() || len(proxies) == 0 {
		return nil
	}
	return []string{"--etcd", strings.Join(proxies, ",")}
}
