package faults

import (
	"errors"
	"slices"
	"testing"
)

func TestParseList(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"none", nil},
		{"kill, stop,kill", []string{Kill, Stop}},
		{"partition", []string{PartitionBlackhole, PartitionReset}},
		{"all", []string{Clock, Delay, Kill, PartitionBlackhole, PartitionReset, Pause, RedisRestart, Stop}},
		{"redis-restart-volatile", []string{RedisRestartVolatile}},
		{"failpoint,fp-late-renew", []string{FPLateCommit, FPLateRelease, FPLateRenew, FPReleaseRace, FPStallNewLeader}},
	} {
		got, err := ParseList(c.in)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("ParseList(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	if _, err := ParseList("kill,meteor"); !errors.Is(err, ErrUnknown) {
		t.Errorf("ParseList(meteor) = %v, want ErrUnknown", err)
	}
}

func TestKnownIsAllPlusVolatileAndFailpoints(t *testing.T) {
	if slices.Contains(All(), RedisRestartVolatile) || !slices.Contains(Known(), RedisRestartVolatile) ||
		slices.Contains(All(), FPLateRenew) || !slices.Contains(Known(), FPLateRenew) || len(Known()) != len(All())+1+len(Failpoints()) {
		t.Fatalf("All %v, Known %v", All(), Known())
	}
	a := All()
	a[0] = "x"
	if All()[0] != Kill {
		t.Fatal("All shares its slice")
	}
}
