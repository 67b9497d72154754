package checker

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/fenceline/fenceline/history"
)

var update = flag.Bool("update", false, "regenerate the golden run directories under testdata/")

// expectation is testdata/<case>/expected.json.
type expectation struct {
	Note    string             `json:"note"`
	Verdict Verdict            `json:"verdict"`
	Checks  map[string]Verdict `json:"checks"`
}

func allValid() map[string]Verdict {
	m := map[string]Verdict{}
	for _, c := range AllChecks() {
		m[c] = Valid
	}
	return m
}

func with(m map[string]Verdict, kv ...any) map[string]Verdict {
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1].(Verdict)
	}
	return m
}

type goldenCase struct {
	name string
	note string
	make func() *history.Run
	want expectation
}

var cleanScript = []string{"kill", "pause", "stop", "partition", "follower-kill", "redis-restart"}

func cleanRun(seed uint64) *history.Run {
	return newSim(simConfig{Seed: seed, Ops: 400, FaultEvery: 40, Script: cleanScript}).run()
}

func goldenCases() []goldenCase {
	return []goldenCase{
		{
			name: "clean-failovers",
			note: "kill, pause, stop, partition of the leader, kill of a follower, Redis restart with persistence: all fenced",
			make: func() *history.Run { return cleanRun(1) },
			want: expectation{Verdict: Valid, Checks: allValid()},
		},
		{
			name: "stale-write",
			note: "a store with no fence: the paused leader reloads and commits with its old token after the new leader committed",
			make: func() *history.Run {
				return newSim(simConfig{Seed: 2, Ops: 200, FaultEvery: 30, NoFence: true, Script: []string{"pause"}}).run()
			},
			want: expectation{Verdict: Invalid, Checks: with(allValid(),
				CheckLinearizability, Invalid, CheckStaleWrite, Invalid)},
		},
		{
			name: "token-reissued",
			note: "Redis restarted without persistence after two failovers: the token counter and the cursor start over, token 1 is issued twice",
			make: func() *history.Run {
				r := newSim(simConfig{Seed: 3, Ops: 200, FaultEvery: 30, Script: []string{"stop", "kill", "redis-restart-volatile"}}).run()
				r.Info.Persistence = false
				return r
			},
			want: expectation{Verdict: Invalid, Checks: with(allValid(),
				CheckLinearizability, Invalid, CheckStaleWrite, Invalid, CheckUniqueTokens, Invalid,
				CheckCursorMonotonic, Invalid, CheckAudit, Unknown)},
		},
		{
			name: "lost-event",
			note: "a clean run whose sink misses one event (and its effect on the balances)",
			make: func() *history.Run {
				r := cleanRun(4)
				st := r.Store
				k := len(st.Sink) / 2
				id := st.Sink[k]
				st.Sink = slices.Delete(st.Sink, k, k+1)
				st.Balances[fmt.Sprintf("acct-%d", id%3)] -= id%7 + 1
				return r
			},
			want: expectation{Verdict: Invalid, Checks: with(allValid(), CheckExactlyOnce, Invalid)},
		},
		{
			name: "duplicated-event",
			note: "a clean run whose sink holds one event twice (and its effect twice)",
			make: func() *history.Run {
				r := cleanRun(5)
				st := r.Store
				k := len(st.Sink) / 2
				id := st.Sink[k]
				st.Sink = slices.Insert(st.Sink, k+2, id)
				st.Balances[fmt.Sprintf("acct-%d", id%3)] += id%7 + 1
				return r
			},
			want: expectation{Verdict: Invalid, Checks: with(allValid(), CheckExactlyOnce, Invalid)},
		},
		{
			name: "cursor-backwards",
			note: "a store with no cursor check: a new leader reads a lagging cursor, commits from it, and the cursor moves back",
			make: func() *history.Run {
				return newSim(simConfig{Seed: 6, Ops: 200, FaultEvery: 30, NoCursorCheck: true, Script: []string{"lagging-load"}}).run()
			},
			want: expectation{Verdict: Invalid, Checks: with(allValid(),
				CheckLinearizability, Invalid, CheckCursorMonotonic, Invalid, CheckExactlyOnce, Invalid)},
		},
		{
			name: "unknown-outcomes",
			note: "kills, partitions and Redis restarts leave commits of unknown outcome, some applied and some not; the audit resolves them",
			make: func() *history.Run {
				return newSim(simConfig{Seed: 7, Ops: 300, FaultEvery: 25, Script: []string{"kill", "partition", "redis-restart", "kill", "partition", "redis-restart"}}).run()
			},
			want: expectation{Verdict: Valid, Checks: allValid()},
		},
		{
			name: "unknown-no-store",
			note: "the same kind of run without the final store read: no audit, unknown outcomes stay unknown and are fine either way",
			make: func() *history.Run {
				r := newSim(simConfig{Seed: 7, Ops: 300, FaultEvery: 25, Script: []string{"kill", "partition", "redis-restart", "kill", "partition", "redis-restart"}}).run()
				r.Store = nil
				return r
			},
			want: expectation{Verdict: Unknown, Checks: with(allValid(),
				CheckStaleWrite, Unknown, CheckExactlyOnce, Unknown, CheckCursorMonotonic, Unknown, CheckAudit, Unknown)},
		},
		{
			name: "stale-read",
			note: "a follower's load returns an old cursor after a newer commit was acknowledged",
			make: func() *history.Run {
				r := cleanRun(8)
				evs := r.Events.All()
				var oks []int
				for i, e := range evs {
					if e.Kind == history.KindCommit && e.Type == history.OK && e.Node == "n1" {
						oks = append(oks, i)
					}
				}
				ok := evs[oks[len(oks)/2]]
				var inv history.Event
				for _, e := range evs {
					if e.ID == ok.ID && e.Type == history.Invoke {
						inv = e
					}
				}
				load := history.Event{ID: "n3-stale-read", Kind: history.KindLoad, Node: "n3", Type: history.Invoke, Time: ok.Time + 1}
				evs = append(evs, load)
				load.Type, load.Time, load.Cursor, load.Token = history.OK, ok.Time+2, inv.From, inv.Token
				evs = append(evs, load)
				history.SortByTime(evs)
				r.Events = history.Pack(evs)
				return r
			},
			want: expectation{Verdict: Invalid, Checks: with(allValid(), CheckLinearizability, Invalid, CheckCursorMonotonic, Invalid)},
		},
	}
}

