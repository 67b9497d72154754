//go:build chaos

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The CI recipe (examples/ci/github-actions.yml, docs/ci.md) names only what exists:
// every make target and make variable its steps use is the Makefile's, and every
// fenceline command and flag is this binary's. A renamed flag fails here, not in a
// user's CI.
func TestCIRecipe(t *testing.T) {
	root := filepath.Join("..", "..")
	b, err := os.ReadFile(filepath.Join(root, "examples", "ci", "github-actions.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Jobs map[string]struct {
			Steps []struct {
				Run string `yaml:"run"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(b, &wf); err != nil {
		t.Fatalf("the workflow is not YAML: %v", err)
	}
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	makefile := string(mk)
	var runs []string
	for name, job := range wf.Jobs {
		for _, s := range job.Steps {
			for line := range strings.SplitSeq(s.Run, "\n") {
				if line = strings.TrimSpace(line); line != "" {
					runs = append(runs, line)
					t.Logf("%s: %s", name, line)
				}
			}
		}
	}
	if len(runs) < 4 {
		t.Fatalf("%d run lines in the workflow: it was not read", len(runs))
	}
	used := map[string]bool{}
	expr := regexp.MustCompile(`\$\{\{[^}]*\}\}`) // ${{ matrix.shard }}: a value, not words
	for _, line := range runs {
		line = expr.ReplaceAllString(line, "X")
		for cmd := range strings.SplitSeq(line, "&&") {
			f := strings.Fields(cmd)
			switch {
			case len(f) == 0:
			case f[0] == "make":
				checkMake(t, makefile, f[1:])
				used["make"] = true
			case strings.HasSuffix(f[0], "fenceline-chaos") || strings.HasSuffix(f[0], "/fenceline"):
				checkCommand(t, f[1:])
				used["fenceline"] = true
			}
		}
	}
	if !used["make"] || !used["fenceline"] {
		t.Errorf("the workflow uses make %v and a fenceline command %v: the test would check nothing", used["make"], used["fenceline"])
	}
}

// checkMake holds `make ARGS` to the Makefile: each target has a rule, each VAR=value
// is a variable the Makefile reads.
func checkMake(t *testing.T, makefile string, args []string) {
	t.Helper()
	for _, a := range args {
		if name, _, ok := strings.Cut(a, "="); ok {
			if !strings.Contains(makefile, "$("+name+")") && !strings.Contains(makefile, ","+name+")") {
				t.Errorf("make %s: the Makefile does not read %s", a, name)
			}
			continue
		}
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(a) + `:`).MatchString(makefile) {
			t.Errorf("make %s: no such target in the Makefile", a)
		}
	}
}

// checkCommand holds `fenceline CMD --flag ...` to the command's -h.
func checkCommand(t *testing.T, args []string) {
	t.Helper()
	if len(args) == 0 {
		t.Error("a fenceline command line without a command")
		return
	}
	code, _, help := runCmd(args[0], "-h")
	if code != exitOK {
		t.Errorf("fenceline %s -h: exit %d: no such command?\n%s", args[0], code, help)
		return
	}
	for _, a := range args[1:] {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.Contains(help, "\n  -"+name+" ") && !strings.Contains(help, "\n  -"+name+"\n") {
			t.Errorf("fenceline %s has no flag %s", args[0], a)
		}
	}
}
