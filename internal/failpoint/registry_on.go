//go:build failpoints

package failpoint

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Enabled is true in a build with the failpoints tag.
const Enabled = true

// armed is a point's action and what is left of it.
type armed struct {
	action  Action
	left    int
	release chan struct{} // closed when the arming ends: wakes the blocked hits
}

var (
	mu    sync.Mutex
	table = map[string]*armed{}
	hits  = map[string]int64{} // hits that ran an action, per point, since the process began
	// nArmed lets Hit return at once, without the lock, while nothing is armed.
	nArmed atomic.Int32
)

// Arm sets action spec (see Parse) on the point name, replacing (and releasing) an
// earlier arming. It returns the parsed action.
func Arm(name, spec string) (Action, error) {
	a, err := validate(name, spec)
	if err != nil {
		return Action{}, err
	}
	mu.Lock()
	defer mu.Unlock()
	disarmLocked(name)
	table[name] = &armed{action: a, left: a.Count, release: make(chan struct{})}
	nArmed.Add(1)
	return a, nil
}

// Disarm removes name's action and releases its blocked hits. A point not armed is not
// an error; a name that is not a point is.
func Disarm(name string) error {
	if err := Check(name); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	disarmLocked(name)
	return nil
}

// DisarmAll disarms every point and releases every blocked hit.
func DisarmAll() {
	mu.Lock()
	defer mu.Unlock()
	for name := range table {
		disarmLocked(name)
	}
}

func disarmLocked(name string) {
	if a, ok := table[name]; ok {
		close(a.release)
		delete(table, name)
		if a.left > 0 {
			nArmed.Add(-1)
		}
	}
}

// Status returns every point, in the order of Points.
func Status() []State {
	mu.Lock()
	defer mu.Unlock()
	out := make([]State, len(points))
	for i, p := range points {
		out[i] = State{Name: p.Name, Hits: hits[p.Name]}
		if a, ok := table[p.Name]; ok && a.left > 0 {
			out[i].Action, out[i].Left = a.action.String(), a.left
		}
	}
	return out
}

// Hit runs name's action if it is armed, and returns ErrInjected for the error action
// (the hook then fails as a failed request would). It blocks for sleep and block, and
// does not return for exit. Unarmed, it costs one atomic load.
func Hit(name string) error {
	if nArmed.Load() == 0 {
		return nil
	}
	mu.Lock()
	a, ok := table[name]
	if !ok || a.left == 0 {
		mu.Unlock()
		return nil
	}
	hits[name]++
	act, release := a.action, a.release
	if a.left--; a.left == 0 {
		// The last of its hits: later hits pass. The arming stays in the table, spent,
		// so that Disarm still releases the hits it blocked.
		nArmed.Add(-1)
	}
	mu.Unlock()
	switch act.Kind {
	case Sleep:
		time.Sleep(act.Sleep)
	case Block:
		<-release
	case Error:
		return fmt.Errorf("%w at %s", ErrInjected, name)
	case Exit:
		fmt.Fprintf(os.Stderr, "failpoint %s: exit(%d)\n", name, act.Code)
		os.Exit(act.Code)
	}
	return nil
}
