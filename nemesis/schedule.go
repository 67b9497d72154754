package nemesis

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/fenceline/fenceline/faults"
)

// isFailpoint reports whether kind is a failpoint fault: those always aim at the leader.
func isFailpoint(kind string) bool { return slices.Contains(faults.Failpoints(), kind) }

// Aim says whom a step hits: the node that leads when the step fires, or a fixed node.
type Aim struct {
	Leader bool `json:"leader,omitempty"`
	Node   int  `json:"node,omitempty"` // 1-based index of the node, when not Leader
}

func (t Aim) String() string {
	if t.Leader {
		return "leader"
	}
	return fmt.Sprintf("n%d", t.Node)
}

// Step is one fault of a schedule.
type Step struct {
	// At is the injection time as an offset from the start of the chaos phase.
	At     time.Duration `json:"at_ns"`
	Kind   string        `json:"kind"`
	Aim    Aim           `json:"target"`
	Params Params        `json:"params"`
	// Moment, if set, is the moment of the leader's life at which the fault lands (see
	// Moments): the runner waits for it, a bounded time, from At on.
	Moment string `json:"moment,omitempty"`
	// CrossDigits, if set, moves the token counter to the largest number of its digits
	// (99…9) just before the fault lands, so that the next term's token has one digit
	// more than every token issued before it. A fence that compares tokens of different
	// lengths wrongly lets a stale write through only when it lands across that
	// boundary, and a run's own start (harness.BoundaryStart) crosses it at the first
	// handover only, before any stale write.
	CrossDigits bool `json:"cross_digits,omitempty"`
}

// ScheduleOptions determine a schedule; equal options give an equal schedule.
type ScheduleOptions struct {
	Seed     int64
	Kinds    []string
	Duration time.Duration // length of the chaos phase
	LeaseTTL time.Duration
	Nodes    int
	// LeaderBias is the probability that a node fault targets the current leader rather
	// than a random node. Default 0.75.
	LeaderBias float64
	// Kind is ScheduleRandom (the default, ""), ScheduleTargeted or ScheduleMixed: how
	// many of the node faults are aimed at a moment of the leader's life (see aim).
	Kind string
}

// NewSchedule generates the fault schedule. Faults never overlap: each is healed, and
// the cluster given a lease and a little more to elect and commit, before the next.
func NewSchedule(o ScheduleOptions) ([]Step, error) {
	if o.Nodes < 1 || o.LeaseTTL <= 0 || o.Duration < 0 {
		return nil, errors.New("nemesis: schedule needs nodes >= 1, a lease TTL and a duration")
	}
	if o.LeaderBias == 0 {
		o.LeaderBias = 0.75
	}
	aimed, err := aimProbability(o.Kind)
	if err != nil {
		return nil, err
	}
	chosen := make([]Fault, 0, len(o.Kinds))
	for _, k := range o.Kinds {
		f, err := ByKind(k)
		if err != nil {
			return nil, err
		}
		chosen = append(chosen, f)
	}
	if len(chosen) == 0 {
		return nil, nil
	}
	rng := rand.New(rand.NewPCG(uint64(o.Seed), 0x6e656d65736973)) // "nemesis"
	lease := o.LeaseTTL
	between := func(lo, hi float64) time.Duration {
		return time.Duration((lo + rng.Float64()*(hi-lo)) * float64(lease))
	}
	var steps []Step
	at := between(0.25, 0.75)
	for at < o.Duration {
		f := chosen[rng.IntN(len(chosen))]
		s := Step{At: at, Kind: f.Kind(), Params: Params{
			Variant:   rng.IntN(3),
			Magnitude: rng.Float64(),
			LeaseTTL:  lease,
		}}
		if f.AimsAtNode() {
			if rng.Float64() < o.LeaderBias || isFailpoint(s.Kind) || s.Kind == faults.RedlockRestart {
				s.Aim.Leader = true
			} else {
				s.Aim.Node = 1 + rng.IntN(o.Nodes)
			}
		}
		switch s.Kind {
		case faults.Kill, faults.Stop:
			s.Params.Hold = between(0.5, 1.5)
		case faults.Pause, faults.PartitionReset, faults.PartitionBlackhole, faults.PartitionEtcd, faults.SourceOutage:
			s.Params.Hold = between(1.5, 2.5)
		case faults.EtcdKill, faults.EtcdPause:
			// Longer than the lease, as a node's pause: with one member, every node's
			// session is past its TTL before etcd serves again.
			s.Params.Hold = between(1.5, 2.5)
		case faults.EtcdRestart:
			s.Params.Hold = between(0.1, 0.5)
		case faults.Delay:
			// Long enough for a write sent before the fault to arrive while it holds.
			s.Params.Hold = DelayLatency(s.Params) + lease/2
		case faults.Clock:
			s.Params.Hold = between(2, 3)
		case faults.RedisRestart, faults.RedisRestartVolatile:
			s.Params.Hold = between(0.1, 0.5)
		case faults.PresenceLoss:
			// Longer than the node's held commit (a lease), in which a standby takes the
			// lease over and the node's next renewal is refused: then its acquires.
			s.Params.Hold = between(1.5, 2)
		case faults.PresenceFlap:
			// Longer than the standbys' stall (a lease) after the presence came back.
			s.Params.Hold = between(1.5, 2)
		case faults.FPLateCommit, faults.FPLateRenew, faults.FPLateRelease, faults.FPReleaseRace, faults.FPStallNewLeader, faults.FPLoadRace, faults.FPTakeoverRace, faults.FPReleaseLost:
			// The stall (1.5 leases at most) and a lease for the next leader to commit.
			s.Params.Hold = between(2.5, 3)
		case faults.RedlockRestart:
			// After its cut and restart (redlockFault): the leader's lease runs out
			// under the latency, and a standby has locked a majority.
			s.Params.Hold = between(1.5, 2)
		case faults.RedisFailover, faults.RedisSwitchover, faults.RedisIsolatePrimary, faults.ReplicationDelay:
			// Sentinel needs its down-after (1 s) and an election; the heal waits for
			// the rest. Sentinel spaces two failovers by twice its failover-timeout (4 s).
			// A cluster needs its node timeout (1 s) and an election the same way.
			s.Params.Hold = between(1, 2)
		}
		steps = append(steps, s)
		at += s.Params.Hold + between(1.25, 1.75)
	}
	aim(steps, o.Seed, aimed)
	return steps, nil
}
