//go:build chaos

package targetmatrix

import (
	"errors"
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
		cfg: Config{Targets: ts, Seeds: 1, Duration: time.Minute, LeaseTTL: 2 * time.Second, Nodes: 3,
			Nemeses: []string{"pause", "stop"}, Command: "fenceline targets --seeds 1"},
		recs: []Record{
			{Target: "reference", Fenced: true, Seed: 1, Verdict: checker.Valid,
				Windows: []checker.Window{{Fault: "pause", ToNewToken: 1500 * time.Millisecond}}},
			{Target: "redsync", Seed: 1, Verdict: checker.Invalid, Failed: []string{"exactly-once", "linearizability"},
				FirstCheck: "exactly-once", FirstAt: 12 * time.Second, FirstFault: "pause", Lost: 0, Duplicated: 40},
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
		"| reference | token (lease script) | 1 | 1 | 0 | 0 | — | 0 / 0 | — |",
		"| redsync | none | 1 | 0 | 1 | 0 | exactly-once (1), linearizability (1) | 0 / 40 | 12s |",
		"| reference | ✓ · — | ✓ · 1.5s / 1.5s |",
		"| redsync | ✓ · — | ✗ 1 · — |",
		"| reference | 1 | 4ms | 4ms | 4ms |",
		"| redsync | 1 | 120ms | 120ms | 120ms |",
		"| redsync | 1 (stops only) | valid |",
		"`fenceline targets --seeds 1`: each target, seeds 1..1,",
		"with stops only (seed 1)",
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
	for _, want := range []string{"each target, seeds 4..6,", "with stops only (seed 4)"} {
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
	bad := append(unknown, Record{Target: "redislock-fenced", Fenced: true, Verdict: checker.Invalid})
	if c := exitCode(bad); c != exitcode.Invalid {
		t.Errorf("with a fenced target invalid: exit %d, want 1", c)
	}
}

func TestPick(t *testing.T) {
	all, err := Pick("all")
	if err != nil || len(all) != len(targets.Names()) {
		t.Errorf("Pick(all) = %d targets, %v", len(all), err)
	}
	if _, err := Pick("redsync,etcd"); !errors.Is(err, targets.ErrUnknown) {
		t.Errorf("Pick(etcd) = %v, want ErrUnknown", err)
	}
	if _, err := Pick(" , "); err == nil {
		t.Error("Pick of nothing: no error")
	}
}
