//go:build chaos

package mutants

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/experiment/chaosrun"
	"github.com/fenceline/fenceline/experiment/matrix"
	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/harness"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/internal/buildinfo"
	"github.com/fenceline/fenceline/internal/exitcode"
	"github.com/fenceline/fenceline/nemesis"
	"github.com/fenceline/fenceline/workloads"
)

// LuaScope lists the Lua scripts under mutation: the Go file that holds each and the
// names of the scripts in it.
var LuaScope = []struct {
	File    string
	Scripts []string
}{
	{"election/store.go", []string{"acquireScript", "renewScript", "releaseScript"}},
	{"listener/script.go", []string{"commitScript"}},
}

// GoScopes lists the Go code under mutation: the elector's deadline and step-down logic
// and the listener's stale-token handling.
var GoScopes = []GoScope{
	{"election/leadership.go", []string{"Lead", "startRenew", "release", "stepDown", "Check"}},
	{"listener/listener.go", []string{"Run"}},
	{"listener/fence.go", []string{"run", "parseCommitReply"}},
}

// Generate returns every mutant of the scope, in a stable order: the Lua ones, then the
// Go ones that gremlins (binary bin) lists, for the module at repo.
func Generate(ctx context.Context, bin, repo string) ([]Mutant, error) {
	var out []Mutant
	for _, s := range LuaScope {
		src, err := os.ReadFile(filepath.Join(repo, s.File))
		if err != nil {
			return nil, fmt.Errorf("mutants: %w", err)
		}
		ms, err := LuaScripts(s.File, src, s.Scripts...)
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	}
	ms, err := GremlinsMutants(ctx, bin, repo, GoScopes)
	if err != nil {
		return nil, err
	}
	return append(out, ms...), nil
}

// Config is one mutation run.
type Config struct {
	// Repo is the module's root, whose working tree is mutated (in copies).
	Repo string
	// Out receives the run directories, mutants.json and the report.
	Out string
	// Report is the Markdown file that receives the report. Default Out/mutants.md.
	Report string
	// Gremlins is the gremlins binary.
	Gremlins string
	// Sample, if > 0, runs that many mutants, spread evenly over the whole list.
	Sample int
	// Only, if not empty, runs only the mutants with these IDs (a whole run's survivors
	// again, after a check was added, say). Not with Sample.
	Only []string
	// List prints the IDs of the mutants Sample or Only selects, one per line, and runs
	// nothing.
	List bool
	// Seed is the first chaos run's seed; a survivor gets a second run with Seed+1, takeover
	// on disconnect and the mixed schedule (TakeoverSecond), and a survivor of the
	// listener's code a third with Seed+2 (RegisterThird). Default 1.
	Seed int64
	// Duration is each chaos run's length. Default 60 s (`make chaos`).
	Duration time.Duration
	// Nemesis is each chaos run's fault list (faults.ParseList). Default "all" (`make
	// chaos`, with the probes that open it); `make test`'s sample narrows it to save the
	// probes' minute, since it tests the pipeline, not the score.
	Nemesis string
	// Parallel is how many mutants run at once, each in a copy of its own. Default 1.
	Parallel int
	// TestTimeout bounds the unit tests of one mutant (go test -timeout): a mutant that
	// makes a test hang fails the tests, as a mutant that makes one fail does. Default
	// 4 min (the election package's tests take about a minute).
	TestTimeout time.Duration
	// TestMemory bounds the address space of one mutant's unit tests (RLIMIT_AS): a
	// mutant that makes a test loop allocating fails the tests, as one that makes a test
	// hang does, and must not starve the other runs on the machine first. Default 3 GiB:
	// the Go runtime reserves about 1 GB of address space at its start, and the election
	// package's tests use under 200 MB besides.
	TestMemory uint64
	// Equivalent maps a mutant's ID to why no history can tell it from the original
	// (equivalent.txt); such a survivor is explained.
	Equivalent map[string]string
	// Command is the command line, for the report's heading.
	Command string
	// Resume takes the mutants already decided from Out/progress.jsonl (an earlier run of
	// the same commit that was interrupted) and runs only the rest.
	Resume bool
}

// Outcomes of a stage.
const (
	Killed     = "killed"
	Survived   = "survived"
	NotViable  = "not viable" // the mutant does not compile
	Undecided  = "undecided"  // the stage could not say (a run incomplete, tests timed out)
	NotReached = "not run"    // the run was interrupted first
)

