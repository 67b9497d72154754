//go:build !chaos

package election

import "context"

// chaosHooks is empty in a default build: the elector always steps down on its
// deadline, and the check below is a constant the compiler removes.
type chaosHooks struct{}

func (chaosHooks) ignoreDeadline() bool { return false }

func (chaosHooks) trustsGrant() bool { return false }

func (chaosHooks) neverTells() bool { return false }

func (chaosHooks) leadContext(_, termCtx context.Context) (context.Context, func()) {
	return termCtx, func() {}
}
