//go:build chaos

package targetmatrix

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/internal/exitcode"
	"github.com/fenceline/fenceline/targets"
)

func sampleTable(t *testing.T) table {
	t.Helper()
	ts, err := Pick("reference,redsync")
	if err != nil {
		t.Fatal(err)
	}
	return table{
		cfg: Config{Designs: ts, Revision: "commit abc123", Seeds: 1, Duration: time.Minute, LeaseTTL: 2 * time.Second, Nodes: 3,
			Nemeses: []string{"kill", "pause", "stop"}, Command: "fenceline targets --seeds 1"},
		recs: []Record{
			{Target: "reference", Fenced: true, Seed: 1, Verdict: checker.Valid,
				Windows: []checker.Window{{Fault: "pause", ToNewToken: 1500 * time.Millisecond}}},
			{Target: "redsync", Seed: 1, Verdict: checker.Invalid, Failed: []string{"exactly-once", "linearizability"},
				FirstCheck: "exactly-once", FirstAt: 12 * time.Second, FirstFault: "pause", Lost: 0, Duplicated: 40,
				Windows: []checker.Window{{Fault: "kill", ToNewToken: 2500 * time.Millisecond}}, LongestOverlap: 3100 * time.Millisecond,
				Injected: map[string]int{"kill": 1, "fp-load-race": 1}},
			{Target: "reference", Fenced: true, Seed: 1, Handoff: true, Verdict: checker.Valid,
				Windows: []checker.Window{{Fault: "stop", ToNewToken: 4 * time.Millisecond}}},
			{Target: "redsync", Seed: 1, Handoff: true, Verdict: checker.Valid,
				Windows: []checker.Window{{Fault: "stop", ToNewToken: 120 * time.Millisecond}}},
		},
	}
}

// The table counts each all-fault run once, attributes the first violation to its
// fault, and takes the handoff from every stop window.
func TestMarkdown(t *testing.T) {
	md := sampleTable(t).markdown()
	for _, want := range []string{
		"# Which elections keep a stale leader from writing?",
		"| reference | token (lease script) | 1 | 1 | 0 | 0 | — | — | 0 / 0 | — (0) | 4ms / 4ms (1) | 0s |",
		"| redsync | none | 1 | 0 | 1 | 0 | exactly-once (1), linearizability (1); no-stale-write: not applicable, no fence | 12s | 0 / 40 | 2.5s / 2.5s (1) | 120ms / 120ms (1) | 3.1s |",
		// The probe that ends an all-fault run has a column of its own.
		"| design | kill | stop | pause | fp-load-race |",
		"| reference | ✓ · — | ✓ · — | ✓ · 1.5s / 1.5s | ✓ · — |",
		"| redsync | ✓ · 2.5s / 2.5s | ✓ · — | ✗ 1 · — | ✓ · — |",
		"| redsync | 1 (stops only) | valid |",
		"`fenceline targets --seeds 1` on commit abc123: each design, seeds 1..1,",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("table lacks %q:\n%s", want, md)
		}
	}
}

// The header and the handoff's note name the seeds that ran.
func TestMarkdownSeeds(t *testing.T) {
	tb := sampleTable(t)
	tb.cfg.Seed, tb.cfg.Seeds = 4, 3
	md := tb.markdown()
	for _, want := range []string{"each design, seeds 4..6,"} {
		if !strings.Contains(md, want) {
			t.Errorf("table lacks %q:\n%s", want, md)
		}
	}
}

// An unfenced target found invalid is measured, not a failure; a fenced one is; a run
// that could not be checked makes the matrix unknown.
func TestExitCode(t *testing.T) {
	recs := sampleTable(t).recs
	if c := exitCode(recs); c != exitcode.OK {
		t.Errorf("exit %d, want 0", c)
	}
	unknown := append(recs, Record{Target: "redislock", Incomplete: "not run: interrupted"})
	if c := exitCode(unknown); c != exitcode.Unknown {
		t.Errorf("with an incomplete run: exit %d, want 3", c)
	}
	// An election that does not promise mutual exclusion may fail lease-exclusion; its
	// fence must hold all the same.
	noExcl := Record{Target: "client-go-fenced", Fenced: true, NoExclusion: true, Verdict: checker.Invalid, Failed: []string{"lease-exclusion"}}
	if c := exitCode(append(recs, noExcl)); c != exitcode.OK {
		t.Errorf("with client-go-fenced failing lease-exclusion only: exit %d, want 0", c)
	}
	noExcl.Failed = append(noExcl.Failed, "no-stale-write")
	if c := exitCode(append(recs, noExcl)); c != exitcode.Invalid {
		t.Errorf("with client-go-fenced failing no-stale-write: exit %d, want 1", c)
	}
	if c := exitCode(append(recs, Record{Target: "redsync-fenced", Fenced: true, Verdict: checker.Invalid, Failed: []string{"lease-exclusion"}})); c != exitcode.Invalid {
		t.Errorf("with redsync-fenced failing lease-exclusion: exit %d, want 1", c)
	}
	bad := append(unknown, Record{Target: "redislock-fenced", Fenced: true, Verdict: checker.Invalid})
	if c := exitCode(bad); c != exitcode.Invalid {
		t.Errorf("with a fenced target invalid: exit %d, want 1", c)
	}
}

func TestPick(t *testing.T) {
	all, err := Pick("all")
	if err != nil || len(all) != len(targets.Names())+len(NodePrograms) {
		t.Errorf("Pick(all) = %d designs, %v", len(all), err)
	}
	if ds, err := Pick("python-node,redsync"); err != nil || ds[0].NodeCmd == "" || ds[1].Target != "redsync" || ds[1].Fenced {
		t.Errorf("Pick(python-node,redsync) = %+v, %v", ds, err)
	}
	if _, err := Pick("redsync,zookeeper"); !errors.Is(err, ErrUnknown) {
		t.Errorf("Pick(zookeeper) = %v, want ErrUnknown", err)
	}
	if _, err := Pick(" , "); err == nil {
		t.Error("Pick of nothing: no error")
	}
}

// The doc's block is replaced in place; a page without the markers is refused before
// any run.
func TestUpdateDoc(t *testing.T) {
	path := filepath.Join(t.TempDir(), "targets.md")
	page := "# Targets\n\nintro\n\n" + docBegin + "\nold table\n" + docEnd + "\n\nafter\n"
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkDoc(path); err != nil {
		t.Fatal(err)
	}
	for range 2 { // twice: the block is replaced, not appended
		if err := updateDoc(path, "new table\n"); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(path)
	want := "# Targets\n\nintro\n\n" + docBegin + "\nnew table\n" + docEnd + "\n\nafter\n"
	if string(b) != want {
		t.Errorf("page:\n%s\nwant:\n%s", b, want)
	}
	bad := filepath.Join(t.TempDir(), "bad.md")
	_ = os.WriteFile(bad, []byte(docEnd+"\n"+docBegin+"\n"), 0o644)
	if err := checkDoc(bad); err == nil {
		t.Error("markers in the wrong order: no error")
	}
	if code := Run(t.Context(), Config{Designs: Designs()[:1], Seeds: 1, Table: "x.md", Doc: bad}, io.Discard, io.Discard); code != exitcode.Usage {
		t.Errorf("Run with a bad --doc: exit %d, want %d", code, exitcode.Usage)
	}
}
