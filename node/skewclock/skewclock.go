// Package skewclock is an election.Clock whose offset (a jump) and rate (a skew) can be
// changed while it runs, for the chaos harness's clock fault.
//
// It is an in-process simulation of a bad clock. It changes what THIS process believes the
// time is — the readings its lease arithmetic uses and when its timers fire — and nothing
// else: the host's clock, other processes, Redis's expiry and every history timestamp (which
// use the real clock) stay true. A real wall-clock jump would not even reach Go's monotonic
// clock; this one deliberately moves the monotonic reading too, standing in for the faults
// that do (a paused VM, a misbehaving clock source, a stalled or slewed timer).
//
// Readings are built on the real monotonic clock:
//
//	Now() = anchor reading + rate × (real time elapsed since the anchor)
//
// SetOffset and SetRate re-anchor, so Now never jumps except when SetOffset says so.
// Timers fire when Now reaches their deadline: a forward jump fires every timer it
// passes at once, a backward jump delays them, a rate of 0.5 makes them take twice as long
// in real time, and a rate of 0 freezes the clock and its pending timers.
package skewclock

import (
	"errors"
	"math"
	"sync"
	"time"

	"github.com/fenceline/fenceline/election"
)

// Clock is a skewable clock. The zero value is not usable; call New. It is safe for
// concurrent use.
type Clock struct {
	mu         sync.Mutex
	anchorReal time.Time // a real reading (with monotonic clock)
	anchorRead time.Time // what this clock read at anchorReal
	rate       float64
	timers     map[*timer]struct{} // pending timers
}

var _ election.Clock = (*Clock)(nil)

// New returns a Clock that reads the real time (offset 0, rate 1).
func New() *Clock {
	now := time.Now()
	return &Clock{anchorReal: now, anchorRead: now, rate: 1, timers: make(map[*timer]struct{})}
}

// Now returns the clock's time. It carries a monotonic reading, shifted and scaled with the
// clock, so Sub between two readings of this clock measures this clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readLocked(time.Now())
}

func (c *Clock) readLocked(real time.Time) time.Time {
	return c.anchorRead.Add(scale(real.Sub(c.anchorReal), c.rate))
}

// Offset returns how far the clock is ahead of the real clock now (negative if behind).
func (c *Clock) Offset() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	real := time.Now()
	return c.readLocked(real).Sub(real)
}

// Rate returns the clock's current rate.
func (c *Clock) Rate() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rate
}

// SetOffset makes the clock read d ahead of the real clock (behind if d < 0) from this
// instant on; with a rate other than 1 it drifts from there. SetOffset(0) undoes every
// jump and accumulated drift. Pending timers are re-evaluated: those whose deadline the
// clock has now passed fire at once.
func (c *Clock) SetOffset(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	real := time.Now()
	c.anchorReal, c.anchorRead = real, real.Add(d)
	c.rescheduleLocked(real)
}

// ErrRate is returned by SetRate for a negative, infinite or NaN rate.
var ErrRate = errors.New("skewclock: rate must be finite and >= 0")

// SetRate makes the clock advance r seconds per real second from this instant on, without
// a jump: 1 is true time, 0.25 a clock four times too slow, 0 a stopped clock. Pending
// timers are rescheduled for the new rate.
func (c *Clock) SetRate(r float64) error {
	if r < 0 || math.IsInf(r, 0) || math.IsNaN(r) {
		return ErrRate
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	real := time.Now()
	c.anchorRead, c.anchorReal = c.readLocked(real), real
	c.rate = r
	c.rescheduleLocked(real)
	return nil
}

// Heal sets offset 0 and rate 1.
func (c *Clock) Heal() {
	_ = c.SetRate(1)
	c.SetOffset(0)
}

// NewTimer returns a timer that fires when the clock reaches Now()+d.
func (c *Clock) NewTimer(d time.Duration) election.Timer {
	t := &timer{c: c, ch: make(chan time.Time, 1)}
	c.mu.Lock()
	defer c.mu.Unlock()
	t.startLocked(d)
	return t
}

func (c *Clock) rescheduleLocked(real time.Time) {
	for t := range c.timers {
		t.scheduleLocked(real)
	}
}

// realWaitLocked is how long, in real time, until the clock reads target; ok is false if
// it never will (stopped clock).
func (c *Clock) realWaitLocked(real, target time.Time) (d time.Duration, ok bool) {
	left := target.Sub(c.readLocked(real))
	switch {
	case left <= 0:
		return 0, true
	case c.rate == 0:
		return 0, false
	}
	w := math.Ceil(float64(left) / c.rate)
	if w >= math.MaxInt64 {
		return 0, false
	}
	return time.Duration(w), true
}

func scale(d time.Duration, r float64) time.Duration {
	if r == 1 {
		return d
	}
	return time.Duration(float64(d) * r)
}

// timer is a Clock's timer. All its fields are guarded by c.mu.
type timer struct {
	c      *Clock
	ch     chan time.Time
	target time.Time   // in clock time
	real   *time.Timer // the real timer that wakes it; nil if none
	gen    uint64      // bumped on every (re)schedule and stop; a stale wake-up is ignored
}

func (t *timer) C() <-chan time.Time { return t.ch }

// Stop prevents the timer from firing and drains its channel.
func (t *timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	return t.stopLocked()
}

// Reset makes the timer fire d from now on this clock, dropping any value not yet received.
func (t *timer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	pending := t.stopLocked()
	t.startLocked(d)
	return pending
}

func (t *timer) stopLocked() bool {
	_, pending := t.c.timers[t]
	delete(t.c.timers, t)
	t.gen++
	if t.real != nil {
		t.real.Stop()
		t.real = nil
	}
	select { // Go 1.23 semantics: no stale value after Stop or Reset
	case <-t.ch:
	default:
	}
	return pending
}

func (t *timer) startLocked(d time.Duration) {
	real := time.Now()
	t.target = t.c.readLocked(real).Add(d)
	t.c.timers[t] = struct{}{}
	t.scheduleLocked(real)
}

func (t *timer) scheduleLocked(real time.Time) {
	t.gen++
	if t.real != nil {
		t.real.Stop()
		t.real = nil
	}
	wait, ok := t.c.realWaitLocked(real, t.target)
	if !ok {
		return // stopped clock: rescheduled when the rate changes
	}
	gen := t.gen
	t.real = time.AfterFunc(wait, func() { t.wake(gen) })
}

// wake runs on the real timer's goroutine.
func (t *timer) wake(gen uint64) {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if gen != t.gen {
		return // stopped or rescheduled since
	}
	real := time.Now()
	now := t.c.readLocked(real)
	if now.Before(t.target) {
		t.scheduleLocked(real) // rounding: not quite there yet
		return
	}
	delete(t.c.timers, t)
	t.real = nil
	select {
	case t.ch <- now:
	default:
	}
}