// NoProgress is the check that kills a mutant whose nodes commit nothing in the
// harness's fault-free warm-up (harness.ErrNoProgress).
const NoProgress = "no-progress"

// Unhealthy is the check that kills a mutant whose node, up and answering, reports
// itself unhealthy through the whole start (its elector's Check failing: every acquire
// refused, say), where a user's chaos run is only incomplete.
const Unhealthy = "unhealthy"

// Crash is the check that kills a mutant whose node panicked: a Go panic or fatal error
// in a node's log. The unmutated design never does on the same settings, and a run
// whose node dies at start is otherwise only incomplete (a user's node may be
// misconfigured), which would leave an index out of range undecided.
const Crash = "crash"

// StopHang is the check that kills a mutant whose node did not exit within the
// backend's grace of its SIGTERM and was killed (backend.StopTimeoutError): the
// unmutated node releases its lease and exits within a second of it (the control, every
// run of the reference), and a node that hangs in its shutdown leaves its lock to expire
// and its supervisor to kill it. A user's chaos run is only incomplete then.
const StopHang = "stop-hang"

// crashed reports whether a node's log in the run directory dir holds a Go panic or a
// fatal error of the runtime.
func crashed(dir string) bool {
	logs, _ := filepath.Glob(filepath.Join(dir, "logs", "n*.log"))
	for _, f := range logs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, mark := range []string{"panic: ", "fatal error: "} {
			if bytes.HasPrefix(b, []byte(mark)) || bytes.Contains(b, []byte("\n"+mark)) {
				return true
			}
		}
	}
	return false
}

// Record is what came of one mutant.
type Record struct {
	Mutant
	// Tests is the outcome of the package's unit tests; Harness that of the chaos runs.
	Tests   string `json:"tests"`
	Harness string `json:"harness"`
	// Check, At and Seed say which check of which run killed it, and when (from the
	// run's start; -1 when the check does not time its violations).
	Check string        `json:"check,omitempty"`
	At    time.Duration `json:"at_ns,omitempty"`
	Seed  int64         `json:"seed,omitempty"`
	// Runs are the run directories, relative to Out.
	Runs []string `json:"runs,omitempty"`
	// Detail says why a stage is undecided or not viable.
	Detail string `json:"detail,omitempty"`
	// Equivalent is the argument that the mutant is equivalent, for a survivor.
	Equivalent string `json:"equivalent,omitempty"`
	// Contradicted is that argument, for a mutant the harness killed all the same: a
	// false alarm of a check, or a wrong argument. Either must be looked into.
	Contradicted string `json:"contradicted,omitempty"`
	// Took is the mutant's wall time: its build and both stages.
	Took time.Duration `json:"took_ns,omitempty"`
}

// control is the unmutated code, run through both stages like a mutant, first, beside
// the first mutants: the harness must find it valid and the unit tests pass at the
// load of the run's own parallelism, or every kill of the run may be a false alarm.
var control = Mutant{ID: "control", File: "election/leadership.go", Package: "./election", Operator: "none"}

