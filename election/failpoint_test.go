//go:build failpoints

package election_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/internal/failpoint"
	"github.com/fenceline/fenceline/internal/redisserver"
)

func armFailpoint(t *testing.T, name, action string) {
	t.Helper()
	if _, err := failpoint.Arm(name, action); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(failpoint.DisarmAll)
}

// The election's failpoints fire where they are documented to: an error after the
// acquire ran is a lost reply (recorded unknown; the lock it took is found holding the
// instance's value, and, as a fresh elector knows no token floor, released, then won
// again), and a renewal held back past the lease makes the leader step down on its
// local deadline.
//
// The lease is 3 s, not 1 s: the steps after the lost reply must all come before the
// lock it took expires, or the release finds nothing to release (release/fail). The
// control of a mutants run failed this test at load average 30, its message not kept;
// that expiry is the one change of the steps that load alone can make.
func TestElectionFailpoints(t *testing.T) {
	srv := redisserver.New(t)
	client := newClient(t, srv.Addr())

	armFailpoint(t, failpoint.AcquireBeforeReply, "error")
	a := startNode(t, client, election.Config{InstanceID: "a", Name: "fp", LeaseTTL: 3 * time.Second}, nil)
	ta := a.term(t, wait)
	if steps := a.rec.snapshot(); !slices.Equal(steps, []string{"acquire/unknown", "acquire/fail", "release/ok", "acquire/ok"}) {
		t.Fatalf("a's steps %v, want a lost acquire reply, its lock released, then a won acquire", steps)
	}

	armFailpoint(t, failpoint.RenewBeforeSend, "sleep(4500ms)")
	end := a.end(t, wait)
	if !errors.Is(end.cause, election.ErrLeaseExpired) {
		t.Errorf("a's term %d ended by %v, want ErrLeaseExpired (its renewal was held back)", ta.Token, end.cause)
	}
}
