package nemesis

import (
	"context"
	"fmt"
	"time"

	"github.com/fenceline/fenceline/faults"
)

// clockFault changes a node's injected clock through its control endpoint. It is honest
// about being in-process: the node's lease arithmetic reads a clock the harness can jump
// or slow down; the host's clock and every history timestamp stay true.
//
// Flavours: a jump forward (the leader believes its lease ran out and steps down early:
// safe), a jump backward, and a slow clock (rate 0.25: the leader renews too late and
// believes in a lease Redis has already expired — only the fence keeps that safe).
type clockFault struct{}

func (clockFault) Kind() string     { return faults.Clock }
func (clockFault) AimsAtNode() bool { return true }

func (clockFault) Inject(ctx context.Context, c Backend, target string, p Params) (string, error) {
	offset, rate := ClockSkew(p)
	what := fmt.Sprintf("offset %v rate %g", offset, rate)
	return what, c.SetClock(ctx, target, offset, rate)
}

// ClockSkew is the offset and rate a clock fault sets.
func ClockSkew(p Params) (time.Duration, float64) {
	jump := p.LeaseTTL + time.Duration(p.Magnitude*float64(p.LeaseTTL))
	switch p.Variant % 3 {
	case 0:
		return jump, 1
	case 1:
		return -jump, 1
	default:
		return 0, 0.25
	}
}

func (clockFault) Heal(ctx context.Context, c Backend, target string) (string, error) {
	if !c.Running(target) {
		return "not running", nil
	}
	return "offset 0 rate 1", c.SetClock(ctx, target, 0, 1)
}
