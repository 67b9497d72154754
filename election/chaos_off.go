//go:build !chaos

package election

// chaosHooks is empty in a default build: the elector always steps down on its
// deadline, and the check below is a constant the compiler removes.
type chaosHooks struct{}

func (chaosHooks) ignoreDeadline() bool { return false }
