package nemesis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/faults"
)

// RedlockServers are the Redis servers a cluster runs for nodes that lock on several
// (backend.Spec.RedlockServers): what redlock-restart acts on.
type RedlockServers interface {
	// RedlockServers is how many there are; none when the cluster runs none.
	RedlockServers() int
	// RestartRedlockServer kills server i (1-based) and starts it again at once, empty.
	RestartRedlockServer(ctx context.Context, i int) error
	// AddRedlockToxic and RemoveRedlockToxics change node id's link to server i alone.
	AddRedlockToxic(ctx context.Context, id string, i int, t backend.Toxic) error
	RemoveRedlockToxics(ctx context.Context, id string, i int, names ...string) error
}

// ErrNoRedlock is returned (wrapped) by redlock-restart on a cluster without two Redlock
// servers.
var ErrNoRedlock = errors.New("nemesis: this cluster runs no Redlock servers (the zoo's redlock-majority variant has them)")

const (
	toxicRedlockCutUp   = "fenceline-redlock-cut-up"
	toxicRedlockCutDown = "fenceline-redlock-cut-down"
	toxicRedlockDelay   = "fenceline-redlock-delay"
)

// redlockFault is redlock-restart, aimed at the leader: the restart without persistence
// of antirez and Kleppmann's debate, at the moment it costs a majority lock its
// exclusion.
//
//  1. The leader is cut off from Redlock server 2 (connections reset) for 1.25 leases:
//     its lock there runs out, and it holds a bare majority, the run's Redis and server 1.
//     (A leader that holds every server loses one to a restart and keeps a majority.)
//  2. The cut is healed; the leader's links to every server get one lease of latency, so
//     that its next extension, which would find the majority gone and end its term,
//     arrives after its local deadline instead.
//  3. Server 1 is killed and started again, empty.
//
// A standby's next attempt then locks server 1 and server 2: a majority, while the
// leader's lease runs. The heal removes the latency.
type redlockFault struct{}

func (redlockFault) Kind() string     { return faults.RedlockRestart }
func (redlockFault) AimsAtNode() bool { return true }

func (redlockFault) Inject(ctx context.Context, c Backend, target string, p Params) (string, error) {
	r, ok := c.(RedlockServers)
	if !ok || r.RedlockServers() < 2 {
		return "", ErrNoRedlock
	}
	attrs := map[string]any{"timeout": 0}
	for _, t := range []backend.Toxic{
		{Name: toxicRedlockCutUp, Type: "reset_peer", Stream: "upstream", Attributes: attrs},
		{Name: toxicRedlockCutDown, Type: "reset_peer", Stream: "downstream", Attributes: attrs},
	} {
		if err := r.AddRedlockToxic(ctx, target, 2, t); err != nil {
			return "", fmt.Errorf("nemesis: %w", err)
		}
	}
	did := "cut off from Redlock server 2"
	if err := sleepCtx(ctx, p.LeaseTTL*5/4); err != nil {
		return did, err
	}
	if err := r.RemoveRedlockToxics(ctx, target, 2, toxicRedlockCutUp, toxicRedlockCutDown); err != nil {
		return did, fmt.Errorf("nemesis: %w", err)
	}
	did += " for " + (p.LeaseTTL * 5 / 4).String() + ", healed"
	lat := backend.Toxic{Name: toxicRedlockDelay, Type: "latency", Stream: "upstream",
		Attributes: map[string]any{"latency": p.LeaseTTL.Milliseconds(), "jitter": 0}}
	if err := c.AddRedisToxic(ctx, target, lat); err != nil {
		return did, fmt.Errorf("nemesis: %w", err)
	}
	did += fmt.Sprintf("; latency %v upstream", p.LeaseTTL)
	if err := r.RestartRedlockServer(ctx, 1); err != nil {
		return did, fmt.Errorf("nemesis: %w", err)
	}
	return did + "; Redlock server 1 killed and restarted empty", nil
}

func (redlockFault) Heal(ctx context.Context, c Backend, target string) (string, error) {
	var errs []error
	if r, ok := c.(RedlockServers); ok && r.RedlockServers() >= 2 {
		errs = append(errs, r.RemoveRedlockToxics(ctx, target, 2, toxicRedlockCutUp, toxicRedlockCutDown))
	}
	errs = append(errs, removeToxics(ctx, c, target, toxicRedlockDelay))
	return "toxics removed", errors.Join(errs...)
}

// sleepCtx waits d, or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
