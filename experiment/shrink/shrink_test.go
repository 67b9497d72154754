//go:build chaos

package shrink

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/nemesis"
)

func schedule(n int) []nemesis.Step {
	s := make([]nemesis.Step, n)
	for i := range s {
		// Magnitude names the step: a candidate's times are moved (Align).
		s[i] = nemesis.Step{At: time.Duration(i) * time.Second, Kind: faults.Kill, Params: nemesis.Params{Magnitude: float64(i)}}
	}
	return s
}

// failsWith is an oracle: a schedule fails when it holds every step originally at the given times
// (a failure that needs exactly those faults), but only every other time it is run,
// as timing would have it.
func failsWith(need ...time.Duration) (Oracle, *int) {
	calls := 0
	return func(_ context.Context, steps []nemesis.Step) (Run, error) {
		calls++
		for _, at := range need {
			if !slices.ContainsFunc(steps, func(s nemesis.Step) bool { return s.Params.Magnitude == at.Seconds() }) {
				return Run{}, nil
			}
		}
		return Run{Failed: calls%2 == 0, Dir: "dir"}, nil
	}, &calls
}

func TestMinimizeFindsTheOneFault(t *testing.T) {
	run, _ := failsWith(7 * time.Second)
	res, err := Minimize(context.Background(), schedule(12), Config{Repeat: 2}, run)
	if err != nil || res.From != 12 || res.To != 1 || res.Steps[0].Params.Magnitude != 7 || res.Steps[0].At != 0 || res.OutOfTime {
		t.Fatalf("%+v, %v; want the fault at 7s alone", res, err)
	}
}

func TestMinimizeFindsTwoFaults(t *testing.T) {
	run, _ := failsWith(2*time.Second, 9*time.Second)
	res, err := Minimize(context.Background(), schedule(12), Config{Repeat: 2}, run)
	if err != nil || res.To != 2 || res.Steps[0].Params.Magnitude != 2 || res.Steps[1].Params.Magnitude != 9 || res.Steps[1].At-res.Steps[0].At != 7*time.Second {
		t.Fatalf("%+v, %v; want the faults at 2s and 9s", res, err)
	}
}

func TestMinimizeNotReproduced(t *testing.T) {
	never := func(context.Context, []nemesis.Step) (Run, error) { return Run{}, nil }
	if _, err := Minimize(context.Background(), schedule(4), Config{Repeat: 3}, never); !errors.Is(err, ErrNotReproduced) {
		t.Fatalf("err %v, want ErrNotReproduced", err)
	}
}

// Out of time, the smallest failing schedule found so far stands.
func TestMinimizeTimeLimit(t *testing.T) {
	slow := func(ctx context.Context, steps []nemesis.Step) (Run, error) {
		select {
		case <-ctx.Done():
			return Run{}, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		return Run{Failed: true, Dir: "dir"}, nil
	}
	res, err := Minimize(context.Background(), schedule(64), Config{Repeat: 1, TimeLimit: 70 * time.Millisecond}, slow)
	if err != nil || !res.OutOfTime || res.To == 0 || res.To >= 64 {
		t.Fatalf("%+v, %v; want a partial result, out of time", res, err)
	}
}

// A failing run that says its first violation came after its third fault makes those
// three the next candidate: the search needs far fewer runs than ddmin's halves alone.
func TestMinimizeTrimsAfterTheFirstViolation(t *testing.T) {
	var sizes []int
	run := func(_ context.Context, steps []nemesis.Step) (Run, error) {
		sizes = append(sizes, len(steps))
		for i, s := range steps {
			if s.Params.Magnitude == 2 { // the culprit, the original's third fault
				return Run{Failed: true, Dir: "dir", Before: i + 1}, nil
			}
		}
		return Run{}, nil
	}
	res, err := Minimize(context.Background(), schedule(12), Config{Repeat: 1}, run)
	if err != nil || res.To != 1 || res.Steps[0].Params.Magnitude != 2 {
		t.Fatalf("%+v, %v; want the third fault alone", res, err)
	}
	if sizes[1] != 3 || res.Runs > 6 {
		t.Fatalf("candidate sizes %v; want the prefix of 3 second, and few runs", sizes)
	}
}

func TestAlign(t *testing.T) {
	got := Align(schedule(12)[5:8], 500*time.Millisecond)
	if got[0].At != 500*time.Millisecond || got[2].At != 2500*time.Millisecond || len(got) != 3 {
		t.Fatalf("%+v", got)
	}
}
