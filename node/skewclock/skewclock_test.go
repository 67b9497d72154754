package skewclock

import (
	"errors"
	"math"
	"testing"
	"testing/synctest"
	"time"
)

// The tests run in a synctest bubble: the "real" clock under the skewed one is fake, so
// every assertion is exact.

func TestNowFollowsOffsetAndRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New()
		t0 := c.Now()
		time.Sleep(time.Second)
		if d := c.Now().Sub(t0); d != time.Second {
			t.Errorf("rate 1: %v elapsed, want 1s", d)
		}
		c.SetOffset(time.Hour)
		if d := c.Now().Sub(t0); d != time.Hour+time.Second {
			t.Errorf("after a jump: %v since t0, want 1h1s", d)
		}
		if o := c.Offset(); o != time.Hour {
			t.Errorf("Offset = %v, want 1h", o)
		}
		if err := c.SetRate(0.25); err != nil {
			t.Fatal(err)
		}
		t1 := c.Now()
		time.Sleep(4 * time.Second)
		if d := c.Now().Sub(t1); d != time.Second {
			t.Errorf("rate 0.25: %v elapsed in 4s, want 1s", d)
		}
		if o := c.Offset(); o != time.Hour-3*time.Second {
			t.Errorf("Offset = %v, want 1h - 3s of drift", o)
		}
		c.Heal()
		if o, r := c.Offset(), c.Rate(); o != 0 || r != 1 {
			t.Errorf("after Heal: offset %v rate %v", o, r)
		}
	})
}

// Readings carry a monotonic reading (outside a synctest bubble, whose clock has none), so
// Sub between them ignores changes of the host's wall clock.
func TestNowIsMonotonic(t *testing.T) {
	c := New()
	c.SetOffset(-time.Hour)
	if s := c.Now().String(); !containsMono(s) {
		t.Errorf("Now() = %s has no monotonic reading", s)
	}
}

func containsMono(s string) bool {
	for i := 0; i+2 < len(s); i++ {
		if s[i:i+3] == "m=+" || s[i:i+3] == "m=-" {
			return true
		}
	}
	return false
}

func TestTimerScaledByRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New()
		if err := c.SetRate(2); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		tm := c.NewTimer(time.Second)
		<-tm.C()
		if d := time.Since(start); d != 500*time.Millisecond {
			t.Errorf("1s timer at rate 2 fired after %v real, want 500ms", d)
		}
	})
}

func TestRateChangeReschedulesTimers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New()
		start := time.Now()
		tm := c.NewTimer(time.Second)
		time.Sleep(600 * time.Millisecond)
		if err := c.SetRate(0.5); err != nil { // 400ms left on the clock: 800ms real
			t.Fatal(err)
		}
		<-tm.C()
		if d := time.Since(start); d != 1400*time.Millisecond {
			t.Errorf("fired after %v, want 1.4s", d)
		}
	})
}

func TestJumpFiresOrDelaysTimers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New()
		start := time.Now()
		early := c.NewTimer(time.Second)
		late := c.NewTimer(10 * time.Second)
		c.SetOffset(2 * time.Second) // passes early's deadline, not late's
		synctest.Wait()
		select {
		case <-early.C():
		default:
			t.Fatal("a forward jump past the deadline did not fire the timer")
		}
		c.SetOffset(-2 * time.Second) // now 4s behind where it was
		<-late.C()
		if d := time.Since(start); d != 12*time.Second {
			t.Errorf("late timer fired after %v, want 12s (delayed by the backward jump)", d)
		}
	})
}

func TestStoppedClockFreezesTimers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New()
		tm := c.NewTimer(time.Second)
		if err := c.SetRate(0); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour)
		select {
		case <-tm.C():
			t.Fatal("timer fired on a stopped clock")
		default:
		}
		start := time.Now()
		if err := c.SetRate(1); err != nil {
			t.Fatal(err)
		}
		<-tm.C()
		if d := time.Since(start); d != time.Second {
			t.Errorf("fired %v after the clock restarted, want 1s", d)
		}
	})
}

func TestStopAndReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New()
		tm := c.NewTimer(time.Second)
		if !tm.Stop() {
			t.Error("Stop of a pending timer = false")
		}
		time.Sleep(2 * time.Second)
		select {
		case <-tm.C():
			t.Fatal("stopped timer fired")
		default:
		}
		if tm.Stop() {
			t.Error("second Stop = true")
		}

		// A fired but unreceived value is dropped by Reset (Go 1.23 semantics).
		tm.Reset(time.Second)
		time.Sleep(2 * time.Second)
		if tm.Reset(time.Second) {
			t.Error("Reset of a fired timer = true")
		}
		start := time.Now()
		<-tm.C()
		if d := time.Since(start); d != time.Second {
			t.Errorf("reset timer fired after %v, want 1s (stale value delivered?)", d)
		}
		if c.pending() != 0 {
			t.Errorf("%d timers still tracked", c.pending())
		}
	})
}

func TestSetRateRejectsBadRates(t *testing.T) {
	c := New()
	for _, r := range []float64{-1, math.Inf(1), math.NaN()} {
		if err := c.SetRate(r); !errors.Is(err, ErrRate) {
			t.Errorf("SetRate(%v) = %v, want ErrRate", r, err)
		}
	}
	if c.Rate() != 1 {
		t.Errorf("rate changed to %v", c.Rate())
	}
}

func (c *Clock) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}
