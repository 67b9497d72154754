//go:build chaos

package pgstore_test

import (
	"context"
	"testing"

	"github.com/fenceline/fenceline/listener/pgstore"
	"github.com/fenceline/fenceline/listener/storetest"
)

// Without its token condition the fence lets a stale writer through once it has the
// cursor: what the no-fence variant relies on, and what the contract must catch.
func TestFenceSeam(t *testing.T) {
	pool := newPool(t)
	ctx := context.Background()
	s, err := pgstore.NewStore(pool, pgstore.Config[storetest.Event]{Name: "seam", Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := pgstore.ReplaceInFenceForChaos(s, "nonsense", ""); err == nil {
		t.Fatal("replacing what the fence does not hold succeeded")
	}
	if err := pgstore.ReplaceInFenceForChaos(s, "token <= $2 AND ", ""); err != nil {
		t.Fatal(err)
	}
	if err := s.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, 5, 0, storetest.Events(0, 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, 4, 1, storetest.Events(1, 2)); err != nil {
		t.Fatalf("the unfenced store refused a stale token: %v", err)
	}
}