// Run generates the mutants, runs them, writes Out/mutants.json and the report, and
// prints the summary to stdout and progress to stderr. It returns 0 when every mutant
// was decided and every survivor is explained as equivalent, 1 when a survivor is not,
// 3 when a mutant could not be decided (or ctx ended first), 2 for bad settings.
func Run(ctx context.Context, cfg Config, stdout, stderr io.Writer) int {
	cfg.Seed = max(cfg.Seed, 1)
	cfg.Duration = cmp.Or(cfg.Duration, 60*time.Second)
	cfg.Parallel = max(cfg.Parallel, 1)
	cfg.TestTimeout = cmp.Or(cfg.TestTimeout, 4*time.Minute)
	cfg.TestMemory = cmp.Or(cfg.TestMemory, 3<<30)
	if cfg.Repo == "" || cfg.Out == "" || cfg.Gremlins == "" || cfg.Sample < 0 || (cfg.Sample > 0 && len(cfg.Only) > 0) {
		fmt.Fprintln(stderr, "fenceline mutants: need --repo, --out, --gremlins and --sample >= 0, and not both --sample and --only")
		return exitcode.Usage
	}
	if _, err := exec.LookPath(cfg.Gremlins); err != nil {
		fmt.Fprintf(stderr, "fenceline mutants: --gremlins %s: %v (make mutants installs gremlins %s into bin/)\n", cfg.Gremlins, err, GremlinsVersion)
		return exitcode.Usage
	}
	out, err := filepath.Abs(cfg.Out)
	if err == nil && !cfg.List {
		err = os.MkdirAll(out, 0o755)
	}
	if err != nil {
		fmt.Fprintf(stderr, "fenceline mutants: %v\n", err)
		return exitcode.Usage
	}
	cfg.Report = cmp.Or(cfg.Report, filepath.Join(out, "mutants.md"))
	began := time.Now()
	fmt.Fprintln(stderr, "fenceline mutants: generating (the Lua generator, gremlins' dry run)")
	all, err := Generate(ctx, cfg.Gremlins, cfg.Repo)
	if err != nil {
		fmt.Fprintf(stderr, "fenceline mutants: %v\n", err)
		return exitcode.Usage
	}
	if unknown := unknownEquivalents(all, cfg.Equivalent); len(unknown) > 0 {
		fmt.Fprintf(stderr, "fenceline mutants: equivalent.txt names mutants that are not generated (the code moved?): %s\n", strings.Join(unknown, ", "))
		return exitcode.Usage
	}
	ms := sample(all, cfg.Sample)
	if len(cfg.Only) > 0 {
		if ms, err = only(all, cfg.Only); err != nil {
			fmt.Fprintf(stderr, "fenceline mutants: --only: %v\n", err)
			return exitcode.Usage
		}
	}
	if cfg.List {
		for _, m := range ms {
			fmt.Fprintln(stdout, m.ID)
		}
		return exitcode.OK
	}
	judge := buildinfo.Read().Commit()
	recs := make([]Record, len(ms))
	for i, m := range ms {
		recs[i] = Record{Mutant: m, Tests: NotReached, Harness: NotReached}
	}
	code, err := codeDigest(cfg.Repo)
	if err != nil {
		fmt.Fprintf(stderr, "fenceline mutants: %v\n", err)
		return exitcode.Usage
	}
	mutated := repoCommit(ctx, cfg.Repo)
	progress, resumed, err := openProgress(filepath.Join(out, progressFile), code, cfg.Resume)
	if err != nil {
		fmt.Fprintf(stderr, "fenceline mutants: %v\n", err)
		return exitcode.Usage
	}
	defer progress.Close()
	var todo []int
	for i, m := range ms {
		if r, ok := resumed[m.ID]; ok && r.Mutant == m {
			// The arguments may have been written since.
			r.Equivalent, r.Contradicted = "", ""
			r.argued(cfg.Equivalent[r.ID])
			recs[i] = r
			continue
		}
		todo = append(todo, i)
	}
	if cfg.Resume {
		fmt.Fprintf(stderr, "fenceline mutants: %d of %d taken from %s, %d to run\n", len(ms)-len(todo), len(ms), progressFile, len(todo))
	}
	fmt.Fprintln(stderr, "fenceline mutants: building the unmutated code once, for the build cache")
	if err := warmCache(ctx, cfg.Repo, filepath.Join(out, "work", "warm"), ms); err != nil {
		fmt.Fprintf(stderr, "fenceline mutants: %v\n", err)
		return exitcode.Unknown
	}
	ctl := Record{Mutant: control, Tests: NotReached, Harness: NotReached}
	next := make(chan int) // an index of ms, or -1 for the control
	var wg sync.WaitGroup
	var mu sync.Mutex
	for w := range cfg.Parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			copyDir := filepath.Join(out, "work", fmt.Sprintf("copy%d", w))
			if err := copyTree(cfg.Repo, copyDir); err != nil {
				fmt.Fprintf(stderr, "fenceline mutants: %v\n", err)
				for range next {
				}
				return
			}
			defer os.RemoveAll(copyDir)
			for i := range next {
				if i < 0 {
					r := runMutant(ctx, cfg, out, copyDir, control)
					mu.Lock()
					ctl = r
					fmt.Fprintf(stderr, "fenceline mutants: %s\n", report{cfg: cfg, control: r}.controlText())
					mu.Unlock()
					continue
				}
				r := runMutant(ctx, cfg, out, copyDir, ms[i])
				r.argued(cfg.Equivalent[r.ID])
				mu.Lock()
				recs[i] = r
				fmt.Fprintf(stderr, "fenceline mutants: [%d/%d] %s: %s\n", i+1, len(ms), r.ID, r.line())
				if err := progress.add(r); err != nil {
					fmt.Fprintf(stderr, "fenceline mutants: %v\n", err)
				}
				mu.Unlock()
			}
		}()
	}
	for _, i := range append([]int{-1}, todo...) {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	os.RemoveAll(filepath.Join(out, "work"))

	rep := report{cfg: cfg, total: len(all), recs: recs, control: ctl, resumed: len(ms) - len(todo),
		began: began, elapsed: time.Since(began), mutated: mutated, code: code, judge: judge}
	md := rep.markdown()
	fmt.Fprint(stdout, rep.summaryText())
	if err := os.WriteFile(cfg.Report, []byte(md), 0o644); err != nil {
		fmt.Fprintf(stderr, "fenceline mutants: %v\n", err)
		return exitcode.Unknown
	}
	if err := history.WriteJSON(filepath.Join(out, "mutants.json"), recs); err != nil {
		fmt.Fprintf(stderr, "fenceline mutants: %v\n", err)
		return exitcode.Unknown
	}
	fmt.Fprintf(stdout, "report: %s\n", cfg.Report)
	return rep.exitCode()
}

