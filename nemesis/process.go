package nemesis

import (
	"context"

	"github.com/fenceline/fenceline/faults"
)

// killFault kills a node with SIGKILL: no release, the lease must expire. Heal restarts it.
type killFault struct{}

func (killFault) Kind() string     { return faults.Kill }
func (killFault) AimsAtNode() bool { return true }

func (killFault) Inject(ctx context.Context, c Backend, target string, _ Params) (string, error) {
	return "SIGKILL", c.KillNode(ctx, target)
}

func (killFault) Heal(ctx context.Context, c Backend, target string) (string, error) {
	return restart(ctx, c, target)
}

// stopFault stops a node with SIGTERM: it releases its lease, so a standby takes over at
// once through the release notice. Heal restarts it.
type stopFault struct{}

func (stopFault) Kind() string     { return faults.Stop }
func (stopFault) AimsAtNode() bool { return true }

func (stopFault) Inject(ctx context.Context, c Backend, target string, _ Params) (string, error) {
	return "SIGTERM", c.StopNode(ctx, target)
}

func (stopFault) Heal(ctx context.Context, c Backend, target string) (string, error) {
	return restart(ctx, c, target)
}

func restart(ctx context.Context, c Backend, target string) (string, error) {
	if c.Running(target) {
		return "already running", nil
	}
	return "restarted", c.StartNode(ctx, target)
}

// pauseFault freezes a node (SIGSTOP, or docker pause) for longer than the lease: the
// classic stale leader, which wakes up believing it still leads and tries to write.
type pauseFault struct{}

func (pauseFault) Kind() string     { return faults.Pause }
func (pauseFault) AimsAtNode() bool { return true }

func (pauseFault) Inject(ctx context.Context, c Backend, target string, _ Params) (string, error) {
	return "SIGSTOP", c.PauseNode(ctx, target)
}

func (pauseFault) Heal(ctx context.Context, c Backend, target string) (string, error) {
	if !c.Running(target) {
		return "not running", nil
	}
	return "SIGCONT", c.ResumeNode(ctx, target)
}
