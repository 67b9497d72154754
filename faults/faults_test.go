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
		{"failpoint,fp-late-renew", []string{FPLateCommit, FPLateRelease, FPLateRenew, FPLoadRace, FPReleaseLost, FPReleaseRace, FPStallNewLeader, FPTakeoverRace}},
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

func TestKnownIsAllPlusVolatileFailpointsAndReplicated(t *testing.T) {
	// Beside the lists: redis-restart-volatile and redlock-restart; presence-loss and
	// presence-flap; source-outage.
	if slices.Contains(All(), PresenceLoss) || !slices.Contains(Known(), PresenceLoss) || slices.Contains(All(), PresenceFlap) || !slices.Contains(Known(), PresenceFlap) {
		t.Fatalf("All %v, Known %v: presence-loss and presence-flap must be known and not in all", All(), Known())
	}
	if slices.Contains(All(), RedisRestartVolatile) || !slices.Contains(Known(), RedisRestartVolatile) ||
		slices.Contains(All(), FPLateRenew) || !slices.Contains(Known(), FPLateRenew) ||
		!slices.Contains(Known(), RedisFailover) || len(Known()) != len(All())+5+len(Failpoints())+len(Replicated())+len(Postgres())+len(Etcd()) {
		t.Fatalf("All %v, Known %v", All(), Known())
	}
	a := All()
	a[0] = "x"
	if All()[0] != Kill {
		t.Fatal("All shares its slice")
	}
}

// Where a fault cannot happen, asking for it is an error; "all" means what can.
func TestTopology(t *testing.T) {
	if _, err := ParseListFor("kill,redis-failover", true); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseListFor("redis-restart", true); !errors.Is(err, ErrTopology) {
		t.Fatalf("redis-restart with replicas: %v, want ErrTopology", err)
	}
	if err := CheckTopology([]string{Kill, ReplicationDelay}, false); !errors.Is(err, ErrTopology) {
		t.Fatalf("replication-delay without replicas: %v, want ErrTopology", err)
	}
	all, err := ParseListFor("all", true)
	if err != nil || slices.Contains(all, RedisRestart) || !slices.Contains(all, RedisIsolatePrimary) || !slices.Contains(all, Pause) {
		t.Fatalf("all with replicas = %v, %v", all, err)
	}
	if single, _ := ParseList("all"); !slices.Equal(single, []string{Clock, Delay, Kill, PartitionBlackhole, PartitionReset, Pause, RedisRestart, Stop}) {
		t.Fatalf("all without replicas changed: %v", single)
	}
}

// An etcd fault in a run without etcd is refused by name; with etcd, every one is fine.
func TestCheckEtcd(t *testing.T) {
	if err := CheckEtcd([]string{Kill, PartitionEtcd}, false); !errors.Is(err, ErrNoEtcd) {
		t.Fatalf("partition-etcd without etcd: %v, want ErrNoEtcd", err)
	}
	if err := CheckEtcd(append(All(), Etcd()...), true); err != nil {
		t.Fatal(err)
	}
	if err := CheckEtcd(All(), false); err != nil {
		t.Fatal(err)
	}
	for _, k := range Etcd() {
		if !IsKnown(k) || slices.Contains(All(), k) {
			t.Errorf("%s: known %v, in all %v", k, IsKnown(k), slices.Contains(All(), k))
		}
	}
}
