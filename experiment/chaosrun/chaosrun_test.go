//go:build chaos

package chaosrun

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/harness"
	"github.com/fenceline/fenceline/internal/failpoint"
	"github.com/fenceline/fenceline/nemesis"
	"github.com/fenceline/fenceline/variants"
	"github.com/fenceline/fenceline/workloads"
)

// Runs started in the same second with the same seed and the same --out get a
// directory each, created exclusively; latest points at one of them.
func TestRunDirsAreExclusive(t *testing.T) {
	out := t.TempDir()
	const n = 16
	dirs := make(chan string, n)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := NewRunDir(out, 42)
			if err != nil {
				errs <- err
				return
			}
			dirs <- d
		}()
	}
	wg.Wait()
	close(dirs)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	seen := map[string]bool{}
	for d := range dirs {
		if seen[d] {
			t.Errorf("directory %s handed out twice", d)
		}
		seen[d] = true
	}
	if len(seen) != n {
		t.Errorf("%d directories for %d runs", len(seen), n)
	}
	target, err := os.Readlink(filepath.Join(out, "latest"))
	if err != nil || !seen[filepath.Join(out, target)] {
		t.Errorf("latest -> %q (%v), not one of the runs", target, err)
	}
	left, _ := filepath.Glob(filepath.Join(out, ".latest-*"))
	if len(left) > 0 {
		t.Errorf("temporary links left behind: %v", left)
	}
}

