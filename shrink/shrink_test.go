//go:build chaos

package shrink

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/fenceline/fenceline/nemesis"
)

func schedule(n int) []nemesis.Step {
	s := make([]nemesis.Step, n)
	for i := range s {
		s[i] = nemesis.Step{At: time.Duration(i) * time.Second, Kind: nemesis.Kill}
	}
	return s
}

// failsWith is an oracle: a schedule fails when it holds every step at the given times
// (a failure that needs exactly those faults), but only every other time it is run,
// as timing would have it.
func failsWith(need ...time.Duration) (Oracle, *int) {
	calls := 0
	return func(_ context.Context, steps []nemesis.Step) (bool, string, error) {
		calls++
		for _, at := range need {
			if !slices.ContainsFunc(steps, func(s nemesis.Step) bool { return s.At == at }) {
				return false, "", nil
			}
		}
		return calls%2 == 0, "dir", nil
	}, &calls
}

func TestMinimizeFindsTheOneFault(t *testing.T) {
	run, _ := failsWith(7 * time.Second)
	res, err := Minimize(context.Background(), schedule(12), Config{Runs: 2}, run)
	if err != nil || res.From != 12 || res.To != 1 || res.Steps[0].At != 7*time.Second || res.OutOfTime {
		t.Fatalf("%+v, %v; want the fault at 7s alone", res, err)
	}
}

func TestMinimizeFindsTwoFaults(t *testing.T) {
	run, _ := failsWith(2*time.Second, 9*time.Second)
	res, err := Minimize(context.Background(), schedule(12), Config{Runs: 2}, run)
	if err != nil || res.To != 2 || res.Steps[0].At != 2*time.Second || res.Steps[1].At != 9*time.Second {
		t.Fatalf("%+v, %v; want the faults at 2s and 9s", res, err)
	}
}

func TestMinimizeNotReproduced(t *testing.T) {
	never := func(context.Context, []nemesis.Step) (bool, string, error) { return false, "", nil }
	if _, err := Minimize(context.Background(), schedule(4), Config{Runs: 3}, never); !errors.Is(err, ErrNotReproduced) {
		t.Fatalf("err %v, want ErrNotReproduced", err)
	}
}

// Out of time, the smallest failing schedule found so far stands.
func TestMinimizeBudget(t *testing.T) {
	slow := func(ctx context.Context, steps []nemesis.Step) (bool, string, error) {
		select {
		case <-ctx.Done():
			return false, "", ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		return true, "dir", nil
	}
	res, err := Minimize(context.Background(), schedule(64), Config{Runs: 1, Budget: 70 * time.Millisecond}, slow)
	if err != nil || !res.OutOfTime || res.To == 0 || res.To >= 64 {
		t.Fatalf("%+v, %v; want a partial result, out of time", res, err)
	}
}
