package nemesis

import (
	"context"
	"errors"
	"fmt"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2/client"

	"github.com/fenceline/fenceline/cluster"
)

// Toxic names, so that heal removes exactly what inject added.
const (
	toxicPartitionUp   = "fenceline-partition-up"
	toxicPartitionDown = "fenceline-partition-down"
	toxicDelay         = "fenceline-delay"
)

// partitionFault cuts a node off from Redis through its proxy, in one of two flavours:
// reset (every connection, old and new, is reset at once: the node sees errors) or
// blackhole (data is silently dropped and connections hang: the node sees timeouts).
// The proxy stays enabled: disabling it would refuse new dials, which looks like a crash.
type partitionFault struct{ kind string }

func (f partitionFault) Kind() string    { return f.kind }
func (partitionFault) TargetsNode() bool { return true }

func (f partitionFault) Inject(ctx context.Context, c cluster.Cluster, target string, _ Params) (string, error) {
	p, err := c.Toxiproxy().Proxy(c.RedisProxy(target))
	if err != nil {
		return "", fmt.Errorf("nemesis: %w", err)
	}
	typ, what := "reset_peer", "connections reset"
	if f.kind == PartitionBlackhole {
		typ, what = "timeout", "data dropped, connections hang"
	}
	// Toxicity 1: a toxicity of 0 would mean "never fire".
	attrs := toxiproxy.Attributes{"timeout": 0}
	if _, err := p.AddToxic(toxicPartitionUp, typ, "upstream", 1, attrs); err != nil {
		return "", fmt.Errorf("nemesis: %w", err)
	}
	if _, err := p.AddToxic(toxicPartitionDown, typ, "downstream", 1, attrs); err != nil {
		return "", fmt.Errorf("nemesis: %w", err)
	}
	return what, nil
}

func (partitionFault) Heal(ctx context.Context, c cluster.Cluster, target string) (string, error) {
	return "toxics removed", removeToxics(c, c.RedisProxy(target), toxicPartitionUp, toxicPartitionDown)
}

// delayFault adds latency longer than the lease to the node's requests to Redis, so a
// write sent while the node led lands after a newer leader exists: the fence must reject it.
type delayFault struct{}

func (delayFault) Kind() string      { return Delay }
func (delayFault) TargetsNode() bool { return true }

func (delayFault) Inject(ctx context.Context, c cluster.Cluster, target string, p Params) (string, error) {
	px, err := c.Toxiproxy().Proxy(c.RedisProxy(target))
	if err != nil {
		return "", fmt.Errorf("nemesis: %w", err)
	}
	lat := DelayLatency(p)
	attrs := toxiproxy.Attributes{"latency": lat.Milliseconds(), "jitter": 0}
	if _, err := px.AddToxic(toxicDelay, "latency", "upstream", 1, attrs); err != nil {
		return "", fmt.Errorf("nemesis: %w", err)
	}
	return fmt.Sprintf("latency %v upstream", lat), nil
}

// DelayLatency is the latency a delay fault adds: between 1.25 and 2 lease TTLs.
func DelayLatency(p Params) time.Duration {
	return p.LeaseTTL*5/4 + time.Duration(p.Magnitude*float64(p.LeaseTTL*3/4))
}

func (delayFault) Heal(ctx context.Context, c cluster.Cluster, target string) (string, error) {
	return "toxic removed", removeToxics(c, c.RedisProxy(target), toxicDelay)
}

// removeToxics removes the named toxics; a toxic that is not there is not an error.
func removeToxics(c cluster.Cluster, proxy string, names ...string) error {
	p, err := c.Toxiproxy().Proxy(proxy)
	if err != nil {
		return fmt.Errorf("nemesis: %w", err)
	}
	have, err := p.Toxics()
	if err != nil {
		return fmt.Errorf("nemesis: %w", err)
	}
	var errs []error
	for _, t := range have {
		for _, n := range names {
			if t.Name == n {
				if err := p.RemoveToxic(n); err != nil {
					errs = append(errs, fmt.Errorf("nemesis: remove %s: %w", n, err))
				}
			}
		}
	}
	return errors.Join(errs...)
}