// Every listener run whose faults can make a stale leader (every fault, or pause and
// delay), stop a leader or restart Redis begins with the probes those faults call for,
// before the seed's own faults (shifted, otherwise as they were); runs of faults that
// call for none (kills), other workloads and the PostgreSQL store do not get them.
func TestStaleLeaderProbes(t *testing.T) {
	wl, err := workloads.ByName("listener")
	if err != nil {
		t.Fatal(err)
	}
	s := Spec{Workload: wl, Nemeses: faults.All(), LeaseTTL: 2 * time.Second}
	if !s.probes() && failpoint.Enabled {
		t.Error("a listener run of every fault has no probe")
	}
	// Narrowed to faults that can make a stale leader, the run keeps the probe.
	if n := (Spec{Workload: wl, Nemeses: []string{faults.Delay, faults.Pause}}); !n.probes() && failpoint.Enabled {
		t.Error("a listener run of pause and delay has no probe")
	}
	// A stop may release late; a Redis restart may find Redis without persistence.
	for _, k := range []string{faults.Stop, faults.RedisRestart} {
		if n := (Spec{Workload: wl, Nemeses: []string{faults.Kill, k}}); !n.probes() && failpoint.Enabled {
			t.Errorf("a listener run of kill and %s has no probe", k)
		}
	}
	for name, o := range map[string]Spec{
		"no stale leader": {Workload: wl, Nemeses: []string{faults.Kill, faults.EtcdKill}},
		"register":        {Workload: workloads.Workload{Name: "register"}, Nemeses: faults.All()},
		"postgres store":  {Workload: wl, Nemeses: faults.All(), Store: "postgres"},
	} {
		if o.probes() {
			t.Errorf("%s: probed", name)
		}
	}
	steps, err := nemesis.NewSchedule(nemesis.ScheduleOptions{Seed: 3, Kinds: faults.All(), Duration: time.Minute, LeaseTTL: 2 * time.Second, Nodes: 3})
	if err != nil {
		t.Fatal(err)
	}
	// The probes come first, one after the other: the load race, a Redis restart, a late
	// release, a slowed leader, a stalled new leader, a racing release, a forward clock
	// jump on each of the first three nodes; then the seed's schedule, its faults and
	// their spacing unchanged.
	lease := 2 * time.Second
	all := WithStaleLeaderProbes(steps, lease, 5, faults.All())
	want := []string{faults.FPLoadRace, faults.RedisRestart, faults.FPLateRelease, faults.Delay, faults.FPStallNewLeader, faults.FPReleaseRace, faults.Clock, faults.Clock, faults.Clock}
	if len(all) != len(steps)+len(want) {
		t.Fatalf("%d steps with the probes, %d without", len(all), len(steps))
	}
	for i, p := range all[:len(want)] {
		at := lease / 2
		if i > 0 {
			prev := all[i-1]
			at = prev.At + prev.Params.Hold + 3*time.Second
		}
		if p.At != at || p.Kind != want[i] || p.Params.LeaseTTL != lease {
			t.Errorf("probe %d: %+v, want %s at %v", i, p, want[i], at)
		}
		if p.CrossDigits != (p.Kind == faults.Delay) {
			t.Errorf("probe %d: the token counter moved to a digit boundary %v, want only before the delay", i, p.CrossDigits)
		}
		if p.Kind != faults.Clock && p.Kind != faults.RedisRestart && !p.Aim.Leader {
			t.Errorf("probe %d is not aimed at the leader: %+v", i, p)
		}
		if lat := nemesis.DelayLatency(p.Params); p.Kind == faults.Delay && (lat != 3250*time.Millisecond || p.Params.Hold != lat+lease/2 || p.Moment != nemesis.MomentBeforeCommit || !p.CrossDigits) {
			t.Errorf("delay probe %d: %+v (latency %v)", i, p, lat)
		}
		if off, rate := nemesis.ClockSkew(p.Params); p.Kind == faults.Clock && (p.Aim.Node != i-5 || off != 3*time.Second || rate != 1) {
			t.Errorf("clock probe %d: %+v (offset %v, rate %v)", i, p, off, rate)
		}
	}
	last := all[len(want)-1]
	shift := last.At + last.Params.Hold + 3*time.Second - lease/2
	for i, p := range all[len(want):] {
		if w := steps[i]; p.At != w.At+shift || p.Kind != w.Kind || p.Aim != w.Aim || p.Params != w.Params || p.CrossDigits {
			t.Errorf("step %d of the seed's schedule: %+v, want %+v shifted by %v", i, p, w, shift)
		}
	}
	if got := WithStaleLeaderProbes(steps, lease, 3, []string{faults.Kill}); !reflect.DeepEqual(got, steps) {
		t.Errorf("kills only: the schedule changed")
	}
	// Narrowed runs get the probes of their faults only.
	for _, c := range []struct {
		kinds []string
		want  []string
	}{
		{[]string{faults.Kill, faults.Stop}, []string{faults.FPLateRelease, faults.FPReleaseRace}},
		{[]string{faults.RedisRestart}, []string{faults.RedisRestart}},
		{[]string{faults.Delay}, []string{faults.FPLoadRace, faults.Delay, faults.FPStallNewLeader, faults.Clock, faults.Clock, faults.Clock}},
		{[]string{faults.Pause}, []string{faults.FPLoadRace, faults.FPStallNewLeader, faults.Clock, faults.Clock, faults.Clock}},
		{append(faults.All(), faults.RedlockRestart), append([]string{faults.RedlockRestart}, want...)},
	} {
		var kinds []string
		for _, p := range WithStaleLeaderProbes(steps, 2*time.Second, 3, c.kinds)[:len(c.want)] {
			kinds = append(kinds, p.Kind)
		}
		if !reflect.DeepEqual(kinds, c.want) {
			t.Errorf("%v: probes %v, want %v", c.kinds, kinds, c.want)
		}
	}
}

