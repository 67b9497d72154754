package nemesis

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/faults"
)

// abortingSentinels is a topology whose first planned switchover Redis abandons
// (-failover-abort-slave-timeout): only a second SENTINEL FAILOVER promotes.
type abortingSentinels struct {
	Backend
	mu    sync.Mutex
	asked int
}

func (a *abortingSentinels) Switchover(context.Context) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked++
	return "r1", nil
}

func (a *abortingSentinels) WaitPromotion(ctx context.Context, _ time.Time, from string) (backend.Promotion, error) {
	for {
		a.mu.Lock()
		n := a.asked
		a.mu.Unlock()
		if n >= 2 {
			return backend.Promotion{From: from, To: "r2", Time: time.Now()}, nil
		}
		select {
		case <-ctx.Done():
			return backend.Promotion{}, errors.New("no promotion")
		case <-time.After(time.Millisecond):
		}
	}
}

func (a *abortingSentinels) StartRedis(context.Context) error { return nil }
func (*abortingSentinels) KillPrimary(context.Context) (string, error) {
	return "", errors.New("not used")
}
func (*abortingSentinels) CutPrimary(context.Context, ...backend.Toxic) (string, error) {
	return "", errors.New("not used")
}
func (*abortingSentinels) UncutPrimary(context.Context, string, ...string) error { return nil }
func (*abortingSentinels) PauseReplicas(context.Context) error                   { return nil }
func (*abortingSentinels) ResumeReplicas(context.Context) error                  { return nil }

// A switchover that Redis abandoned is asked for again by the heal, which then sees the
// promotion; without it the heal waited 30 s for one that never came, and the run ended
// unknown.
func TestSwitchoverAbandonedIsAskedAgain(t *testing.T) {
	defer func(d time.Duration) { switchoverRetry = d }(switchoverRetry)
	switchoverRetry = 50 * time.Millisecond
	c := &abortingSentinels{}
	f, err := ByKind(faults.RedisSwitchover)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := f.Inject(ctx, c, AimRedis, Params{}); err != nil {
		t.Fatal(err)
	}
	what, err := f.Heal(ctx, c, AimRedis)
	if err != nil {
		t.Fatalf("heal: %v (%s)", err, what)
	}
	if c.asked != 2 {
		t.Errorf("SENTINEL FAILOVER asked %d times, want 2", c.asked)
	}
}