// sample returns n mutants spread evenly over ms (all of them when n is 0 or too big).
func sample(ms []Mutant, n int) []Mutant {
	if n <= 0 || n >= len(ms) {
		return ms
	}
	out := make([]Mutant, n)
	for i := range n {
		out[i] = ms[i*len(ms)/n]
	}
	return out
}

// only returns the mutants of ms with the given IDs, in the order of ms, or an error
// naming the IDs that no mutant has.
func only(ms []Mutant, ids []string) ([]Mutant, error) {
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var out []Mutant
	for _, m := range ms {
		if want[m.ID] {
			out = append(out, m)
			delete(want, m.ID)
		}
	}
	if len(want) > 0 {
		return nil, fmt.Errorf("no mutant has the ID %s", strings.Join(slices.Sorted(maps.Keys(want)), ", "))
	}
	return out, nil
}

// unknownEquivalents lists the IDs of eq that no generated mutant has.
func unknownEquivalents(ms []Mutant, eq map[string]string) []string {
	ids := map[string]bool{}
	for _, m := range ms {
		ids[m.ID] = true
	}
	var out []string
	for id := range eq {
		if !ids[id] {
			out = append(out, id)
		}
	}
	return out
}

// argued takes equivalent.txt's argument for r ("" if none): a survivor's is its
// explanation, a killed mutant's a contradiction.
func (r *Record) argued(why string) {
	switch {
	case why == "":
	case r.Harness == Survived:
		r.Equivalent = why
	case r.Harness == Killed:
		r.Contradicted = why
	}
}

// runMutant applies m in copyDir, runs its two stages (the unit tests, and the chaos
// runs of stagesOf) and restores the file.
func runMutant(ctx context.Context, cfg Config, out, copyDir string, m Mutant) (r Record) {
	began := time.Now()
	r = Record{Mutant: m, Tests: NotReached, Harness: NotReached}
	defer func() { r.Took = time.Since(began) }()
	path := filepath.Join(copyDir, m.File)
	orig, err := os.ReadFile(path)
	if err == nil {
		var mutated []byte
		if mutated, err = m.Apply(orig); err == nil {
			err = os.WriteFile(path, mutated, 0o644)
		}
	}
	if err != nil {
		r.Tests, r.Harness, r.Detail = Undecided, Undecided, err.Error()
		return r
	}
	defer os.WriteFile(path, orig, 0o644) //nolint:errcheck // the copy is rewritten whole at the next start

	bin := filepath.Join(copyDir, "bin", "fenceline-chaos")
	if b, err := buildChaos(ctx, copyDir, bin); err != nil {
		if ctx.Err() != nil {
			return r
		}
		r.Tests, r.Harness, r.Detail = NotViable, NotViable, tail(b, 300)
		return r
	}
	// The unit tests and the harness at once: the tests mostly wait on timers.
	testDone := make(chan struct{})
	var tests, testDetail string
	var testOutput []byte
	go func() {
		defer close(testDone)
		tests, testDetail, testOutput = unitTests(ctx, cfg, copyDir, m.Package)
	}()
	for i, st := range stagesOf(m) {
		seed := cfg.Seed + int64(i)
		v, check, at, dir, why := chaosStage(ctx, cfg, out, m, bin, seed, st)
		if dir != "" {
			if rel, err := filepath.Rel(out, dir); err == nil {
				dir = rel
			}
			r.Runs = append(r.Runs, dir)
		}
		r.Harness = v
		if v == Killed {
			r.Check, r.At, r.Seed = check, at, seed
		}
		if v != Survived {
			if why != "" {
				r.Detail = "harness: " + why
			}
			break
		}
	}
	<-testDone
	r.Tests = tests
	if tests == Killed && len(testOutput) > 0 {
		// Kept whole: a failing test's message is what tells a kill from a flaky test
		// (the control's above all).
		log := filepath.Join(out, "runs", runName(m), "unit-tests.log")
		if err := os.MkdirAll(filepath.Dir(log), 0o755); err == nil && os.WriteFile(log, testOutput, 0o644) == nil {
			testDetail += " (output: " + filepath.Join("runs", runName(m), "unit-tests.log") + ")"
		}
	}
	if testDetail != "" {
		r.Detail = strings.TrimPrefix(r.Detail+"; "+testDetail, "; ")
	}
	return r
}

