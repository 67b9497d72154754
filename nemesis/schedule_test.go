package nemesis

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/fenceline/fenceline/faults"
)

func TestScheduleDeterministic(t *testing.T) {
	o := ScheduleOptions{Seed: 42, Kinds: faults.All(), Duration: 5 * time.Minute, LeaseTTL: 2 * time.Second, Nodes: 3}
	a, err := NewSchedule(o)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewSchedule(o)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed gave different schedules")
	}
	o.Seed = 43
	c, _ := NewSchedule(o)
	if reflect.DeepEqual(a, c) {
		t.Fatal("different seeds gave the same schedule")
	}
	kinds := map[string]int{}
	for i, s := range a {
		kinds[s.Kind]++
		if i > 0 && s.At < a[i-1].At+a[i-1].Params.Hold {
			t.Fatalf("step %d starts before step %d is healed", i, i-1)
		}
	}
	if len(a) < 30 {
		t.Fatalf("5 minutes gave %d faults, want >= 30", len(a))
	}
	for _, k := range faults.All() {
		if kinds[k] == 0 {
			t.Errorf("no %s fault in a 5-minute schedule", k)
		}
	}
}

func TestParseList(t *testing.T) {
	got, err := faults.ParseList("kill, partition,kill")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{faults.Kill, faults.PartitionBlackhole, faults.PartitionReset}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got, _ := faults.ParseList("none"); len(got) != 0 {
		t.Fatalf("none gave %v", got)
	}
	if got, _ := faults.ParseList("all"); len(got) != len(faults.All()) {
		t.Fatalf("all gave %v", got)
	}
	if _, err := faults.ParseList("kill,explode"); err == nil {
		t.Fatal("unknown fault accepted")
	}
}

// The failpoint faults always aim at the leader: their moment is the leader's.
func TestFailpointStepsAimAtTheLeader(t *testing.T) {
	steps, err := NewSchedule(ScheduleOptions{Seed: 7, Kinds: faults.Failpoints(),
		Duration: 5 * time.Minute, LeaseTTL: time.Second, Nodes: 3})
	if err != nil || len(steps) < 20 {
		t.Fatalf("%d steps, %v", len(steps), err)
	}
	for _, s := range steps {
		if !s.Aim.Leader || s.Params.Hold < 2500*time.Millisecond {
			t.Fatalf("step %+v: want the leader as target and a hold of at least 2.5 leases", s)
		}
	}
}

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
