package election

import "time"

// Clock is the time source of the lease arithmetic. Now must carry a monotonic reading
// (as time.Now does): deadlines are computed with Time.Sub and Time.Add on it, never from
// a timestamp written by another process.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// NewTimer returns a timer that sends the clock's time on its channel once d has
	// passed on this clock. A d <= 0 fires at once.
	NewTimer(d time.Duration) Timer
}

// Timer is a timer created by a Clock. Its semantics are those of time.Timer since Go
// 1.23: after Stop or Reset returns, no value from before the call is received.
type Timer interface {
	// C returns the channel on which the timer fires. The channel is never closed.
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it was still pending.
	Stop() bool
	// Reset makes the timer fire d from now; it reports whether it was still pending.
	Reset(d time.Duration) bool
}

// SystemClock returns the real clock: time.Now and runtime timers.
func SystemClock() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) NewTimer(d time.Duration) Timer { return systemTimer{time.NewTimer(d)} }

type systemTimer struct{ t *time.Timer }

func (t systemTimer) C() <-chan time.Time        { return t.t.C }
func (t systemTimer) Stop() bool                 { return t.t.Stop() }
func (t systemTimer) Reset(d time.Duration) bool { return t.t.Reset(d) }