// A run whose nodes take over on disconnect gets fp-takeover-race when its faults kill a
// node, after the other probes (before presence-loss and the clock jumps), and a
// kills-only run gets it alone; no other run gets it.
func TestTakeoverRaceProbe(t *testing.T) {
	for _, c := range []struct {
		s    Spec
		want bool
	}{
		{Spec{Takeover: true, Nemeses: faults.All()}, true},
		{Spec{Takeover: true, Nemeses: []string{faults.Kill}}, true},
		{Spec{Nemeses: faults.All()}, false},
		{Spec{Takeover: true, Nemeses: []string{faults.Pause}}, false},
	} {
		if got := slices.Contains(c.s.probeKinds(), faults.FPTakeoverRace); got != c.want {
			t.Errorf("takeover %v, faults %v: fp-takeover-race %v, want %v", c.s.Takeover, c.s.Nemeses, got, c.want)
		}
		if got := probed(c.s.probeKinds()); c.want && !got {
			t.Errorf("takeover %v, faults %v: not probed", c.s.Takeover, c.s.Nemeses)
		}
	}
	steps, err := nemesis.NewSchedule(nemesis.ScheduleOptions{Seed: 3, Kinds: faults.All(), Duration: time.Minute, LeaseTTL: 2 * time.Second, Nodes: 3})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, p := range WithStaleLeaderProbes(steps, 2*time.Second, 3, Spec{Takeover: true, Nemeses: faults.All()}.probeKinds())[:11] {
		kinds = append(kinds, p.Kind)
	}
	// What only takeover on disconnect has comes first: a run with it is for it.
	want := []string{faults.Kill, faults.PresenceLoss, faults.PresenceFlap, faults.FPTakeoverRace, faults.FPLoadRace, faults.RedisRestart, faults.FPLateRelease, faults.Delay, faults.FPStallNewLeader, faults.FPReleaseRace, faults.Clock}
	if !reflect.DeepEqual(kinds, want) {
		t.Errorf("probes %v, want %v", kinds, want)
	}
	got := WithStaleLeaderProbes(steps, 2*time.Second, 3, []string{faults.Kill, faults.FPTakeoverRace})
	if len(got) != len(steps)+2 || got[0].Kind != faults.Kill || !got[0].Aim.Leader || got[0].At != time.Second ||
		got[1].Kind != faults.FPTakeoverRace || !got[1].Aim.Leader {
		t.Errorf("kills with takeover: first steps %+v of %d", got[:2], len(got))
	}
}

// A run whose nodes take over on disconnect gets presence-loss and presence-flap, aimed
// at the leader, when its faults reset a node's connections; no other run gets them.
func TestPresenceLossProbe(t *testing.T) {
	for _, c := range []struct {
		s    Spec
		want bool
	}{
		{Spec{Takeover: true, Nemeses: faults.All()}, true},
		{Spec{Takeover: true, Nemeses: []string{faults.PartitionReset}}, true},
		{Spec{Nemeses: faults.All()}, false},
		{Spec{Takeover: true, Nemeses: []string{faults.Kill}}, false},
	} {
		for _, k := range []string{faults.PresenceLoss, faults.PresenceFlap} {
			if got := slices.Contains(c.s.probeKinds(), k); got != c.want {
				t.Errorf("takeover %v, faults %v: %s %v, want %v", c.s.Takeover, c.s.Nemeses, k, got, c.want)
			}
		}
	}
	steps := WithStaleLeaderProbes(nil, 2*time.Second, 3, Spec{Takeover: true, Nemeses: []string{faults.PartitionReset}}.probeKinds())
	for _, k := range []string{faults.PresenceLoss, faults.PresenceFlap} {
		i := slices.IndexFunc(steps, func(s nemesis.Step) bool { return s.Kind == k })
		if i < 0 || !steps[i].Aim.Leader || steps[i].Params.Hold != 3*time.Second {
			t.Errorf("resets with takeover: probes %+v, want %s on the leader for 1.5 leases", steps, k)
		}
	}
}

// fp-late-renew, which `all` leaves out, is a probe of a run that names it, after the
// others but the clock jumps; a run of `all` has none.
func TestLateRenewProbe(t *testing.T) {
	lease := 2 * time.Second
	steps, err := nemesis.NewSchedule(nemesis.ScheduleOptions{Seed: 3, Kinds: faults.All(), Duration: time.Minute, LeaseTTL: lease, Nodes: 3})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, p := range WithStaleLeaderProbes(steps, lease, 3, append(faults.All(), faults.FPLateRenew))[:10] {
		kinds = append(kinds, p.Kind)
		if p.Kind == faults.FPLateRenew && !p.Aim.Leader {
			t.Errorf("the late renewal aims at %+v, not the leader", p.Aim)
		}
	}
	want := []string{faults.FPLoadRace, faults.RedisRestart, faults.FPLateRelease, faults.Delay, faults.FPStallNewLeader, faults.FPReleaseRace, faults.FPLateRenew, faults.Clock, faults.Clock, faults.Clock}
	if !reflect.DeepEqual(kinds, want) {
		t.Errorf("probes %v, want %v", kinds, want)
	}
	for _, p := range WithStaleLeaderProbes(steps, lease, 3, faults.All()) {
		if p.Kind == faults.FPLateRenew {
			t.Errorf("a run of all has the late renewal at %v", p.At)
		}
	}
	if !probed([]string{faults.FPLateRenew}) {
		t.Error("a run of fp-late-renew alone is not probed")
	}
}