// buildChaos builds the chaos binary of the module at dir into bin, and buildTests the
// test binary of its package pkg. Both use -trimpath, as make build does: without it the
// compiler's cache keys hold the source directory, so each worker's copy compiled every
// package of the module anew at its first mutant, eight cold builds at once (about five
// CPU-minutes each) in the first twenty minutes of a run on two cores.
func buildChaos(ctx context.Context, dir, bin string) ([]byte, error) {
	return goBuild(ctx, dir, []string{"CGO_ENABLED=0"}, "build", "-trimpath", "-tags", "chaos,failpoints", "-o", bin, "./cmd/fenceline")
}

func buildTests(ctx context.Context, dir, pkg, bin string) ([]byte, error) {
	// -vet=off: the stage is the unit tests; vet's pass over each mutant cost CPU the
	// chaos runs beside it want, and a vet complaint is no failed test.
	return goBuild(ctx, dir, nil, "test", "-c", "-trimpath", "-vet=off", "-tags", "chaos,failpoints", "-o", bin, pkg)
}

func goBuild(ctx context.Context, dir string, env []string, args ...string) ([]byte, error) {
	c := exec.CommandContext(ctx, "go", args...)
	c.Dir, c.Env = dir, append(append(os.Environ(), "GOFLAGS=-buildvcs=false"), env...)
	return c.CombinedOutput()
}

// warmCache builds, once and before the workers start, what every mutant's builds share
// (the chaos binary and the test binaries of the packages under mutation, unmutated), so
// that a mutant compiles only its own package and those that import it.
func warmCache(ctx context.Context, repo, dir string, ms []Mutant) error {
	if b, err := buildChaos(ctx, repo, filepath.Join(dir, "fenceline-chaos")); err != nil {
		return fmt.Errorf("mutants: the unmutated code does not build: %s", tail(b, 300))
	}
	built := map[string]bool{}
	for _, m := range append([]Mutant{control}, ms...) {
		if built[m.Package] {
			continue
		}
		built[m.Package] = true
		if b, err := buildTests(ctx, repo, m.Package, filepath.Join(dir, "unit.test")); err != nil {
			return fmt.Errorf("mutants: the unit tests of %s do not build: %s", m.Package, tail(b, 300))
		}
	}
	return nil
}

