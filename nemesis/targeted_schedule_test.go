package nemesis

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/fenceline/fenceline/faults"
)

// A targeted schedule is the random one with the same seed, its node faults aimed at
// moments: the same kinds, times and holds, every aimable step aimed at one of its
// kind's moments and at the leader. Mixed aims some; an unknown kind is an error.
func TestTargetedSchedule(t *testing.T) {
	o := ScheduleOptions{Seed: 42, Kinds: faults.All(), Duration: 5 * time.Minute, LeaseTTL: 2 * time.Second, Nodes: 3}
	random, err := NewSchedule(o)
	if err != nil {
		t.Fatal(err)
	}
	o.Kind = ScheduleTargeted
	targeted, err := NewSchedule(o)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := NewSchedule(o)
	if !slices.EqualFunc(targeted, again, func(a, b Step) bool { return a == b }) {
		t.Fatal("same seed gave different targeted schedules")
	}
	if len(targeted) != len(random) {
		t.Fatalf("%d targeted steps, %d random", len(targeted), len(random))
	}
	moments := map[string]int{}
	for i, s := range targeted {
		r := random[i]
		if s.Kind != r.Kind || s.At != r.At || s.Params != r.Params {
			t.Fatalf("step %d: %+v, random %+v", i, s, r)
		}
		switch {
		case len(momentsOf[s.Kind]) == 0 && s.Moment != "":
			t.Fatalf("step %d: %s aimed at %s", i, s.Kind, s.Moment)
		case len(momentsOf[s.Kind]) > 0 && (!slices.Contains(momentsOf[s.Kind], s.Moment) || !s.Aim.Leader):
			t.Fatalf("step %d: %s not aimed at the leader at one of its moments: %+v", i, s.Kind, s)
		}
		moments[s.Moment]++
	}
	for _, m := range Moments() {
		if moments[m] == 0 {
			t.Errorf("no step aimed at %s in a 5-minute schedule", m)
		}
	}
	o.Kind = ScheduleMixed
	mixed, _ := NewSchedule(o)
	aimed := 0
	for _, s := range mixed {
		if s.Moment != "" {
			aimed++
		}
	}
	if aimed == 0 || aimed == len(mixed) {
		t.Errorf("mixed aimed %d of %d steps", aimed, len(mixed))
	}
	o.Kind = "clever"
	if _, err := NewSchedule(o); !errors.Is(err, ErrUnknownSchedule) {
		t.Errorf("schedule %q: %v, want ErrUnknownSchedule", o.Kind, err)
	}
}

func TestForStep(t *testing.T) {
	if f, err := ForStep(Step{Kind: faults.Pause, Moment: MomentBeforeCommit}); err != nil {
		t.Fatal(err)
	} else if _, ok := f.(Aimer); !ok || f.Kind() != faults.Pause {
		t.Fatalf("%T, want an aimed pause", f)
	}
	if f, err := ForStep(Step{Kind: faults.Pause}); err != nil {
		t.Fatal(err)
	} else if _, ok := f.(Aimer); ok {
		t.Fatal("a step without a moment is aimed")
	}
	if _, err := ForStep(Step{Kind: faults.RedisRestart, Moment: MomentRelease}); err == nil {
		t.Fatal("a Redis restart aimed at a release")
	}
}
