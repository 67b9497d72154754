package nemesis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/faults"
)

// AimRedis is the aim of the Redis faults (a node fault aims at a node id).
const AimRedis = "redis"

// Fault is one kind of fault. Inject and Heal act on their aim (a node id, or AimRedis)
// and return what they did in words, for the fault log. Heal must be safe to call on an
// aim whose fault was already healed, and on any node when everything is healed at the
// end of a run.
type Fault interface {
	Kind() string
	// AimsAtNode is false for faults that act on Redis rather than on a node.
	AimsAtNode() bool
	Inject(ctx context.Context, c Backend, aim string, p Params) (string, error)
	Heal(ctx context.Context, c Backend, aim string) (string, error)
}

// Confirmer is a fault whose Inject returns nil only once it has seen its effect in
// place, an effect that then lasts until its Heal begins. The harness records that
// interval on the fault's completion (history.Event.InEffectFrom), for the checks that
// judge what the nodes did under the fault.
type Confirmer interface {
	Fault
	ConfirmsEffect()
}

// Sustainer is a Confirmer whose effect can also end before its heal without the fault's
// doing (a subscription that drops and comes back): Sustained, asked just before the
// heal, reports whether it lasted from Inject's return until then. If not, or if it
// cannot tell, the harness records no interval.
type Sustainer interface {
	Confirmer
	Sustained(ctx context.Context, c Backend, target string) (bool, error)
}

// Backend is a backend as the faults see it, defined here by its users: each fault
// uses one of its parts. A backend.Backend is one. Every call that reaches a process or
// the network takes ctx.
type Backend interface {
	Processes
	Clocks
	Links
	RedisRestarts
	Failpoints
}

// Processes are the nodes' processes: what kill, stop and pause act on.
type Processes interface {
	Nodes() []string
	// Running is true while the node's process is up (paused counts as up).
	Running(id string) bool
	StartNode(ctx context.Context, id string) error
	StopNode(ctx context.Context, id string) error
	KillNode(ctx context.Context, id string) error
	PauseNode(ctx context.Context, id string) error
	ResumeNode(ctx context.Context, id string) error
}

// Clocks set a node's injected clock (the clock fault).
type Clocks interface {
	SetClock(ctx context.Context, id string, offset time.Duration, rate float64) error
}

// Links change a node's network link to Redis (partitions, delay).
type Links interface {
	AddRedisToxic(ctx context.Context, id string, t backend.Toxic) error
	RemoveRedisToxics(ctx context.Context, id string, names ...string) error
	ResetLinks(ctx context.Context) error
}

// RedisRestarts is Redis's process (the Redis restarts).
type RedisRestarts interface {
	KillRedis(ctx context.Context) error
	StartRedis(ctx context.Context) error
}

// Params are the schedule's random choices for one injection.
type Params struct {
	// Hold is how long the fault stays before it is healed.
	Hold time.Duration
	// Variant picks between a fault's flavours (for clock: jump or slow rate).
	Variant int
	// Magnitude scales the fault (the clock jump, the delay), in [0,1).
	Magnitude float64
	// LeaseTTL is the cluster's lease, which the faults are sized against.
	LeaseTTL time.Duration
}

// ByKind returns the Fault of a kind.
func ByKind(kind string) (Fault, error) {
	switch kind {
	case faults.Kill:
		return killFault{}, nil
	case faults.Stop:
		return stopFault{}, nil
	case faults.Pause:
		return pauseFault{}, nil
	case faults.PartitionReset:
		return partitionFault{kind: faults.PartitionReset}, nil
	case faults.PartitionBlackhole:
		return partitionFault{kind: faults.PartitionBlackhole}, nil
	case faults.Delay:
		return delayFault{}, nil
	case faults.Clock:
		return clockFault{}, nil
	case faults.RedisRestart:
		return redisRestartFault{kind: faults.RedisRestart}, nil
	case faults.RedisRestartVolatile:
		return redisRestartFault{kind: faults.RedisRestartVolatile}, nil
	case faults.PostgresRestart:
		return postgresRestartFault{}, nil
	case faults.PartitionPostgres:
		return postgresPartitionFault{}, nil
	case faults.EtcdKill, faults.EtcdPause, faults.EtcdRestart:
		return &etcdMemberFault{kind: kind}, nil
	case faults.PartitionEtcd:
		return etcdPartitionFault{}, nil
	case faults.FPLateCommit, faults.FPLateRenew, faults.FPLateRelease, faults.FPReleaseRace, faults.FPStallNewLeader, faults.FPLoadRace, faults.FPTakeoverRace, faults.FPReleaseLost:
		return failpointFault{kind: kind}, nil
	case faults.RedlockRestart:
		return redlockFault{}, nil
	case faults.PresenceLoss:
		return presenceFault{}, nil
	case faults.PresenceFlap:
		return &presenceFlapFault{}, nil
	case faults.SourceOutage:
		return sourceFault{}, nil
	case faults.RedisFailover, faults.RedisSwitchover, faults.ReplicationDelay:
		return &promotedFault{kind: kind}, nil
	case faults.RedisIsolatePrimary:
		return &promotedFault{kind: kind, uncut: []string{toxicIsolateUp, toxicIsolateDown}}, nil
	}
	return nil, fmt.Errorf("%w: %q (known: %s, all, none)", faults.ErrUnknown, kind, strings.Join(faults.Known(), ", "))
}

// HealAll heals every fault kind on every node, Redis, PostgreSQL and etcd, whatever is open. It is what
// the runner does unconditionally at the end of the chaos phase (and on Ctrl-C), and it
// returns every error it met rather than stopping at the first.
func HealAll(ctx context.Context, c Backend) error {
	var errs []error
	// Links first: a replicated topology cannot settle while a data node is cut off.
	if err := c.ResetLinks(ctx); err != nil {
		errs = append(errs, fmt.Errorf("nemesis: %w", err))
	}
	if err := c.StartRedis(ctx); err != nil {
		errs = append(errs, err)
	}
	if p, ok := c.(PostgresProcess); ok {
		if err := p.StartPostgres(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if err := healEtcd(ctx, c); err != nil {
		errs = append(errs, err)
	}
	for _, id := range c.Nodes() {
		if c.Running(id) {
			if err := c.ResumeNode(ctx, id); err != nil {
				errs = append(errs, err)
			}
			// A node without the hook had nothing set through it.
			if err := c.SetClock(ctx, id, 0, 1); err != nil && !errors.Is(err, backend.ErrNoHook) {
				errs = append(errs, err)
			}
			if err := c.DisarmFailpoints(ctx, id); err != nil && !errors.Is(err, backend.ErrNoHook) {
				errs = append(errs, err)
			}
			continue
		}
		if err := c.StartNode(ctx, id); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
