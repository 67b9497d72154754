//go:build chaos

package nodecheck_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/experiment/chaosrun"
	"github.com/fenceline/fenceline/experiment/nodecheck"
	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/internal/exitcode"
	"github.com/fenceline/fenceline/internal/testbin"
	"github.com/fenceline/fenceline/workloads"
)

func TestMain(m *testing.M) { testbin.Main(m) }

// python returns a Python 3 that has redis-py: $FENCELINE_PYTHON, python3 on PATH, or
// Debian's (a pyenv shim on PATH may lack the package). It fails the test when there is
// none: the node protocol's proof is not skipped silently.
func python(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("FENCELINE_PYTHON"), "python3", "/usr/bin/python3"} {
		if p != "" && exec.Command(p, "-c", "import redis").Run() == nil {
			return p
		}
	}
	t.Fatal("no python3 with redis-py: install it with 'apt-get install -y python3-redis', or set FENCELINE_PYTHON")
	return ""
}

// nodejs returns the command that runs Node.js with Debian's node-redis: node on PATH or
// Debian's, with NODE_PATH at /usr/share/nodejs, where Debian installs node-* packages
// (Debian's own nodejs searches it, other builds do not). It fails the test when either
// is missing: the Node.js listener's proof is not skipped silently.
func nodejs(t *testing.T) string {
	t.Helper()
	const modules = "/usr/share/nodejs"
	for _, p := range []string{"node", "/usr/bin/node"} {
		bin, err := exec.LookPath(p)
		if err != nil {
			continue
		}
		probe := exec.Command(bin, "-e", "require('redis')")
		probe.Env = append(os.Environ(), "NODE_PATH="+modules)
		if probe.Run() == nil {
			return "env NODE_PATH=" + modules + " " + bin
		}
	}
	t.Fatal("no Node.js with node-redis: install them with 'apt-get install -y nodejs node-redis' (Debian's packages)")
	return ""
}

