package nemesis_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/backend/proc"
	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/nemesis"
)

// The failpoint faults reach the reference through the nodes' control endpoints and do
// what they say: a held-back renewal costs the leader its lease although its process
// runs on; a stall just after winning makes the successor's term end at once, so the
// token moves on twice; a stopped leader's held-back release still lets a standby take
// over; a leader whose link is slowed past its lease (fp-load-race) loses it to a
// standby; a killed leader whose standbys are held before their takeover
// (fp-takeover-race, takeover on disconnect) is still succeeded. Healing disarms, removes
// the latency and restarts.
func TestFailpointFaults(t *testing.T) {
	for _, kind := range []string{faults.FPLateRenew, faults.FPStallNewLeader, faults.FPLateRelease, faults.FPLoadRace, faults.FPTakeoverRace, faults.FPReleaseLost} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			c := proc.StartT(t, backend.Spec{Nodes: 3, SourceRate: 200,
				Node: backend.NodeOptions{LeaseTTL: lease, Batch: 10, TakeoverOnDisconnect: kind == faults.FPTakeoverRace}})
			old, tok := leader(t, c, 0)
			f := inject(t, c, kind, old, nemesis.Params{})
			switch kind {
			case faults.FPLateRenew:
				if !c.Running(old) {
					t.Fatalf("%s stopped running", old)
				}
				leader(t, c, tok, old)
			case faults.FPStallNewLeader:
				leader(t, c, tok+1, old)
			case faults.FPLateRelease, faults.FPTakeoverRace:
				if c.Running(old) {
					t.Fatalf("%s still running after the stop", old)
				}
				leader(t, c, tok, old)
			case faults.FPReleaseLost:
				if c.Running(old) {
					t.Fatalf("%s still running after the stop", old)
				}
				leader(t, c, tok, old)
				// The release failed before it was sent: its outcome is unknown.
				b, err := os.ReadFile(filepath.Join(c.Dir(), history.HistoryDir, old+".jsonl"))
				if err != nil {
					t.Fatal(err)
				}
				var release history.Event
				for l := range strings.Lines(string(b)) {
					var e history.Event
					if err := json.Unmarshal([]byte(l), &e); err == nil && e.Kind == history.KindRelease && e.Type != history.Invoke {
						release = e
					}
				}
				if release.Type != history.Info || !strings.Contains(release.Error, "failpoint") {
					t.Errorf("%s's release completed as %+v, want info with the failpoint's error", old, release)
				}
			case faults.FPLoadRace:
				if !c.Running(old) {
					t.Fatalf("%s stopped running", old)
				}
				leader(t, c, tok, old)
			}
			heal(t, c, f, old)
			eventually(t, electTimeout, old+" back as follower", func() bool { return role(c, old) == "follower" })
		})
	}
}

// A failpoint the node does not know is refused with the node's reason.
func TestArmUnknownFailpoint(t *testing.T) {
	c := startCluster(t, 1, false)
	err := c.ArmFailpoint(context.Background(), backend.NodeIDs(1)[0], "election/nope", "block")
	if err == nil || !strings.Contains(err.Error(), "unknown failpoint") {
		t.Fatalf("arming an unknown failpoint: %v", err)
	}
}
