package nemesis

import (
	"context"
	"errors"
	"fmt"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/faults"
)

// TargetEtcd is the target of the faults on etcd's members.
const TargetEtcd = "etcd"

// EtcdCluster is the etcd members of a cluster that runs etcd (Spec.EtcdMembers): what
// etcd-kill, etcd-pause and etcd-restart act on, and what HealAll starts again.
type EtcdCluster interface {
	// EtcdMembers lists the members' names (e1, e2...); none when the cluster runs no etcd.
	EtcdMembers() []string
	// EtcdLeader names the member that is the raft leader now.
	EtcdLeader(ctx context.Context) (string, error)
	KillEtcd(ctx context.Context, member string) error
	PauseEtcd(ctx context.Context, member string) error
	// StartEtcd continues every paused member and starts every member that is down
	// (a no-op when all run), and waits until they are healthy.
	StartEtcd(ctx context.Context) error
}

// EtcdLinks change a node's links to the etcd members: all of them at once.
type EtcdLinks interface {
	AddEtcdToxic(ctx context.Context, id string, t backend.Toxic) error
	RemoveEtcdToxics(ctx context.Context, id string, names ...string) error
}

var errNoEtcd = fmt.Errorf("nemesis: %w: this cluster runs no etcd (--etcd-members)", faults.ErrNoEtcd)

func etcdCluster(c Backend) (EtcdCluster, error) {
	e, ok := c.(EtcdCluster)
	if !ok || len(e.EtcdMembers()) == 0 {
		return nil, errNoEtcd
	}
	return e, nil
}

// etcdMemberFault acts on one member's process: etcd-kill (SIGKILL) and etcd-pause
// (SIGSTOP) hit the raft leader, so that a three-member cluster must elect another one
// while its old leader is gone or frozen (the member that leased the sessions of the
// nodes); etcd-restart kills the member the step's Variant picks and starts it again at
// once (a short hold). Heal starts or continues the member. With one member, each of
// them takes etcd away from every node: no quorum, no lease renewed, no write, until the
// heal.
type etcdMemberFault struct {
	kind   string
	member string // the member hit, for the heal's words
}

func (f *etcdMemberFault) Kind() string   { return f.kind }
func (*etcdMemberFault) AimsAtNode() bool { return false }
func (*etcdMemberFault) Target() string   { return TargetEtcd }

func (f *etcdMemberFault) Inject(ctx context.Context, c Backend, _ string, p Params) (string, error) {
	e, err := etcdCluster(c)
	if err != nil {
		return "", err
	}
	ms := e.EtcdMembers()
	why := "the raft leader"
	switch {
	case f.kind == faults.EtcdRestart:
		f.member, why = ms[p.Variant%len(ms)], "picked by the seed"
	case len(ms) == 1:
		f.member, why = ms[0], "the only member"
	default:
		if f.member, err = e.EtcdLeader(ctx); err != nil {
			// Mid-election: no leader to aim at, so any member will do.
			f.member, why = ms[p.Variant%len(ms)], "no leader in sight, picked by the seed"
		}
	}
	if f.kind == faults.EtcdPause {
		return fmt.Sprintf("SIGSTOP etcd member %s (%s)", f.member, why), e.PauseEtcd(ctx, f.member)
	}
	return fmt.Sprintf("SIGKILL etcd member %s (%s)", f.member, why), e.KillEtcd(ctx, f.member)
}

func (f *etcdMemberFault) Heal(ctx context.Context, c Backend, _ string) (string, error) {
	e, err := etcdCluster(c)
	if err != nil {
		return "", nil
	}
	what := "etcd members running"
	if f.member != "" {
		what = "etcd member " + f.member + " running again"
	}
	if err := e.StartEtcd(ctx); err != nil {
		return "", fmt.Errorf("nemesis: %w", err)
	}
	return what, nil
}

// etcdPartitionFault cuts a node off from every etcd member (blackhole: data dropped,
// connections hang) while its links to Redis, where it writes, stay up: its session's
// keep-alives go unanswered, the lease expires in etcd and another node wins, while the
// cut-off node may believe it leads until its client notices.
type etcdPartitionFault struct{}

func (etcdPartitionFault) Kind() string     { return faults.PartitionEtcd }
func (etcdPartitionFault) AimsAtNode() bool { return true }

func (etcdPartitionFault) Inject(ctx context.Context, c Backend, target string, _ Params) (string, error) {
	l, ok := c.(EtcdLinks)
	if _, err := etcdCluster(c); err != nil || !ok {
		return "", errNoEtcd
	}
	attrs := map[string]any{"timeout": 0}
	for _, t := range []backend.Toxic{
		{Name: toxicPartitionUp, Type: "timeout", Stream: "upstream", Toxicity: 1, Attributes: attrs},
		{Name: toxicPartitionDown, Type: "timeout", Stream: "downstream", Toxicity: 1, Attributes: attrs},
	} {
		if err := l.AddEtcdToxic(ctx, target, t); err != nil {
			return "", fmt.Errorf("nemesis: %w", err)
		}
	}
	return "etcd links: data dropped, connections hang", nil
}

func (etcdPartitionFault) Heal(ctx context.Context, c Backend, target string) (string, error) {
	l, ok := c.(EtcdLinks)
	if !ok {
		return "", nil
	}
	if err := l.RemoveEtcdToxics(ctx, target, toxicPartitionUp, toxicPartitionDown); err != nil {
		return "", fmt.Errorf("nemesis: %w", err)
	}
	return "toxics removed", nil
}

// healEtcd is HealAll's part for etcd: every member running and thawed.
func healEtcd(ctx context.Context, c Backend) error {
	e, err := etcdCluster(c)
	if errors.Is(err, faults.ErrNoEtcd) {
		return nil
	}
	return e.StartEtcd(ctx)
}
