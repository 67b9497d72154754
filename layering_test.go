package fenceline_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// layers are the module's tiers, lowest first: a package may import packages of its own
// tier or of a lower one, never of a higher one. A package belongs to the tier of the
// longest prefix that matches its path (a prefix "x/" matches everything below x).
// Docs: README.md's layout table.
var layers = []layer{
	{"bottom helpers", []string{"internal/"}},
	{"libraries", []string{"election", "listener", "listener/", "source", "workloads/ledger"}},
	{"run format and fault names", []string{"history", "faults"}},
	{"verdicts", []string{"checker"}},
	{"rendering", []string{"reports"}},
	{"designs under test", []string{"targets", "targets/", "variants", "workloads"}},
	{"one node", []string{"node", "node/"}},
	// A program a library user copies, on the libraries; its node-protocol glue uses the
	// run format and the node's skewable clock, nothing that drives a run.
	{"examples", []string{"examples/"}},
	{"images", []string{"docker"}},
	{"backend interface and Redis topologies", []string{"backend"}},
	{"backends", []string{"backend/"}},
	{"faults and schedules", []string{"nemesis"}},
	{"one run", []string{"harness", "harness/"}},
	{"experiments", []string{"experiment/"}},
	{"commands", []string{"cmd/", "docker/cmd/"}},
}

// experiments is the tier of the experiments: no test below it may import it.
var experiments = slices.IndexFunc(layers, func(l layer) bool { return l.name == "experiments" })

type layer struct {
	name     string
	prefixes []string
}

// tier returns the index in layers of package rel (a path relative to the module), or -1.
func tier(rel string) int {
	best, bestLen := -1, -1
	for i, l := range layers {
		for _, p := range l.prefixes {
			match := rel == p || (strings.HasSuffix(p, "/") && strings.HasPrefix(rel, p))
			if match && len(p) > bestLen {
				best, bestLen = i, len(p)
			}
		}
	}
	return best
}

type listedPackage struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

// upward lists every import in pkgs that points to a higher tier, and every package of
// the module that no tier claims.
func upward(module string, pkgs []listedPackage) []string {
	var bad []string
	rel := func(p string) (string, bool) {
		r, ok := strings.CutPrefix(p, module+"/")
		return r, ok
	}
	for _, p := range pkgs {
		from, ok := rel(p.ImportPath)
		if !ok {
			continue // the module's root: this test
		}
		ft := tier(from)
		if ft < 0 {
			bad = append(bad, fmt.Sprintf("%s belongs to no tier: add it to layers", from))
			continue
		}
		for _, imp := range p.Imports {
			to, ok := rel(imp)
			if !ok {
				continue
			}
			if tt := tier(to); tt > ft {
				bad = append(bad, fmt.Sprintf("%s (%s) imports %s (%s)", from, layers[ft].name, to, layers[tt].name))
			}
		}
		// A test may drive its package through the tiers above it (a backend's
		// integration test runs a harness run on it), but never through the
		// experiments or the commands, which may change under it at will.
		for _, imp := range slices.Concat(p.TestImports, p.XTestImports) {
			to, ok := rel(imp)
			if !ok {
				continue
			}
			if tt := tier(to); tt > ft && tt >= experiments {
				bad = append(bad, fmt.Sprintf("a test of %s (%s) imports %s (%s)", from, layers[ft].name, to, layers[tt].name))
			}
		}
	}
	return bad
}

// TestLayering holds every package's imports, in every build (the default one, and the
// chaos build with the failpoints), against the tiers: nothing imports upward.
func TestLayering(t *testing.T) {
	module := strings.TrimSpace(run(t, "go", "list", "-m"))
	for _, tags := range []string{"", "chaos,failpoints"} {
		out := run(t, "go", "list", "-tags", tags, "-json=ImportPath,Imports,TestImports,XTestImports", "./...")
		var pkgs []listedPackage
		dec := json.NewDecoder(bytes.NewReader([]byte(out)))
		for dec.More() {
			var p listedPackage
			if err := dec.Decode(&p); err != nil {
				t.Fatalf("go list: %v", err)
			}
			pkgs = append(pkgs, p)
		}
		if len(pkgs) < 20 {
			t.Fatalf("go list -tags %q listed %d packages: too few to be the module", tags, len(pkgs))
		}
		for _, b := range upward(module, pkgs) {
			t.Errorf("tags %q: %s", tags, b)
		}
	}
}

// The check itself must be able to fail: an upward import and an unknown package are
// both reported.
func TestLayeringRejectsUpwardImport(t *testing.T) {
	const m = "example.com/m"
	pkgs := []listedPackage{
		{ImportPath: m + "/election", Imports: []string{m + "/internal/failpoint", "context"}},
		{ImportPath: m + "/checker", Imports: []string{m + "/history", m + "/harness"}},
		{ImportPath: m + "/internal/skewclock", Imports: []string{m + "/election"}},
		{ImportPath: m + "/misc"},
		{ImportPath: m + "/backend/proc", Imports: []string{m + "/backend"}, XTestImports: []string{m + "/harness", m + "/experiment/chaosrun"}},
	}
	got := upward(m, pkgs)
	want := []string{
		"checker (verdicts) imports harness (one run)",
		"internal/skewclock (bottom helpers) imports election (libraries)",
		"misc belongs to no tier: add it to layers",
		"a test of backend/proc (backends) imports experiment/chaosrun (experiments)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}
