package nemesis

import (
	"context"
	"errors"
	"fmt"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/faults"
)

// SourceLinks are the nodes' links to the event source: what source-outage acts on.
type SourceLinks interface {
	AddSourceToxic(ctx context.Context, id string, t backend.Toxic) error
	RemoveSourceToxics(ctx context.Context, id string, names ...string) error
}

const toxicSourceReset = "fenceline-source-reset"

// sourceFault is source-outage: node target's link to the event source resets every
// connection as soon as it carries data (toxiproxy's reset_peer), so that each of its
// fetches fails until the heal, as when the ledger's API is down. A leader must keep its
// term through it and retry: the listener gives a term up only when the fence refuses
// it (listener.Run), and the step-down check judges a term whose work returned.
type sourceFault struct{}

func (sourceFault) Kind() string     { return faults.SourceOutage }
func (sourceFault) AimsAtNode() bool { return true }

func (sourceFault) Inject(ctx context.Context, c Backend, target string, _ Params) (string, error) {
	sl, ok := c.(SourceLinks)
	if !ok {
		return "", errors.New("nemesis: source-outage: this cluster gives no links to the source")
	}
	t := backend.Toxic{Name: toxicSourceReset, Type: "reset_peer", Stream: "upstream", Toxicity: 1,
		Attributes: map[string]any{"timeout": 0}}
	if err := sl.AddSourceToxic(ctx, target, t); err != nil {
		return "", fmt.Errorf("nemesis: %w", err)
	}
	return "connections to the source reset", nil
}

func (sourceFault) Heal(ctx context.Context, c Backend, target string) (string, error) {
	sl, ok := c.(SourceLinks)
	if !ok {
		return "", nil
	}
	if err := sl.RemoveSourceToxics(ctx, target, toxicSourceReset); err != nil {
		return "", fmt.Errorf("nemesis: %w", err)
	}
	return "toxic removed", nil
}