// unitTests runs the unit tests of pkg in copyDir. The test binary is built first and
// then run, so that only the run is timed: eight mutants building at once on two cores
// took more than a minute to compile the election tests, and a backstop that counted it
// left mutants undecided whose tests had hung for the whole -timeout.
func unitTests(ctx context.Context, cfg Config, copyDir, pkg string) (outcome, detail string, output []byte) {
	bin := filepath.Join(copyDir, "bin", "unit.test")
	if b, err := buildTests(ctx, copyDir, pkg, bin); err != nil {
		if ctx.Err() != nil {
			return NotReached, "", nil
		}
		return Killed, "unit tests do not compile: " + tail(b, 200), b
	}
	// A backstop past the binary's own timeout (it panics then), for one that does not exit.
	tctx, cancel := context.WithTimeout(ctx, cfg.TestTimeout+time.Minute)
	defer cancel()
	t := exec.CommandContext(tctx, bin, "-test.count=1", "-test.timeout="+cfg.TestTimeout.String())
	t.Dir = filepath.Join(copyDir, pkg) // where go test runs a package's tests
	var out bytes.Buffer
	t.Stdout, t.Stderr = &out, &out
	err := t.Start()
	if err == nil {
		// Bounded at once, before the tests allocate much: two mutants of Lead whose
		// tests looped allocating grew to 11 GB each on this 24 GB machine, and every
		// other run there stalled for minutes (nodes 13 minutes past their deadlines).
		limit := unix.Rlimit{Cur: cfg.TestMemory, Max: cfg.TestMemory}
		if err = unix.Prlimit(t.Process.Pid, unix.RLIMIT_AS, &limit, nil); err != nil {
			_ = t.Process.Kill()
			_ = t.Wait()
			return Undecided, "unit tests: cannot bound their memory: " + err.Error(), nil
		}
		err = t.Wait()
	}
	output = out.Bytes()
	switch {
	case err == nil:
		return Survived, "", nil
	case ctx.Err() != nil:
		return NotReached, "", nil
	case tctx.Err() != nil:
		return Undecided, fmt.Sprintf("unit tests: the test binary did not exit within %v", cfg.TestTimeout+time.Minute), output
	}
	return Killed, failedTests(output), output
}

// failedTests names the tests that failed in go test's output ("unit tests: TestA,
// TestB"), or says it panicked (its timeout), so that a kill can be checked.
func failedTests(output []byte) string {
	var names []string
	for line := range strings.Lines(string(output)) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "--- FAIL: "); ok {
			name, _, _ := strings.Cut(rest, " ")
			names = append(names, name)
		}
	}
	switch {
	case len(names) > 0:
		return "unit tests: " + strings.Join(names, ", ")
	case bytes.Contains(output, []byte("panic: test timed out")):
		return "unit tests: timed out"
	case bytes.Contains(output, []byte("out of memory")):
		return "unit tests: out of memory (their address space is bounded)"
	}
	return "unit tests: " + tail(output, 120)
}

// TakeoverSecond says what a survivor's second run adds to the first.
//
//   - The nodes' --takeover-on-disconnect. A default run never sends the acquire script
//     a presence channel or a holder to take the lock from, so a mutant of that branch
//     (a fifth of the Lua's) survives every default run, and a history of a run with the
//     option can still tell it apart.
//   - The mixed schedule (nemesis.ScheduleMixed): the same faults at the same times, half
//     of the node faults aimed at a moment (a renewal or a release about to be sent, a
//     grant just won). A random schedule almost never pauses a leader between its
//     decision to renew and the send, so a renewal that extends another holder's lock,
//     or a release whose error is recorded as a refusal, survives it; the aimed fault
//     makes that history.
//   - A late renewal (faults.FPLateRenew, a probe once named): the leader's renewal held
//     past its lease, sent once a standby holds the lock. A renewal script that extends
//     whoever holds the lock answers it as granted, which lease-grant judges; without the
//     probe only an aimed pause at a renewal made that history, in some runs and not in
//     others.
//   - A presence lost (faults.PresenceLoss, a probe of a run with takeover on
//     disconnect): the leader lives and reaches Redis without its presence, a standby
//     takes over, and its next renewal is refused; as a follower its acquires are refused
//     as not present. No other run refuses a live leader's renewal, or answers an acquire
//     so.
//   - A presence back before the takeover (faults.PresenceFlap, a probe of a run with
//     takeover on disconnect): every standby's poll sees the leader's presence gone,
//     and the presence is back, unbroken, before their stalled takeover scripts run. A
//     script that takes the lock without counting the holder's subscriber in the same
//     step takes a live, present leader's lease, which lease-grant judges; no other run
//     brings a presence back between a poll and its script.
//   - A lost release (faults.FPReleaseLost, a probe once named): the leader stopped, its
//     release failing before it is sent. The node must record an unknown outcome; one
//     that records Redis's refusal claims a refusal while its lease still ran, which
//     lease-grant judges. No other run loses a release request.
//   - A source outage (faults.SourceOutage, a probe once named): every fetch of the
//     leader fails for a lease. Its term must go on; a listener that gives it up at a
//     failed fetch is judged by step-down. No other run fails a fetch.
//
// Its probes (a kill of the leader, the presence lost and fp-takeover-race first, then
// the default run's, then the named ones) come before the seed's own schedule, as in
// every run: they take about 84 s, and the schedule its minute after them.
const TakeoverSecond = "takeover on disconnect, the mixed schedule, a late renewal, a presence lost, a lost release and a source outage"

