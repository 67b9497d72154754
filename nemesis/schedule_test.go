package nemesis

import (
	"reflect"
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