// TestGolden checks every run directory under testdata against its expected.json.
// With -update it first regenerates them from goldenCases.
func TestGolden(t *testing.T) {
	if *update {
		for _, c := range goldenCases() {
			dir := filepath.Join("testdata", c.name)
			writeRun(t, c.make(), dir)
			c.want.Note = c.note
			if err := history.WriteJSON(filepath.Join(dir, "expected.json"), c.want); err != nil {
				t.Fatal(err)
			}
		}
	}
	dirs, err := filepath.Glob(filepath.Join("testdata", "*", history.RunInfoFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < len(goldenCases()) {
		t.Fatalf("found %d golden runs, want at least %d (run with -update)", len(dirs), len(goldenCases()))
	}
	for _, f := range dirs {
		dir := filepath.Dir(f)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			t.Parallel()
			var want expectation
			b, err := os.ReadFile(filepath.Join(dir, "expected.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			run, err := history.LoadRun(dir)
			if err != nil {
				t.Fatal(err)
			}
			out := t.TempDir()
			res, err := Check(context.Background(), run, Options{ExpectedBalances: testBalances, OutDir: out, PieceOps: 50})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range res.Checks {
				if w, ok := want.Checks[c.Name]; ok && c.Verdict != w {
					t.Errorf("%s: got %s, want %s: %s %q", c.Name, c.Verdict, w, c.Message, c.Offending)
				}
				if c.Verdict == Invalid && len(c.Offending) == 0 {
					t.Errorf("%s: invalid without offending operations: %s", c.Name, c.Message)
				}
				if c.Name == CheckLinearizability && c.Verdict == Invalid {
					if c.Visualization == "" {
						t.Errorf("linearizability: no visualization: %s", c.Message)
					} else if _, err := os.Stat(filepath.Join(out, c.Visualization)); err != nil {
						t.Error(err)
					}
				}
				if testing.Verbose() {
					t.Logf("%s %s: %s %q", c.Name, c.Verdict, c.Message, c.Offending)
				}
			}
			if res.Verdict != want.Verdict {
				t.Errorf("verdict %s, want %s", res.Verdict, want.Verdict)
			}
			if _, err := json.Marshal(res); err != nil {
				t.Errorf("result does not marshal: %v", err)
			}
		})
	}
}