// RegisterThird says what the third run of a survivor of the listener's code (the commit
// script, listener.Run, the fence's Go side) is, and why.
//
// The listener workload's leader only ever commits: it moves the cursor with every
// fenced write. The fence's other branch — a write that moves no cursor, which the
// library's RedisFence.Write and Eval send, and a body that fails after the check —
// no default run reaches, so a mutant of it (a write told cursor-conflict, a write's
// token not recorded, a failed body's token not recorded) survives every run of it.
// The register workload's clients send those writes among their loads and commits,
// with tokens of their own, concurrently; linearizability and no-stale-write judge them.
const RegisterThird = "the register workload, whose clients also send writes that move no cursor and bodies, some failing"

// stage is one chaos run of a mutant's harness stage.
type stage int

const (
	stageDefault  stage = iota // what `make chaos` runs
	stageTakeover              // TakeoverSecond
	stageRegister              // RegisterThird
)

// stagesOf lists the chaos runs m gets, in order, each run only if the ones before it
// survived: every mutant the default run and TakeoverSecond; a mutant of the listener's
// code, and the control, RegisterThird too.
func stagesOf(m Mutant) []stage {
	if m.Package == "./listener" || m.ID == control.ID {
		return []stage{stageDefault, stageTakeover, stageRegister}
	}
	return []stage{stageDefault, stageTakeover}
}

// chaosStage runs one chaos run of the mutant's binary with seed: what `make chaos` runs
// (all faults, random schedule, 3 nodes, lease 2 s), with what st adds, judged by this
// binary's unmutated harness and checker, ended at its first violation
// (--stop-at-violation).
func chaosStage(ctx context.Context, cfg Config, out string, m Mutant, bin string, seed int64, st stage) (verdict, check string, at time.Duration, dir, why string) {
	workload := "listener"
	if st == stageRegister {
		workload = "register"
	}
	wl, err := workloads.ByName(workload)
	if err != nil {
		return Undecided, "", 0, "", err.Error()
	}
	kinds, err := faults.ParseList(cmp.Or(cfg.Nemesis, "all"))
	if err != nil {
		return Undecided, "", 0, "", err.Error()
	}
	s := chaosrun.Spec{Cmd: "mutants", Duration: cfg.Duration, Nodes: 3, Nemeses: kinds, Workload: wl, Backend: "local",
		LeaseTTL: 2 * time.Second, Variant: "reference", Binary: bin, Quiet: true, StopAtViolation: true, Takeover: st == stageTakeover}
	if st == stageTakeover {
		s.Schedule = nemesis.ScheduleMixed
		s.Nemeses = slices.Clone(kinds)
		for _, k := range []string{faults.FPLateRenew, faults.FPReleaseLost, faults.SourceOutage} {
			if !slices.Contains(s.Nemeses, k) {
				s.Nemeses = append(s.Nemeses, k)
			}
		}
	}
	if err := s.Prepare(); err != nil {
		return Undecided, "", 0, "", err.Error()
	}
	d := matrix.Driver{Cmd: "mutants", Out: out}
	res, err := d.Execute(ctx, []matrix.Run{{Row: matrix.Row{Name: runName(m), Spec: s}, Seed: seed}})
	if err != nil {
		return Undecided, "", 0, "", err.Error()
	}
	dir = res[0].Outcome.Dir
	verdict, check, at, why = stageOutcome(ctx, res[0])
	return verdict, check, at, dir, why
}

// runName is the directory of m's runs under the output's runs/ (matrix.Driver's layout).
func runName(m Mutant) string {
	return strings.NewReplacer("/", "_", ":", "_", "+", "_", "#", "_").Replace(m.ID)
}