// repo is the repository's root, where the example nodes live.
func repo(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func runCheck(t *testing.T, cmd string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := nodecheck.Run(context.Background(), nodecheck.Config{Cmd: cmd, Binary: testbin.Fenceline(t),
		LeaseTTL: 2 * time.Second, Lead: 30 * time.Second, Dir: t.TempDir()}, &out, &errb)
	return code, out.String(), errb.String()
}

// The example Python node conforms: it leads, commits, records every operation whole and
// its run is valid.
func TestPythonNodeConforms(t *testing.T) {
	t.Parallel() // each runs its own Redis, toxiproxy and source on free ports
	code, out, stderr := runCheck(t, python(t)+" "+filepath.Join(repo(t), "examples", "python-node", "node.py"))
	if code != exitcode.OK || !strings.Contains(out, "\nconforms\n") || !strings.Contains(out, "the checker finds its run valid") {
		t.Fatalf("exit %d, want 0 and conforms:\n%s\n%s", code, out, stderr)
	}
}

// The example Node.js listener conforms too.
func TestNodeListenerConforms(t *testing.T) {
	t.Parallel() // each runs its own Redis, toxiproxy and source on free ports
	code, out, stderr := runCheck(t, nodejs(t)+" "+filepath.Join(repo(t), "examples", "node-listener", "listener.js"))
	if code != exitcode.OK || !strings.Contains(out, "\nconforms\n") || !strings.Contains(out, "the checker finds its run valid") {
		t.Fatalf("exit %d, want 0 and conforms:\n%s\n%s", code, out, stderr)
	}
}

// A node that never records a completion is named, with the line of each open invoke.
func TestOmittedCompletionsAreNamed(t *testing.T) {
	t.Parallel() // each runs its own Redis, toxiproxy and source on free ports
	code, out, stderr := runCheck(t, python(t)+" "+filepath.Join("testdata", "omit_completions.py"))
	if code != exitcode.Invalid || !strings.Contains(out, "line 1: acquire ") || !strings.Contains(out, "has no completion") ||
		!strings.Contains(out, "does not conform") {
		t.Fatalf("exit %d, want 1 naming the missing completions:\n%s\n%s", code, out, stderr)
	}
}

// A node that exits at once: exit 2, naming the node, what it did not do and its stderr.
func TestNodeThatExitsAtOnce(t *testing.T) {
	t.Parallel() // each runs its own Redis, toxiproxy and source on free ports
	code, _, stderr := runCheck(t, "echo cannot reach the ledger >&2; exit 3")
	for _, want := range []string{"node n1 did not write its control address", "cannot reach the ledger"} {
		if code != exitcode.Usage || !strings.Contains(stderr, want) {
			t.Errorf("exit %d, want 2 and %q in:\n%s", code, want, stderr)
		}
	}
}

// Chaos runs of the Python node: the fenced node is valid at `make chaos`'s faults
// (`--nemesis all`; it has no /failpoint, which the heals must take in their stride:
// seed 3 over 40 s ended unknown so), its --unfenced twin is caught under pauses and
// delays.
func TestPythonNodeUnderChaos(t *testing.T) {
	t.Parallel() // each runs its own Redis, toxiproxy and source on free ports
	runChaos(t, python(t)+" "+filepath.Join(repo(t), "examples", "python-node", "node.py"), fencedAndTwin)
}

// Chaos runs of the Node.js listener, as of the Python node.
func TestNodeListenerUnderChaos(t *testing.T) {
	t.Parallel() // each runs its own Redis, toxiproxy and source on free ports
	runChaos(t, nodejs(t)+" "+filepath.Join(repo(t), "examples", "node-listener", "listener.js"), fencedAndTwin)
}

// fencedAndTwin are an example node's chaos runs: the fenced node valid under every fault,
// its --unfenced twin caught under pauses and delays.
var fencedAndTwin = []chaosCase{
	{"fenced", "", nil, checker.Valid},
	{"unfenced", " --unfenced", []string{"pause", "delay"}, checker.Invalid},
}

// chaosCase is a chaos run of a node: its flag, its faults (nil: all) and the verdict it
// must get.
type chaosCase struct {
	name, flag string
	faults     []string
	want       checker.Verdict
}

// runChaos makes a 40 s chaos run of node for each case, in parallel, seed 3, and checks
// its verdict and exit code; an invalid one must fail no-stale-write.
func runChaos(t *testing.T, node string, cases []chaosCase) {
	t.Helper()
	wl, err := workloads.ByName("listener")
	if err != nil {
		t.Fatal(err)
	}
	all, err := faults.ParseList("all")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			nemeses := tc.faults
			if nemeses == nil {
				nemeses = all
			}
			s := chaosrun.Spec{Cmd: "chaos", Duration: 40 * time.Second, Nodes: 3, Nemeses: nemeses, Seed: 3,
				Workload: wl, Backend: "local", LeaseTTL: 2 * time.Second, Variant: "reference",
				NodeCmd: node + tc.flag, Out: t.TempDir(), Binary: testbin.Fenceline(t), Quiet: true}
			if err := s.Prepare(); err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			o := s.Run(context.Background(), &out, &errb)
			// The exit code too: a run that could not be completed (a heal that failed)
			// has the checker's verdict of what it recorded, and exits 3.
			if o.Result == nil || o.Result.Verdict != tc.want || o.Code != tc.want.ExitCode() {
				t.Fatalf("verdict %v (exit %d), want %s:\n%s\n%s", o.Result, o.Code, tc.want, out.String(), errb.String())
			}
			if tc.want == checker.Invalid && o.Result.Check(checker.CheckStaleWrite).Verdict != checker.Invalid {
				t.Errorf("the unfenced twin's no-stale-write is %s, want invalid", o.Result.Check(checker.CheckStaleWrite).Verdict)
			}
		})
	}
}

// goService builds examples/go-service, the library's Go service, in a chaos build (its
// clock hook and --unfenced), and returns its path.
func goService(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "go-service")
	cmd := exec.Command("go", "build", "-tags", "chaos", "-o", bin, "./examples/go-service")
	cmd.Dir = repo(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/go-service: %v\n%s", err, out)
	}
	return bin
}

// The Go service conforms: it leads, commits, records every operation whole and its run
// is valid.
func TestGoServiceConforms(t *testing.T) {
	t.Parallel() // each runs its own Redis, toxiproxy and source on free ports
	code, out, stderr := runCheck(t, goService(t))
	if code != exitcode.OK || !strings.Contains(out, "\nconforms\n") || !strings.Contains(out, "the checker finds its run valid") {
		t.Fatalf("exit %d, want 0 and conforms:\n%s\n%s", code, out, stderr)
	}
}

// Chaos runs of the Go service: valid under every fault of `make chaos` (`--nemesis all`;
// it serves the clock hook, not /failpoint), and its --unfenced twin is caught under
// pauses and delays.
func TestGoServiceUnderChaos(t *testing.T) {
	t.Parallel() // each runs its own Redis, toxiproxy and source on free ports
	runChaos(t, goService(t), fencedAndTwin)
}
