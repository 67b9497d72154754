//go:build chaos

package mutants

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/internal/testbin"
)

func TestMain(m *testing.M) { testbin.Main(m) }

// gremlinsBin installs gremlins (GremlinsVersion, from the module proxy) for the test.
func gremlinsBin(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "install", "github.com/go-gremlins/gremlins/cmd/gremlins@"+GremlinsVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install gremlins: %v\n%s", err, out)
	}
	return filepath.Join(dir, "gremlins")
}

// TestSampleOfThree is `make mutants MUTANTS=3` made short: the whole pipeline on three
// mutants spread over the list (generation by the Lua generator and gremlins, a copy of
// the module, the unit tests, a chaos run of 15 s by the mutant's nodes, of kills and Redis
// restarts only: the probes of every fault would add a minute), every mutant decided,
// and the control (the unmutated code, in a fourth slot) passed.
func TestSampleOfThree(t *testing.T) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), Config{Repo: repo, Out: out, Gremlins: gremlinsBin(t), Sample: 3, Seed: 1,
		Duration: 15 * time.Second, Nemesis: "kill,redis-restart", Parallel: 4, Command: "test"}, &stdout, &stderr)
	t.Logf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	b, err := os.ReadFile(filepath.Join(out, "mutants.json"))
	if err != nil {
		t.Fatal(err)
	}
	var recs []Record
	if err := json.Unmarshal(b, &recs); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("%d mutants run, want 3", len(recs))
	}
	for _, r := range recs {
		for stage, v := range map[string]string{"unit tests": r.Tests, "harness": r.Harness} {
			if v != Killed && v != Survived {
				t.Errorf("%s: %s %q (%s), want killed or survived", r.ID, stage, v, r.Detail)
			}
		}
		if r.Harness == Killed && r.Check == "" {
			t.Errorf("%s: killed by the harness, but by no check", r.ID)
		}
		// A kill by the unit tests keeps their output.
		if log := filepath.Join(out, "runs", runName(r.Mutant), "unit-tests.log"); r.Tests == Killed {
			if b, err := os.ReadFile(log); err != nil || len(b) == 0 || !strings.Contains(r.Detail, "unit-tests.log") {
				t.Errorf("%s: killed by the unit tests, but their output is not kept in %s (%v; detail %q)", r.ID, log, err, r.Detail)
			}
		}
		// A survivor's second run is the one with takeover on disconnect and the mixed
		// schedule.
		for i, dir := range r.Runs {
			b, err := os.ReadFile(filepath.Join(out, dir, "run.json"))
			if err != nil {
				t.Fatal(err)
			}
			if got := bytes.Contains(b, []byte(`"takeover_on_disconnect": true`)); got != (i == 1) {
				t.Errorf("%s: run %d (%s) takeover on disconnect %v, want %v", r.ID, i+1, dir, got, i == 1)
			}
			if got := bytes.Contains(b, []byte(`"schedule": "mixed"`)); got != (i == 1) {
				t.Errorf("%s: run %d (%s) mixed schedule %v, want %v", r.ID, i+1, dir, got, i == 1)
			}
			// A survivor of the listener's code gets a third run, of the register workload.
			if got := bytes.Contains(b, []byte(`"workload": "register"`)); got != (i == 2) {
				t.Errorf("%s: run %d (%s) of the register workload %v, want %v", r.ID, i+1, dir, got, i == 2)
			}
		}
	}
	if !strings.Contains(stdout.String(), "control (the unmutated code, beside the first mutants): unit tests passed, harness valid") {
		t.Errorf("the control did not pass")
	}
	if b, err := os.ReadFile(filepath.Join(out, progressFile)); err != nil || bytes.Count(b, []byte("\n")) != 3 {
		t.Errorf("%s: want a line for each of the 3 mutants: %v\n%s", progressFile, err, b)
	}
	if _, err := os.Stat(filepath.Join(out, "work")); !os.IsNotExist(err) {
		t.Errorf("the copies of the module are left in %s", out)
	}
	if md, err := os.ReadFile(filepath.Join(out, "mutants.md")); err != nil || !bytes.Contains(md, []byte("# Mutation score")) {
		t.Errorf("no report: %v", err)
	}
}