// stageOutcome says what one chaos run r of a mutant came to: killed (by which check,
// when), survived, undecided (why), or not run when ctx, the whole run's, ended first.
func stageOutcome(ctx context.Context, r matrix.Result) (verdict, check string, at time.Duration, why string) {
	dir := r.Outcome.Dir
	if r.NotRun || (ctx.Err() != nil && r.Verdict() != checker.Invalid) {
		// Not started, or cut by the interrupt: no answer of the mutant's own. A
		// violation found before the cut still kills it.
		return NotReached, "", 0, ""
	}
	if errors.Is(r.Outcome.RunErr, harness.ErrNoProgress) {
		// The unmutated design commits within a second of its start on these settings
		// (every run of the reference, TestSampleOfThree's control): a mutant that
		// commits nothing in 30 s without a fault broke liveness. Untimed: the chaos
		// phase never began.
		return Killed, NoProgress, -1, ""
	}
	if unhealthy := (*backend.UnhealthyError)(nil); errors.As(r.Outcome.RunErr, &unhealthy) {
		// A node up and answering, but unhealthy for the whole start (15 s): the
		// unmutated design's nodes answer 200 within a second (the control), so the
		// mutant broke liveness, as NoProgress says. Untimed: no chaos phase.
		return Killed, Unhealthy, -1, ""
	}
	if r.Verdict() != checker.Invalid && dir != "" && crashed(dir) {
		return Killed, Crash, -1, ""
	}
	if hung := (*backend.StopTimeoutError)(nil); r.Verdict() != checker.Invalid && errors.As(r.Outcome.RunErr, &hung) {
		return Killed, StopHang, -1, ""
	}
	switch r.Verdict() {
	case checker.Invalid:
		v, at, _ := r.FirstViolation()
		if c := r.FailedChecks(); v.Check == "" && len(c) > 0 {
			v.Check = c[0]
		}
		return Killed, v.Check, at, ""
	case checker.Valid:
		if inc := r.Incomplete(); inc != "" {
			return Undecided, "", 0, firstLine(inc)
		}
		return Survived, "", 0, ""
	}
	why = firstLine(r.Incomplete())
	if rs, err := r.Results(); why == "" && err == nil && rs.Run.StoppedAtViolation != "" {
		why = "stopped at a violation the complete check did not confirm: " + rs.Run.StoppedAtViolation
	}
	return Undecided, "", 0, cmp.Or(why, "no verdict")
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// repoCommit names the commit checked out at repo, "(modified)" when its tracked files
// differ from it: the code that is mutated, which need not be the code of this binary
// (the judge). Untracked files are in the copies too, and only the code digest covers
// them.
func repoCommit(ctx context.Context, repo string) string {
	git := func(args ...string) (string, error) {
		c := exec.CommandContext(ctx, "git", args...)
		c.Dir = repo
		b, err := c.Output()
		return strings.TrimSpace(string(b)), err
	}
	rev, err := git("rev-parse", "--short=7", "HEAD")
	if err != nil || rev == "" {
		return "an unknown commit"
	}
	s := "commit " + rev
	if st, err := git("status", "--porcelain", "--untracked-files=no"); err != nil || st != "" {
		s += " (modified)"
	}
	return s
}

// moduleFiles lists the module at repo's tracked and untracked, not ignored, files.
func moduleFiles(repo string) ([]string, error) {
	ls := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	ls.Dir = repo
	b, err := ls.Output()
	if err != nil {
		return nil, fmt.Errorf("mutants: git ls-files in %s: %w", repo, err)
	}
	var out []string
	for _, f := range strings.Split(strings.TrimRight(string(b), "\x00"), "\x00") {
		if f != "" {
			out = append(out, f)
		}
	}
	return out, nil
}

// copyTree copies the module at repo (moduleFiles) into dst.
func copyTree(repo, dst string) error {
	files, err := moduleFiles(repo)
	if err != nil {
		return err
	}
	for _, f := range files {
		src := filepath.Join(repo, f)
		st, err := os.Lstat(src)
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the working tree
		}
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		data, err := os.ReadFile(src)
		if err != nil {
			return fmt.Errorf("mutants: %w", err)
		}
		to := filepath.Join(dst, f)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return fmt.Errorf("mutants: %w", err)
		}
		if err := os.WriteFile(to, data, st.Mode().Perm()); err != nil {
			return fmt.Errorf("mutants: %w", err)
		}
	}
	return nil
}
