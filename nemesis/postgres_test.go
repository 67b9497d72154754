package nemesis_test

import (
	"context"
	"testing"

	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/nemesis"
)

// The PostgreSQL faults on a cluster that runs no PostgreSQL: injecting one is an error
// that says so, healing one is a no-op (the final heal-all heals every kind).
func TestPostgresFaultsNeedPostgres(t *testing.T) {
	ctx := context.Background()
	c := struct{ nemesis.Backend }{} // none of its methods may be called
	for _, k := range faults.Postgres() {
		f, err := nemesis.ByKind(k)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Inject(ctx, c, "n1", nemesis.Params{}); err == nil {
			t.Errorf("%s injected into a cluster without PostgreSQL", k)
		}
		if _, err := f.Heal(ctx, c, "n1"); err != nil {
			t.Errorf("%s heal: %v", k, err)
		}
	}
}
