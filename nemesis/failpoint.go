package nemesis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/internal/failpoint"
)

// Failpoints arm and disarm a node's failpoints (a chaos node of a failpoints build).
type Failpoints interface {
	ArmFailpoint(ctx context.Context, id, name, action string) error
	DisarmFailpoints(ctx context.Context, id string) error
}

// failpointFault arms failpoints (package internal/failpoint) on the leader, or on the
// nodes that may lead next, so that the stall lands at a moment that matters rather
// than wherever a random signal falls. Its target is the leader when the step fires
// (the schedule always aims it there, found through the nodes' /status).
//
//   - fp-late-commit: the leader's next commit and next renewal sleep 1.5 leases. Its
//     lease runs out with a commit in hand; a design that sends that commit anyway
//     (no-fence) writes after the next leader has.
//   - fp-late-renew: the leader's next renewal sleeps 1.5 leases. Its local deadline
//     must end its term before Redis expires the lease (no-step-down does not).
//   - fp-late-release: the leader is stopped and its release sleeps 1.25 leases first,
//     so it reaches Redis after a newer leader took the lease (unchecked-release then
//     deletes the newer leader's lock).
//   - fp-release-race: the leader is stopped and a two-step release sleeps 1.25 leases
//     between its GET and its DEL (non-atomic-release then deletes the newer leader's
//     lock; the reference's release is one script and never reaches the point).
//     For both, the other nodes' next renewal and next two commits go out half a lease
//     late (the renewal within the deadline of a lease-TTL/3 renew interval): the newer
//     leader keeps believing in a deleted lock long enough for a third node's term to
//     overlap it measurably, rather than until the fence rejects its next commit.
//   - fp-stall-new-leader: every other node is armed to stall 1.5 leases just after it
//     wins, then the leader is killed: its successor starts its term after the lease it
//     took has run out (the reference steps down at once; no-step-down leads on).
//   - fp-load-race: every other node is armed to stall 1.25 leases just after its next
//     cursor load, then the leader's link to Redis gets 1.25 leases of latency: the
//     commit it sends next lands after its lease ran out and a successor loaded the
//     cursor (within one lease), and before that successor's first commit (2.25 leases
//     at the latest, 1.9 at the earliest). The old commit carries the highest token the store has accepted, so
//     the store takes it; the successor's commit then expects a cursor that has moved,
//     which only the cursor check refuses (no-cursor-check applies those events twice).
//   - fp-takeover-race: every other node is armed to stall a tenth of a lease between its
//     poll that finds the leader's presence gone and its takeover (takeover on
//     disconnect), and its first renewal and first two commits half a lease, as for the
//     release faults; then the leader is killed: each standby polls every PresenceInterval
//     (20 ms), so all of them see the crash before the first takes over, well within the
//     lease the dead leader left behind. The reference's takeover checks the lock again
//     in its script, and only the first wins; non-atomic-takeover lets the second
//     overwrite the first's fresh lease. Without takeover on disconnect it is a kill.
//   - fp-release-lost: the leader is stopped and its release fails before it is sent,
//     as a request lost on the way does: the lock stays until its lease runs out, and
//     the node must record the release's outcome as unknown, not as Redis's refusal.
type failpointFault struct{ kind string }

func (f failpointFault) Kind() string   { return f.kind }
func (failpointFault) AimsAtNode() bool { return true }

