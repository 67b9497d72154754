package nemesis

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/faults"
)

// hooklessCluster is a node in another language with neither /fault/clock nor
// /failpoint: its control endpoint refuses both.
type hooklessCluster struct{ fakeCluster }

var errNoHook = fmt.Errorf("cluster: failpoint: %w (DELETE /failpoint: 501 Not Implemented)", backend.ErrNoHook)

func (hooklessCluster) DisarmFailpoints(context.Context, string) error { return errNoHook }
func (hooklessCluster) ArmFailpoint(context.Context, string, string, string) error {
	return errNoHook
}

// A node without a fault's hook never breaks a heal: nothing was set through the hook
// it lacks. Any other refusal still does.
func TestHealSkipsMissingHooks(t *testing.T) {
	ctx := context.Background()
	c := &hooklessCluster{fakeCluster{nodes: []string{"n1", "n2"}, leader: "n1", stopped: map[string]bool{}}}
	if err := HealAll(ctx, c); err != nil {
		t.Errorf("HealAll of nodes without hooks: %v", err)
	}
	f, err := ByKind(faults.FPLateRenew)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Inject(ctx, c, "n1", Params{}); !errors.Is(err, backend.ErrNoHook) {
		t.Errorf("inject into a node without /failpoint: %v, want ErrNoHook", err)
	}
	if _, err := f.Heal(ctx, c, "n1"); err != nil {
		t.Errorf("heal of a node without /failpoint: %v", err)
	}
	refusing := &refusingCluster{fakeCluster{nodes: []string{"n1"}, leader: "n1", stopped: map[string]bool{}}}
	if err := HealAll(ctx, refusing); err == nil {
		t.Error("HealAll hid a node's refusal to disarm")
	}
}

type refusingCluster struct{ fakeCluster }

func (refusingCluster) DisarmFailpoints(context.Context, string) error {
	return errors.New("cluster: failpoint: 400 Bad Request: unknown failpoint")
}
