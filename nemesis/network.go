package nemesis

import (
	"context"
	"fmt"
	"time"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/faults"
)

// Toxic names, so that heal removes exactly what inject added.
const (
	toxicPartitionUp   = "fenceline-partition-up"
	toxicPartitionDown = "fenceline-partition-down"
	toxicDelay         = "fenceline-delay"
)

// partitionFault cuts a node off from Redis through its proxy, in one of two flavours:
// reset (every connection, old and new, is reset as soon as it carries data: the node sees
// errors) or blackhole (data is silently dropped and connections hang: the node sees
// timeouts). An idle connection outlives a reset, as it does a real partition that answers
// with resets: toxiproxy's reset_peer acts on a connection's next bytes, so a quiet
// subscription (the leader's presence, election.Config.TakeoverOnDisconnect) lives on
// until a message or a ping crosses it.
// The proxy stays enabled: disabling it would refuse new dials, which looks like a crash.
type partitionFault struct{ kind string }

func (f partitionFault) Kind() string   { return f.kind }
func (partitionFault) AimsAtNode() bool { return true }

func (f partitionFault) Inject(ctx context.Context, c Backend, target string, _ Params) (string, error) {
	typ, what := "reset_peer", "connections reset"
	if f.kind == faults.PartitionBlackhole {
		typ, what = "timeout", "data dropped, connections hang"
	}
	// Toxicity 1: a toxicity of 0 would mean "never fire".
	attrs := map[string]any{"timeout": 0}
	for _, t := range []backend.Toxic{
		{Name: toxicPartitionUp, Type: typ, Stream: "upstream", Toxicity: 1, Attributes: attrs},
		{Name: toxicPartitionDown, Type: typ, Stream: "downstream", Toxicity: 1, Attributes: attrs},
	} {
		if err := c.AddRedisToxic(ctx, target, t); err != nil {
			return "", fmt.Errorf("nemesis: %w", err)
		}
	}
	return what, nil
}

func (partitionFault) Heal(ctx context.Context, c Backend, target string) (string, error) {
	return "toxics removed", removeToxics(ctx, c, target, toxicPartitionUp, toxicPartitionDown)
}

// delayFault adds latency longer than the lease to the node's requests to Redis, so a
// write sent while the node led lands after a newer leader exists: the fence must reject it.
type delayFault struct{}

func (delayFault) Kind() string     { return faults.Delay }
func (delayFault) AimsAtNode() bool { return true }

func (delayFault) Inject(ctx context.Context, c Backend, target string, p Params) (string, error) {
	lat := DelayLatency(p)
	t := backend.Toxic{Name: toxicDelay, Type: "latency", Stream: "upstream", Toxicity: 1,
		Attributes: map[string]any{"latency": lat.Milliseconds(), "jitter": 0}}
	if err := c.AddRedisToxic(ctx, target, t); err != nil {
		return "", fmt.Errorf("nemesis: %w", err)
	}
	return fmt.Sprintf("latency %v upstream", lat), nil
}

// DelayLatency is the latency a delay fault adds: between 1.25 and 2 lease TTLs.
func DelayLatency(p Params) time.Duration {
	return p.LeaseTTL*5/4 + time.Duration(p.Magnitude*float64(p.LeaseTTL*3/4))
}

func (delayFault) Heal(ctx context.Context, c Backend, target string) (string, error) {
	return "toxic removed", removeToxics(ctx, c, target, toxicDelay)
}

// removeToxics removes the named toxics from node target's link to Redis; a toxic that
// is not there is not an error.
func removeToxics(ctx context.Context, c Links, target string, names ...string) error {
	if err := c.RemoveRedisToxics(ctx, target, names...); err != nil {
		return fmt.Errorf("nemesis: %w", err)
	}
	return nil
}