func (f failpointFault) Inject(ctx context.Context, c Backend, target string, p Params) (string, error) {
	stall := func(leases float64) string {
		return fmt.Sprintf("sleep(%v)", time.Duration(leases*float64(p.LeaseTTL)).Round(time.Millisecond))
	}
	arm := func(id string, points ...string) (string, error) {
		var did []string
		for i := 0; i < len(points); i += 2 {
			if err := c.ArmFailpoint(ctx, id, points[i], points[i+1]); err != nil {
				return strings.Join(did, ", "), err
			}
			did = append(did, id+" "+points[i]+"="+points[i+1])
		}
		return strings.Join(did, ", "), nil
	}
	// armOthers arms every other running node: what it armed, up to the first error.
	armOthers := func(points ...string) ([]string, error) {
		var did []string
		for _, id := range c.Nodes() {
			if id == target || !c.Running(id) {
				continue
			}
			what, err := arm(id, points...)
			if err != nil {
				return did, err
			}
			did = append(did, what)
		}
		return did, nil
	}
	switch f.kind {
	case faults.FPLateCommit:
		return arm(target, failpoint.ListenerBeforeCommit, stall(1.5), failpoint.RenewBeforeSend, stall(1.5))
	case faults.FPLateRenew:
		return arm(target, failpoint.RenewBeforeSend, stall(1.5))
	case faults.FPLateRelease, faults.FPReleaseRace:
		point := failpoint.ReleaseBeforeSend
		if f.kind == faults.FPReleaseRace {
			point = failpoint.ReleaseBetweenSteps
		}
		// The next leader's first renewal and first two commits go out half a lease
		// late, its renewal still well within its deadline: a lock deleted under it
		// stays unnoticed that long, instead of until its next renewal or until its
		// next commit meets the fence (a few milliseconds after a third node's first).
		did, err := armOthers(failpoint.RenewBeforeSend, stall(0.5), failpoint.ListenerBeforeCommit, "2*"+stall(0.5))
		if err != nil {
			return strings.Join(did, ", "), err
		}
		what, err := arm(target, point, stall(1.25))
		if err != nil {
			return strings.Join(append(did, what), ", "), err
		}
		return strings.Join(append(did, what), ", ") + ", then SIGTERM", c.StopNode(ctx, target)
	case faults.FPReleaseLost:
		what, err := arm(target, failpoint.ReleaseBeforeSend, "error")
		if err != nil {
			return what, err
		}
		return what + ", then SIGTERM", c.StopNode(ctx, target)
	case faults.FPLoadRace:
		did, err := armOthers(failpoint.ListenerAfterLoad, stall(1.25))
		if err != nil {
			return strings.Join(did, ", "), err
		}
		lat := p.LeaseTTL * 5 / 4
		t := backend.Toxic{Name: toxicDelay, Type: "latency", Stream: "upstream", Toxicity: 1,
			Attributes: map[string]any{"latency": lat.Milliseconds(), "jitter": 0}}
		if err := c.AddRedisToxic(ctx, target, t); err != nil {
			return strings.Join(did, ", "), fmt.Errorf("nemesis: %w", err)
		}
		return strings.Join(append(did, fmt.Sprintf("latency %v upstream on %s", lat, target)), ", "), nil
	case faults.FPStallNewLeader, faults.FPTakeoverRace:
		points := []string{failpoint.AcquireAfterWin, stall(1.5)}
		if f.kind == faults.FPTakeoverRace {
			// As for the release faults, the taker's first renewal and first two commits
			// go out half a lease late: a lease overwritten under it goes unnoticed that
			// long, not only until its next commit meets the fence (one poll interval of
			// the listener, 100 ms, as long as the drift margin lease-exclusion tolerates).
			points = []string{failpoint.TakeoverBetweenSteps, stall(0.1),
				failpoint.RenewBeforeSend, stall(0.5), failpoint.ListenerBeforeCommit, "2*" + stall(0.5)}
		}
		did, err := armOthers(points...)
		if err != nil {
			return strings.Join(did, ", "), err
		}
		return strings.Join(append(did, "SIGKILL "+target), ", "), c.KillNode(ctx, target)
	}
	return "", fmt.Errorf("nemesis: %q is not a failpoint fault", f.kind)
}

// Heal disarms every node's failpoints (a hit still sleeping finishes its sleep) and
// restarts the target if it was stopped or killed.
func (f failpointFault) Heal(ctx context.Context, c Backend, target string) (string, error) {
	var errs []error
	for _, id := range c.Nodes() {
		if c.Running(id) {
			if err := c.DisarmFailpoints(ctx, id); err != nil && !errors.Is(err, backend.ErrNoHook) {
				errs = append(errs, err)
			}
		}
	}
	what := "disarmed"
	if f.kind == faults.FPLoadRace {
		if err := removeToxics(ctx, c, target, toxicDelay); err != nil {
			errs = append(errs, err)
		}
		what += ", toxic removed"
	}
	if !c.Running(target) {
		what += ", restarted " + target
		if err := c.StartNode(ctx, target); err != nil {
			errs = append(errs, err)
		}
	}
	return what, errors.Join(errs...)
}
