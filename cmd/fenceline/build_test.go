package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/fenceline/fenceline/node/redisconn"
)

const passwordEnv = redisconn.PasswordEnv

// chaosOnlyPackages must not be in a default build of fenceline: the broken variants,
// the fault hooks, the harness and what it embeds (the toxiproxy server), the client-go
// targets, and the testing package that test helpers drag in.
var chaosOnlyPackages = []string{
	"testing",
	"github.com/fenceline/fenceline/variants",
	"github.com/fenceline/fenceline/node/skewclock",
	"github.com/fenceline/fenceline/internal/redisserver",
	"github.com/fenceline/fenceline/nemesis",
	"github.com/fenceline/fenceline/harness",
	"github.com/fenceline/fenceline/backend",
	"github.com/fenceline/fenceline/backend/container",
	"github.com/Shopify/toxiproxy/v2",
	// client-go's election on a stand-in lock, and client-go itself.
	"github.com/fenceline/fenceline/targets/clientgo",
	"k8s.io/client-go/tools/leaderelection",
}

// deps lists the packages a build of pkg with tags depends on (go list -deps).
func deps(t *testing.T, tags string, pkg string) []string {
	t.Helper()
	args := []string{"list", "-deps"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	out, err := exec.Command("go", append(args, pkg)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.Fields(string(out))
}

// The default build of the command, and of the library packages a user imports, holds
// nothing that exists only to break or probe: no variant, no fault hook, no harness, no
// toxiproxy server, no testing. The chaos build has them (so the check can fail).
func TestDefaultBuildHasNoChaosCode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, pkg := range []string{"github.com/fenceline/fenceline/cmd/fenceline",
		"github.com/fenceline/fenceline/election", "github.com/fenceline/fenceline/listener"} {
		got := deps(t, "", pkg)
		for _, bad := range chaosOnlyPackages {
			if slices.Contains(got, bad) {
				t.Errorf("the default build of %s depends on %s", pkg, bad)
			}
		}
		if slices.ContainsFunc(got, func(p string) bool { return strings.HasPrefix(p, "github.com/Shopify/toxiproxy") }) {
			t.Errorf("the default build of %s depends on toxiproxy", pkg)
		}
	}
	chaos := deps(t, "chaos", "github.com/fenceline/fenceline/cmd/fenceline")
	for _, want := range []string{"github.com/fenceline/fenceline/variants", "github.com/fenceline/fenceline/node/skewclock",
		"github.com/fenceline/fenceline/harness", "github.com/fenceline/fenceline/targets/clientgo"} {
		if !slices.Contains(chaos, want) {
			t.Errorf("the chaos build lacks %s", want)
		}
	}
}
