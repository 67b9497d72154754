package nemesis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/faults"
)

// Replicated is what the Redis faults need of a cluster with replicas; the local
// backend's sentinel and cluster topologies have it. It is found by type assertion: a cluster without
// it cannot take these faults.
type Replicated interface {
	KillPrimary(ctx context.Context) (string, error)
	Switchover(ctx context.Context) (string, error)
	CutPrimary(ctx context.Context, toxics ...backend.Toxic) (string, error)
	UncutPrimary(ctx context.Context, name string, toxics ...string) error
	PauseReplicas(ctx context.Context) error
	ResumeReplicas(ctx context.Context) error
	WaitPromotion(ctx context.Context, since time.Time, from string) (backend.Promotion, error)
	// StartRedis starts what is down and waits until the topology settles.
	StartRedis(ctx context.Context) error
}

// ErrCannotHeal is wrapped by a heal that could not bring the cluster back to a state a
// run can go on from (no promotion, a topology that does not settle): the run ends
// unknown, with the reason.
var ErrCannotHeal = errors.New("nemesis: cannot heal")

// Toxics of the replicated faults, on the primary's peer link.
const (
	toxicIsolateUp   = "fenceline-isolate-up"
	toxicIsolateDown = "fenceline-isolate-down"
)

func replicated(c Backend) (Replicated, error) {
	r, ok := c.(Replicated)
	if !ok {
		return nil, fmt.Errorf("nemesis: %w: the cluster has no replicas", faults.ErrTopology)
	}
	return r, nil
}

// promotedFault is the common part: what was the primary at injection, and when.
type promotedFault struct {
	kind string
	at   time.Time
	old  string
	// uncut are the toxics removed from the old primary's peer link at heal.
	uncut []string
}

func (f *promotedFault) Kind() string   { return f.kind }
func (*promotedFault) AimsAtNode() bool { return false }

func (f *promotedFault) Inject(ctx context.Context, c Backend, _ string, p Params) (string, error) {
	r, err := replicated(c)
	if err != nil {
		return "", err
	}
	f.at = time.Now()
	switch f.kind {
	case faults.RedisFailover:
		f.old, err = r.KillPrimary(ctx)
		return "SIGKILL of the primary " + f.old, err
	case faults.RedisSwitchover:
		f.old, err = r.Switchover(ctx)
		return "planned failover (SENTINEL FAILOVER or CLUSTER FAILOVER) of the primary " + f.old, err
	case faults.RedisIsolatePrimary:
		// A blackhole, not a reset: the Sentinels must see silence, as from a primary
		// behind a broken switch, and the replicas keep a link that carries nothing.
		attrs := map[string]any{"timeout": 0}
		f.old, err = r.CutPrimary(ctx,
			backend.Toxic{Name: toxicIsolateUp, Type: "timeout", Stream: "upstream", Toxicity: 1, Attributes: attrs},
			backend.Toxic{Name: toxicIsolateDown, Type: "timeout", Stream: "downstream", Toxicity: 1, Attributes: attrs})
		return "primary " + f.old + " cut off from its replicas and the Sentinels (or the cluster bus); the nodes still reach it", err
	case faults.ReplicationDelay:
		// The replicas stop applying the stream while the primary goes on acknowledging
		// writes; the primary dies while they lag; they resume and one is promoted
		// without the writes of the lag. (A toxiproxy latency on the replication link
		// would do the same, but toxiproxy cannot remove a latency toxic that holds a
		// busy stream: the heal hangs.)
		lag := ReplicationLag(p)
		if err := r.PauseReplicas(ctx); err != nil {
			_ = r.ResumeReplicas(ctx)
			return "", err
		}
		t := time.NewTimer(lag)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		f.old, err = r.KillPrimary(ctx)
		if rerr := r.ResumeReplicas(ctx); err == nil {
			err = rerr
		}
		return fmt.Sprintf("replicas stopped for %v, then SIGKILL of the primary %s", lag, f.old), err
	}
	return "", fmt.Errorf("nemesis: %s is not a replicated fault", f.kind)
}

// ReplicationLag is how far replication-delay lets the replicas fall behind before the
// primary dies: 0.5 to 1.5 s of writes.
func ReplicationLag(p Params) time.Duration {
	return 500*time.Millisecond + time.Duration(p.Magnitude*float64(time.Second))
}

func (f *promotedFault) Heal(ctx context.Context, c Backend, _ string) (string, error) {
	r, err := replicated(c)
	if err != nil {
		return "", err
	}
	if f.old == "" {
		// Never injected (or healed already): only the topology is checked.
		return "nothing injected", cannotHeal(r.StartRedis(ctx))
	}
	// Every one of these faults must end in a promotion: none within the bound is a
	// Sentinel that cannot do its job, and the run cannot go on as planned.
	p, err := f.waitPromotion(ctx, r)
	if err != nil {
		if len(f.uncut) > 0 {
			_ = r.UncutPrimary(ctx, f.old, f.uncut...)
		}
		return "no promotion", cannotHeal(err)
	}
	what := fmt.Sprintf("%s promoted %v after the fault", p.To, p.Time.Sub(f.at).Round(time.Millisecond))
	if len(f.uncut) > 0 {
		if err := r.UncutPrimary(ctx, f.old, f.uncut...); err != nil {
			return what, err
		}
	}
	healed := time.Now()
	if err := r.StartRedis(ctx); err != nil {
		return what, cannotHeal(err)
	}
	what += fmt.Sprintf("; %s a replica %v after the heal", f.old, time.Since(healed).Round(time.Millisecond))
	f.old = ""
	return what, nil
}

// switchoverRetry is how long a planned switchover may take before it is asked for
// again: Sentinel aborts one whose chosen replica does not report itself primary within
// its failover-timeout (2 s; -failover-abort-slave-timeout, seen on a loaded machine)
// and never retries it on its own, since the primary is not down. It accepts a new
// attempt twice its failover-timeout after the last.
var switchoverRetry = 5 * time.Second

// waitPromotion waits for the promotion the fault causes. A switchover that Redis
// abandoned is asked for again, as an operator would, until the heal's bound.
func (f *promotedFault) waitPromotion(ctx context.Context, r Replicated) (backend.Promotion, error) {
	if f.kind != faults.RedisSwitchover {
		return r.WaitPromotion(ctx, f.at, f.old)
	}
	deadline := time.Now().Add(backend.SettleTimeout)
	for {
		wctx, cancel := context.WithTimeout(ctx, min(switchoverRetry, time.Until(deadline)))
		p, err := r.WaitPromotion(wctx, f.at, f.old)
		cancel()
		if err == nil || ctx.Err() != nil || time.Now().After(deadline) {
			return p, err
		}
		// Asked again of the same primary; an error (too early, or a promotion that
		// happened meanwhile) leaves the next wait to tell.
		_, _ = r.Switchover(ctx)
	}
}

func cannotHeal(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrCannotHeal, err)
}