// A run of the Redlock variant has its servers, and their restart opens its probes when
// its faults restart Redis; no other run has either, nor takes the fault.
func TestRedlockProbe(t *testing.T) {
	rl := Spec{Variant: variants.RedlockMajority, Nemeses: faults.All()}
	if rl.redlockServers() != variants.RedlockServers || !slices.Contains(rl.probeKinds(), faults.RedlockRestart) || slices.Contains(rl.Nemeses, faults.RedlockRestart) {
		t.Errorf("redlock-majority under all: %d servers, probe kinds %v, faults %v", rl.redlockServers(), rl.probeKinds(), rl.Nemeses)
	}
	if narrowed := (Spec{Variant: variants.RedlockMajority, Nemeses: []string{faults.Pause}}); slices.Contains(narrowed.probeKinds(), faults.RedlockRestart) {
		t.Errorf("redlock-majority under pause: probe kinds %v", narrowed.probeKinds())
	}
	ref := Spec{Variant: variants.Reference, Nemeses: faults.All()}
	if ref.redlockServers() != 0 || slices.Contains(ref.probeKinds(), faults.RedlockRestart) {
		t.Errorf("reference: %d servers, probe kinds %v", ref.redlockServers(), ref.probeKinds())
	}
}

// Each run starts where its own seed says, also when one spec runs many seeds
// (validate); a pinned start is kept, and a --node-cmd node's store starts fresh.
func TestStartPerSeed(t *testing.T) {
	starts := map[[2]int64]bool{}
	for seed := int64(1); seed <= 10; seed++ {
		s := Spec{Seed: seed}
		tok, cur := s.Start()
		if wt, wc := harness.BoundaryStart(seed); tok != wt || cur != wc {
			t.Errorf("seed %d starts at %d/%d, want %d/%d", seed, tok, cur, wt, wc)
		}
		if o := s.NodeOptions(); o.StartToken != tok || o.StartCursor != cur {
			t.Errorf("seed %d: the nodes seed %d/%d, the run says %d/%d", seed, o.StartToken, o.StartCursor, tok, cur)
		}
		starts[[2]int64{tok, cur}] = true
	}
	if len(starts) < 5 {
		t.Errorf("10 seeds drew %d starts", len(starts))
	}
	if tok, cur := (Spec{Seed: 3, StartPinned: true, StartToken: 7}).Start(); tok != 7 || cur != 0 {
		t.Errorf("pinned start: %d/%d", tok, cur)
	}
	if tok, cur := (Spec{Seed: 3, NodeCmd: "python3 node.py"}).Start(); tok != 0 || cur != 0 {
		t.Errorf("--node-cmd start: %d/%d", tok, cur)
	}
}

// fp-release-lost and source-outage, which `all` leaves out, are probes of a run that
// names them, after the late renewal, aimed at the leader for a lease.
func TestReleaseLostAndSourceOutageProbes(t *testing.T) {
	lease := 2 * time.Second
	kinds := append(faults.All(), faults.FPLateRenew, faults.FPReleaseLost, faults.SourceOutage)
	if !probed([]string{faults.SourceOutage}) || !probed([]string{faults.FPReleaseLost}) {
		t.Error("a run of source-outage or fp-release-lost alone is not probed")
	}
	var got []string
	for _, p := range WithStaleLeaderProbes(nil, lease, 3, kinds) {
		if p.Kind == faults.FPLateRenew || p.Kind == faults.FPReleaseLost || p.Kind == faults.SourceOutage {
			got = append(got, p.Kind)
			if !p.Aim.Leader {
				t.Errorf("%s aims at %+v, not the leader", p.Kind, p.Aim)
			}
		}
	}
	if want := []string{faults.FPLateRenew, faults.FPReleaseLost, faults.SourceOutage}; !reflect.DeepEqual(got, want) {
		t.Errorf("named probes %v, want %v", got, want)
	}
	for _, p := range WithStaleLeaderProbes(nil, lease, 3, faults.All()) {
		if p.Kind == faults.FPReleaseLost || p.Kind == faults.SourceOutage {
			t.Errorf("a run of all has %s at %v", p.Kind, p.At)
		}
	}
}
